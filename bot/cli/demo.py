"""`demo`: the real pipeline on a loopback arXiv serving real papers, in a temporary database. It reads no
settings, so it works on any install as shipped."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

from bot.backfill import Progress
from bot.cli.common import print_momentum, write_chart
from bot.cli.parser import program_name
from bot.clock import Clock, SystemClock
from bot.console import CONSOLE_GUILD, ConsolePoster, console_channel
from bot.context import open_context


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
