"""Command line: `python -m bot` runs the Discord bot; subcommands poll, backfill and inspect the history."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from datetime import timedelta

from bot.backfill import Progress
from bot.config import Settings, load_settings, require_token
from bot.context import open_context
from bot.errors import PaperwatchError

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
    return parser


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
        match args.command:
            case None | "run":
                return cmd_run(settings)
            case "poll":
                return asyncio.run(cmd_poll(settings, args.once))
            case "backfill":
                return asyncio.run(cmd_backfill(settings, args.days, args.categories))
            case "stats":
                return asyncio.run(cmd_stats(settings, args.weeks))
    except PaperwatchError as exc:
        print(f"paperwatch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("paperwatch: interrupted; progress so far is saved", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
