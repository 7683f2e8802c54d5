"""Steps the commands share: refusing to read a database that is not there, saying arXiv failed, finding a
catalog topic by name, printing a topic's momentum and writing its chart."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

from bot.cli.parser import program_name
from bot.config import Settings, settings_folder, without_credentials
from bot.errors import PaperwatchError, Unreachable
from bot.ingest import CycleReport
from bot.models import TopicRow
from bot.momentum import Momentum
from bot.services import Services


def require_database(settings: Settings) -> None:
    """Commands that only read refuse to create an empty database where the user's one is not."""
    if settings.database_url is None and not settings.database_path.exists():
        raise PaperwatchError(
            f"no database at {settings.database_path}: run `{program_name()} backfill` to create one, or set "
            f"DATABASE_PATH to yours (a relative one is resolved against {settings_folder(settings.env_file)})"
        )


def arxiv_failed(settings: Settings, detail: str, then: str) -> Unreachable:
    host = urlsplit(without_credentials(settings.arxiv_api_url)).netloc or settings.arxiv_api_url
    return Unreachable(
        f"could not read arXiv at {host}: {detail}. Check the network connection and ARXIV_API_URL, then {then}"
    )


def poll_failed(settings: Settings, report: CycleReport, then: str) -> Unreachable:
    kept = f" ({len(report.new)} new papers stored before it and kept)" if report.new else ""
    return arxiv_failed(settings, f"{report.error}{kept}", f"{then}; nothing was lost")


async def catalog_topic(services: Services, name: str) -> TopicRow:
    """A catalog topic by name or slug; the error says where the list is."""
    topic = await services.topics.find(0, name)
    if topic is None:
        raise PaperwatchError(f"no catalog topic named {name!r}; `{program_name()} topics` lists them")
    return topic


def print_momentum(name: str, result: Momentum) -> None:
    print(f"{name}: {result.sentence()}")
    print(
        f"Last {len(result.series)} weeks: {result.sparkline()}  (this week so far: {result.series[-1].count})"
    )
    for week in result.series:
        print(f"  {week.label:<16}{week.count:>6}{'  (so far)' if week.partial else ''}")


async def write_chart(png: Path, name: str, result: Momentum) -> None:
    from bot.charts import weekly_chart  # matplotlib loads only when a chart is asked for

    chart = await asyncio.to_thread(weekly_chart, result.series, name, result.sentence())
    try:
        await asyncio.to_thread(png.write_bytes, chart)
    except OSError as exc:
        raise PaperwatchError(f"could not write the chart to {png}: {exc.strerror or exc}") from None
    print(f"Chart written to {png}")
