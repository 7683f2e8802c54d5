"""Command line: `python -m bot` runs the Discord bot; subcommands poll, backfill and inspect the history.

Every failure ends in one line on stderr and an exit code scripts can rely on (EXIT_CODES); never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

from bot.backfill import Progress
from bot.clock import Clock, SystemClock
from bot.config import (
    MAX_HISTORY_DAYS,
    MAX_MATCH_LIMIT,
    MAX_MOMENTUM_WEEKS,
    MAX_STATS_WEEKS,
    Settings,
    check_categories,
    load_settings,
    require_contact,
    require_token,
    settings_folder,
    without_credentials,
)
from bot.console import CONSOLE_GUILD, ConsolePoster, console_channel
from bot.context import open_context
from bot.errors import PaperwatchError, SourceError, Unreachable
from bot.ingest import CycleReport
from bot.momentum import Momentum, week_start
from bot.services import Services
from bot.services.topics import check_query
from bot.store import TopicRow

EXIT_BAD_INPUT = 2
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a reader that stops early (`| head`) gets from any Unix tool
EXIT_CODES = """Exit codes:
  0    done
  1    an unexpected error
  2    bad input or settings (the message says which)
  3    arXiv or Discord could not be reached (nothing is lost: run it again)
  130  interrupted"""


def program_name() -> str:
    """How the user called us, for help and hints: the `paperwatch` console script or `python -m bot`."""
    return "paperwatch" if Path(sys.argv[0]).stem == "paperwatch" else "python -m bot"


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """A mistyped command gets one line (argparse prints the whole usage first) and the bad-input code."""
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def whole_number(low: int, high: int, meaning: str = "") -> Callable[[str], int]:
    """An argparse type for an integer in [low, high]; `meaning` says where the bound comes from."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {low} to {high}{meaning}, not {value}")
        return value

    return parse


