"""Commands that fetch from arXiv: poll, backfill, and watch (the bot's pipeline with the terminal as the
channel)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.backfill import Progress
from bot.cli.common import arxiv_failed, catalog_topic, poll_failed
from bot.cli.parser import program_name
from bot.clock import Clock
from bot.config import Settings, require_contact
from bot.console import CONSOLE_GUILD, ConsolePoster, console_channel
from bot.context import AppContext, open_context
from bot.errors import SourceError


async def read_announcements(ctx: AppContext) -> str | None:
    """After the API's cycle, the RSS announcement feed's (the backstop of a failed API cycle, except with
    --once, which stops at once to say so); its summary, or None when ARXIV_RSS_URL is off. Its own failure
    stops nothing: the summary says so and the next poll reads it again."""
    cycle = ctx.announcements()
    return (await cycle.run_once()).summary() if cycle is not None else None


async def cmd_poll(settings: Settings, once: bool, clock: Clock | None) -> int:
    require_contact(settings)
    async with open_context(settings, clock) as ctx:
        ingestor = ctx.ingestor()
        while True:
            report = await ingestor.poll_once()
            if once and not report.complete:
                raise poll_failed(settings, report, f"run `{program_name()} poll --once` again")
            announced = await read_announcements(ctx)
            print(report.summary(), flush=True)
            if announced:
                print(announced, flush=True)
            total = await ctx.services.status.papers_stored()
            print(f"{total} papers in {settings.database_shown}", flush=True)
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
    print(f"Backfilling {days} days of {', '.join(cats)} into {settings.database_shown}")
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
        print(f"Done: {stored} new papers; {total} papers in {settings.database_shown}")
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
                print(f"Database: {settings.database_shown}")
                print("New papers will appear below as they are announced (Ctrl+C to stop).", flush=True)
                first = False
            announced = await read_announcements(ctx)  # its new papers come as cards below, like the poll's
            delivered = await worker.deliver_once()
            if announced:
                print(f"[{ctx.clock.now():%H:%M} UTC] {announced}", flush=True)
            print(
                f"[{ctx.clock.now():%H:%M} UTC] {report.summary()}; {delivered.sent} new for {topic.name}",
                flush=True,
            )
            if once:
                return 0
            await ctx.clock.sleep(settings.poll_interval_minutes * 60)
