"""Command line: `python -m bot` runs the Discord bot; subcommands poll, backfill and inspect the history."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.backfill import Progress
from bot.config import Settings, load_settings, require_token
from bot.console import CONSOLE_GUILD, ConsolePoster, console_channel
from bot.context import open_context
from bot.delivery import DeliveryWorker
from bot.errors import PaperwatchError
from bot.models import Paper
from bot.momentum import week_start
from bot.topics.query import parse_query

log = logging.getLogger("bot")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bot",
        description="paperwatch: follow arXiv topics in Discord. Without a command, runs the bot.",
        epilog="Settings come from the environment or .env; see .env.example for every one.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("run", help="run the Discord bot (the default; needs DISCORD_TOKEN)")

    poll = sub.add_parser("poll", help="fetch new papers of the watched categories from arXiv and store them")
    poll.add_argument("--once", action="store_true", help="run one cycle, print what it stored, and exit")

    backfill = sub.add_parser("backfill", help="store the history of the watched categories (resumable)")
    backfill.add_argument(
        "--days", type=int, default=None, help="how many days back to fill (default: BACKFILL_DAYS, 56)"
    )
    backfill.add_argument(
        "--categories", nargs="+", metavar="CAT", help="arXiv categories to fill (default: ARXIV_CATEGORIES)"
    )

    stats = sub.add_parser("stats", help="papers stored per category per week")
    stats.add_argument("--weeks", type=int, default=8, help="how many weeks back to show (default 8)")

    momentum = sub.add_parser("momentum", help="how a topic is moving: the sentence, a sparkline, a chart")
    momentum.add_argument("topic", help='a catalog topic\'s name or slug, e.g. "RL Post-Training"')
    momentum.add_argument("--weeks", type=int, default=4, help="window length in weeks (1-52, default 4)")
    momentum.add_argument(
        "--png", type=Path, metavar="FILE", help="also write the weekly chart to this PNG file"
    )

    sub.add_parser("topics", help="the catalog's topics with their papers in the last four weeks")

    watch = sub.add_parser(
        "watch", help="print a topic's new papers as cards in this terminal, as they arrive"
    )
    watch.add_argument("topic", help='a catalog topic\'s name or slug, e.g. "RL Post-Training"')
    watch.add_argument("--once", action="store_true", help="one poll, print what arrived, and exit")

    match = sub.add_parser("match", help="what an arXiv-syntax query matches in the stored history")
    match.add_argument("--query", required=True, help="e.g. 'ti:\"speculative decoding\" OR abs:medusa'")
    match.add_argument("--since", type=_date, help="only papers submitted on or after this day (YYYY-MM-DD)")
    match.add_argument(
        "--limit", type=int, default=10, help="how many of the newest matches to list (default 10)"
    )
    return parser


def _date(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day like 2026-06-01") from None


async def cmd_poll(settings: Settings, once: bool) -> int:
    async with open_context(settings) as ctx:
        ingestor = ctx.ingestor()
        while True:
            report = await ingestor.poll_once()
            print(report.summary(), flush=True)
            total = await ctx.store.papers.count()
            print(f"{total} papers in {settings.database_path}", flush=True)
            if once:
                return 0 if report.complete else 1
            await ctx.clock.sleep(settings.poll_interval_minutes * 60)


async def cmd_backfill(settings: Settings, days: int | None, categories: Sequence[str] | None) -> int:
    days = days if days is not None else settings.backfill_days
    if days < 1:
        raise PaperwatchError("--days must be at least 1")
    cats = tuple(categories) if categories else settings.arxiv_categories
    print(f"Backfilling {days} days of {', '.join(cats)} (resumable: run the same command again to continue)")

    def show(progress: Progress) -> None:
        print(progress.line(), flush=True)

    async with open_context(settings) as ctx:
        stored = await ctx.backfill(cats, progress=show).run(days)
        print(
            f"Done: {stored} new papers; {await ctx.store.papers.count()} papers in {settings.database_path}"
        )
    return 0


async def cmd_stats(settings: Settings, weeks: int) -> int:
    async with open_context(settings) as ctx:
        since = ctx.clock.now() - timedelta(weeks=weeks)
        rows = await ctx.store.papers.weekly_category_counts(since)
        total = await ctx.store.papers.count()
    categories = sorted({c for _, c, _ in rows})
    week_list = sorted({w for w, _, _ in rows})
    counts = {(w, c): n for w, c, n in rows}
    print(
        f"{total} papers stored in {settings.database_path}; per week of v1 submission (weeks start Monday, UTC)"
    )
    if not rows:
        print("No papers in that range yet: run `python -m bot backfill` or `python -m bot poll --once`.")
        return 0
    width = max(8, *(len(c) for c in categories))
    print("week".ljust(12) + "".join(c.rjust(width + 2) for c in categories))
    for week in week_list:
        print(week.ljust(12) + "".join(str(counts.get((week, c), 0)).rjust(width + 2) for c in categories))
    return 0


async def cmd_momentum(settings: Settings, name: str, weeks: int, png: Path | None) -> int:
    async with open_context(settings) as ctx:
        topic = await ctx.store.topics.find(0, name)
        if topic is None:
            raise PaperwatchError(f"no catalog topic named {name!r}; `python -m bot topics` lists them")
        result = await ctx.momentum(topic, weeks)
    print(f"{topic.name}: {result.sentence()}")
    print(
        f"Last {len(result.series)} weeks: {result.sparkline()}  (this week so far: {result.series[-1].count})"
    )
    for week in result.series:
        print(f"  {week.label:<16}{week.count:>6}{'  (so far)' if week.partial else ''}")
    if png is not None:
        from bot.charts import weekly_chart  # matplotlib loads only when a chart is asked for

        chart = await asyncio.to_thread(weekly_chart, result.series, topic.name, result.sentence())
        await asyncio.to_thread(png.write_bytes, chart)
        print(f"Chart written to {png}")
    return 0


async def cmd_topics(settings: Settings) -> int:
    async with open_context(settings) as ctx:
        rows = await ctx.store.topics.visible_to(0)
        print(f"{len(rows)} catalog topics (papers submitted in the last four weeks)")
        for row in rows:
            result = await ctx.momentum(row)
            print(f"{result.current:>6}  {result.sparkline()}  {row.name}  [{row.slug}]")
    return 0


async def cmd_match(settings: Settings, text: str, since: datetime | None, limit: int) -> int:
    query = parse_query(text)
    async with open_context(settings) as ctx:
        found: list[Paper] = []
        categories = await ctx.topics.stored_categories(query)
        if categories is not None:
            async for batch in ctx.store.topics.candidates(
                query.to_fts5(), categories=categories, since=since
            ):
                found += [p for p in batch if query.matches(p)]
    found.sort(key=lambda p: p.published, reverse=True)
    weeks = Counter(week_start(p.published).date() for p in found)
    scope = f" since {since:%Y-%m-%d}" if since else ""
    verb = "paper matches" if len(found) == 1 else "papers match"
    print(f"{len(found)} stored {verb} {query.text!r}{scope}")
    for week, count in sorted(weeks.items())[-12:]:
        print(f"  Week of {week:%b} {week.day:<8}{count:>6}")
    for paper in found[:limit]:
        print(f"{paper.published:%Y-%m-%d}  {paper.arxiv_id:<12} {paper.title[:100]}")
    return 0


async def cmd_watch(settings: Settings, name: str, once: bool) -> int:
    """The bot's own pipeline (poll, store, match, outbox, worker) with the terminal as the channel."""
    async with open_context(settings) as ctx:
        topic = await ctx.store.topics.find(CONSOLE_GUILD, name)
        if topic is None:
            raise PaperwatchError(f"no catalog topic named {name!r}; `python -m bot topics` lists them")
        await ctx.store.follows.upsert(
            guild_id=CONSOLE_GUILD,
            channel_id=console_channel(topic.id),
            topic_id=topic.id,
            mode="each",
            digest_hour=0,
            created_by=None,
            at=ctx.clock.now(),
        )
        poster = ConsolePoster()
        worker = DeliveryWorker(ctx.store, poster, ctx.clock, per_channel=50, console=True)
        await worker.recover_in_flight()
        first = True
        while True:
            report = await ctx.ingestor().poll_once()
            if first:  # after the first poll, so that even a fresh database has something to show
                print(f"Watching {topic.name}: {(await ctx.momentum(topic)).sentence()}")
                for paper in reversed(await ctx.store.topics.latest_papers(topic.id, 3)):
                    await poster.post_card(0, paper, [topic.name], "")
                print("New papers will appear below as they are announced (Ctrl+C to stop).", flush=True)
                first = False
            delivered = await worker.deliver_once()
            print(
                f"[{ctx.clock.now():%H:%M} UTC] {report.summary()}; {delivered.sent} new for {topic.name}",
                flush=True,
            )
            if once:
                return 0 if report.complete else 1
            await ctx.clock.sleep(settings.poll_interval_minutes * 60)


def cmd_run(settings: Settings) -> int:
    token = require_token(settings)
    from bot.app import run_bot  # imported late: the CLI's other commands need no Discord

    return run_bot(settings, token)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
        logging.basicConfig(
            level=settings.log_level,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
        for chatty in ("apscheduler", "httpx"):  # a line per job run or per request is noise
            logging.getLogger(chatty).setLevel(max(logging.WARNING, logging.getLogger().level))
        match args.command:
            case None | "run":
                return cmd_run(settings)
            case "poll":
                return asyncio.run(cmd_poll(settings, args.once))
            case "backfill":
                return asyncio.run(cmd_backfill(settings, args.days, args.categories))
            case "stats":
                return asyncio.run(cmd_stats(settings, args.weeks))
            case "momentum":
                return asyncio.run(cmd_momentum(settings, args.topic, args.weeks, args.png))
            case "topics":
                return asyncio.run(cmd_topics(settings))
            case "watch":
                return asyncio.run(cmd_watch(settings, args.topic, args.once))
            case "match":
                return asyncio.run(cmd_match(settings, args.query, args.since, args.limit))
    except PaperwatchError as exc:
        print(f"paperwatch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("paperwatch: interrupted; progress so far is saved", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