def _category(text: str) -> str:
    try:
        return check_categories([text])[0]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _date(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day like 2026-06-01") from None


def build_parser() -> argparse.ArgumentParser:
    prog = program_name()
    parser = Parser(
        prog=prog,
        description="paperwatch: follow arXiv topics in Discord. Without a command, runs the bot.",
        epilog=(
            f"Try `{prog} demo` first: no token, no internet.\n\n"
            "Settings come from the environment, then from one .env file: the one\n"
            "PAPERWATCH_ENV_FILE names, else ./.env. See .env.example for every one.\n\n" + EXIT_CODES
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("run", help="run the Discord bot (the default; needs DISCORD_TOKEN)")

    poll = sub.add_parser("poll", help="fetch new papers of the watched categories from arXiv and store them")
    poll.add_argument("--once", action="store_true", help="run one cycle, print what it stored, and exit")

    backfill = sub.add_parser("backfill", help="store the history of the watched categories (resumable)")
    backfill.add_argument(
        "--days",
        type=whole_number(1, MAX_HISTORY_DAYS, ", the cap BACKFILL_DAYS has too"),
        default=None,
        help=f"how many days back to fill, 1-{MAX_HISTORY_DAYS} (default: BACKFILL_DAYS, 56)",
    )
    backfill.add_argument(
        "--categories",
        nargs="+",
        type=_category,
        metavar="CAT",
        help="arXiv categories to fill (default: ARXIV_CATEGORIES)",
    )

    stats = sub.add_parser("stats", help="papers stored per category per week")
    stats.add_argument(
        "--weeks",
        type=whole_number(1, MAX_STATS_WEEKS),
        default=8,
        help=f"how many weeks back to show (1-{MAX_STATS_WEEKS}, default 8)",
    )

    momentum = sub.add_parser("momentum", help="how a topic is moving: the sentence, a sparkline, a chart")
    momentum.add_argument("topic", help='a catalog topic\'s name or slug, e.g. "RL Post-Training"')
    momentum.add_argument(
        "--weeks",
        type=whole_number(1, MAX_MOMENTUM_WEEKS),
        default=4,
        help=f"window length in weeks (1-{MAX_MOMENTUM_WEEKS}, default 4)",
    )
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
        "--limit",
        type=whole_number(0, MAX_MATCH_LIMIT),
        default=10,
        help=f"how many of the newest matches to list (0-{MAX_MATCH_LIMIT}, default 10)",
    )

    demo = sub.add_parser(
        "demo",
        help="see paperwatch work in under a minute: a loopback arXiv with real papers, this terminal as the "
        "channel (no token, no internet, your settings and database untouched)",
    )
    demo.add_argument(
        "--png",
        type=Path,
        metavar="FILE",
        default=Path("paperwatch-demo.png"),
        help="where to write the momentum chart (default: paperwatch-demo.png here)",
    )
    return parser


def require_database(settings: Settings) -> None:
    """Commands that only read refuse to create an empty database where the user's one is not."""
    if not settings.database_path.exists():
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


async def cmd_poll(settings: Settings, once: bool, clock: Clock | None) -> int:
    require_contact(settings)
    async with open_context(settings, clock) as ctx:
        ingestor = ctx.ingestor()
        while True:
            report = await ingestor.poll_once()
            if once and not report.complete:
                raise poll_failed(settings, report, f"run `{program_name()} poll --once` again")
            print(report.summary(), flush=True)
            total = await ctx.services.status.papers_stored()
            print(f"{total} papers in {settings.database_path}", flush=True)
            if once:
                return 0
            minutes = settings.poll_interval_minutes
            print(f"Next poll in {minutes} min (Ctrl+C to stop).", flush=True)
            await ctx.clock.sleep(minutes * 60)


async def cmd_backfill(
    settings: Settings, days: int | None, categories: Sequence[str] | None, clock: Clock | None
) -> int:
    days = days if days is not None else settings.backfill_days
    cats = tuple(categories) if categories else settings.arxiv_categories
    require_contact(settings)
    print(f"Backfilling {days} days of {', '.join(cats)} into {settings.database_path}")
    print("Resumable: run the same command again to continue where it stopped.", flush=True)

    def show(progress: Progress) -> None:
        print(progress.line(), flush=True)

    async with open_context(settings, clock) as ctx:
        try:
            stored = await ctx.backfill(cats, progress=show).run(days)
        except SourceError as exc:
            again = (
                f"run `{program_name()} backfill` again with the same options: it resumes where it stopped"
            )
            raise arxiv_failed(settings, f"{exc} (every day stored so far is kept)", again) from None
        total = await ctx.services.status.papers_stored()
        print(f"Done: {stored} new papers; {total} papers in {settings.database_path}")
    return 0


async def cmd_watch(settings: Settings, name: str, once: bool, clock: Clock | None) -> int:
    """The bot's own pipeline (poll, store, match, outbox, worker) with the terminal as the channel."""
    require_contact(settings)
    async with open_context(settings, clock) as ctx:
        use = ctx.services
        topic = await catalog_topic(use, name)
        await use.follows.follow_topic(CONSOLE_GUILD, console_channel(topic.id), topic, digest_hour=0)
        poster = ConsolePoster()
        worker = ctx.delivery_worker(poster, per_channel=50, console=True)
        await worker.recover_in_flight()
        first = True
        while True:
            report = await ctx.ingestor().poll_once()
            if once and not report.complete:
                raise poll_failed(settings, report, f"run `{program_name()} watch` again")
            if first:  # after the first poll, so that even a fresh database has something to show
                print(f"Watching {topic.name}: {(await use.momentum.topic(topic)).sentence()}")
                for paper in reversed(await use.history.latest(topic, 3)):
                    await poster.post_card(0, paper, [topic.name], "")
                print(f"Database: {settings.database_path}")
                print("New papers will appear below as they are announced (Ctrl+C to stop).", flush=True)
                first = False
            delivered = await worker.deliver_once()
            print(
                f"[{ctx.clock.now():%H:%M} UTC] {report.summary()}; {delivered.sent} new for {topic.name}",
                flush=True,
            )
            if once:
                return 0
            await ctx.clock.sleep(settings.poll_interval_minutes * 60)


async def cmd_stats(settings: Settings, weeks: int, clock: Clock | None) -> int:
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        rows = await ctx.services.status.weekly_category_counts(weeks)
        total = await ctx.services.status.papers_stored()
    categories = sorted({c for _, c, _ in rows})
    week_list = sorted({w for w, _, _ in rows})
    counts = {(w, c): n for w, c, n in rows}
    print(
        f"{total} papers stored in {settings.database_path}; per week of v1 submission (weeks start Monday, UTC)"
    )
    if not rows:
        prog = program_name()
        print(f"No papers in that range yet: run `{prog} backfill` or `{prog} poll --once`.")
        return 0
    width = max(8, *(len(c) for c in categories))
    print("week".ljust(12) + "".join(c.rjust(width + 2) for c in categories))
    for week in week_list:
        print(week.ljust(12) + "".join(str(counts.get((week, c), 0)).rjust(width + 2) for c in categories))
    return 0


async def cmd_momentum(
    settings: Settings, name: str, weeks: int, png: Path | None, clock: Clock | None
) -> int:
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        topic = await catalog_topic(ctx.services, name)
        result = await ctx.services.momentum.topic(topic, weeks)
    print_momentum(topic.name, result)
    if png is not None:
        await write_chart(png, topic.name, result)
    print(f"Database: {settings.database_path}")
    return 0


async def cmd_topics(settings: Settings, clock: Clock | None) -> int:
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        rows = await ctx.services.topics.visible_to(0)
        print(f"{len(rows)} catalog topics (papers submitted in the last four weeks)")
        for row, result in zip(rows, await ctx.services.momentum.topics(rows), strict=True):
            print(f"{result.current:>6}  {result.sparkline()}  {row.name}  [{row.slug}]")
    print(f"Database: {settings.database_path}")
    return 0


async def cmd_match(
    settings: Settings, text: str, since: datetime | None, limit: int, clock: Clock | None
) -> int:
    query = check_query(text)
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        found = await ctx.services.history.matches(query, since=since)
    weeks = Counter(week_start(p.published).date() for p in found)
    scope = f" since {since:%Y-%m-%d}" if since else ""
    verb = "paper matches" if len(found) == 1 else "papers match"
    print(f"{len(found)} stored {verb} {query.text!r}{scope}")
    for week, count in sorted(weeks.items())[-12:]:
        print(f"  Week of {week:%b} {week.day:<8}{count:>6}")
    for paper in found[:limit]:
        print(f"{paper.published:%Y-%m-%d}  {paper.arxiv_id:<12} {paper.title[:100]}")
    print(f"Database: {settings.database_path}")
    return 0


async def cmd_demo(png: Path, clock: Clock | None) -> int:
    from bot.demo import ANNOUNCED_WITHIN, DEMO_CATEGORIES, DEMO_TOPIC, demo_settings, never_proxy_loopback
    from bot.demo.corpus import days_spanned, load_corpus
    from bot.demo.server import LoopbackArxiv

    never_proxy_loopback()
    clock = clock or SystemClock()
    began = clock.monotonic()
    now = clock.now()
    entries = [e for e in load_corpus(now) if set(DEMO_CATEGORIES).intersection(e.paper.categories)]
    held = [e.paper.arxiv_id for e in entries if now - e.paper.published <= ANNOUNCED_WITHIN]
    days = days_spanned(entries, now)
    print(
        f"paperwatch demo: a loopback arXiv on 127.0.0.1 serves {len(entries)} real arXiv papers (the answer "
        "to the query 'testing', metadata CC0), their dates moved so the newest is an hour old and each year "
        "of them lasts a week. Nothing here reaches the internet or touches your settings and database."
    )
    with tempfile.TemporaryDirectory(prefix="paperwatch-demo-") as folder:
        async with LoopbackArxiv(entries, held=held) as arxiv:
            settings = demo_settings(Path(folder) / "demo.sqlite3", arxiv.url)
            async with open_context(settings, clock, extra_topics=[DEMO_TOPIC]) as ctx:
                use = ctx.services
                topic = await use.topics.find(CONSOLE_GUILD, DEMO_TOPIC.name)
                assert topic is not None  # just saved
                await use.follows.follow_topic(CONSOLE_GUILD, console_channel(topic.id), topic, digest_hour=0)

                print(f"\n1. Backfill: {days} days of {', '.join(DEMO_CATEGORIES)}, a request per day")
                stored = await ctx.backfill(progress=demo_progress).run(days)
                matched = await use.history.count_matches(topic, now - timedelta(days=days), now)
                print(f"{stored} papers stored; {matched} match the topic {topic.name!r}: {topic.query}")

                print(f"\n2. Momentum of {topic.name}, as /momentum shows it")
                result = await use.momentum.topic(topic)
                print_momentum(topic.name, result)
                await write_chart(png, topic.name, result)

                print("\n3. New papers as cards, as a channel following the topic gets them")
                first = await ctx.ingestor().poll_once()
                print(f"First poll: {first.summary()}")
                print("(a fresh install's first poll is history: matched, never posted)")
                announced = arxiv.announce()
                print(f"arXiv announces {len(announced)} new papers; the next poll finds them:", flush=True)
                report = await ctx.ingestor().poll_once()
                worker = ctx.delivery_worker(ConsolePoster(), console=True)
                delivered = await worker.deliver_once()
                print(f"{report.summary()}; {delivered.sent} new for {topic.name}, shown above as cards")
    prog = program_name()
    print(
        f"\nDone in {clock.monotonic() - began:.1f} s. The chart is in {png}. To run it for real: set "
        f"DISCORD_TOKEN and ARXIV_CONTACT in .env (see .env.example), `{prog} backfill`, then `{prog}`."
    )
    return 0


def demo_progress(progress: Progress) -> None:
    """A line every 30 days and the last: the demo's backfill is quick, a line per day would scroll away."""
    if progress.windows_done % 30 == 0 or progress.windows_left == 0:
        print(progress.line(), flush=True)


# Loggers that speak per request, per job run or per SQL statement (aiosqlite logs each statement with its
# parameters at DEBUG): noise at best, server and member ids in the log at worst.
QUIET_LOGGERS = ("apscheduler", "httpx", "aiosqlite")


def cmd_run(settings: Settings) -> int:
    token = require_token(settings)
    from bot.app import run_bot  # imported late: the CLI's other commands need no Discord

    return run_bot(settings, token)


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))


def dispatch(args: argparse.Namespace, clock: Clock | None) -> int:
    if args.command == "demo":  # the demo reads no settings: it must work on any install, as shipped
        configure_logging("WARNING")
        return asyncio.run(cmd_demo(args.png, clock))
    settings = load_settings()
    configure_logging(settings.log_level)
    match args.command:
        case None | "run":
            return cmd_run(settings)
        case "poll":
            return asyncio.run(cmd_poll(settings, args.once, clock))
        case "backfill":
            return asyncio.run(cmd_backfill(settings, args.days, args.categories, clock))
        case "stats":
            return asyncio.run(cmd_stats(settings, args.weeks, clock))
        case "momentum":
            return asyncio.run(cmd_momentum(settings, args.topic, args.weeks, args.png, clock))
        case "topics":
            return asyncio.run(cmd_topics(settings, clock))
        case "watch":
            return asyncio.run(cmd_watch(settings, args.topic, args.once, clock))
        case "match":
            return asyncio.run(cmd_match(settings, args.query, args.since, args.limit, clock))
    raise AssertionError(f"unhandled command {args.command!r}")


def main(argv: Sequence[str] | None = None, *, clock: Clock | None = None) -> int:
    """Run one command; `clock` is injected by tests (time passes without sleeping)."""
    args = build_parser().parse_args(argv)
    try:
        code = dispatch(args, clock)
        sys.stdout.flush()  # a reader that went away (`| head`) shows here, inside the handler below
        return code
    except Unreachable as exc:
        print(f"paperwatch: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except PaperwatchError as exc:
        print(f"paperwatch: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("paperwatch: interrupted; progress so far is saved", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null so that flush cannot fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
