"""`demo`: the real bot on a loopback arXiv serving real papers and a loopback Discord, in a temporary
database. It reads no settings, so it works on any install as shipped."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from lxml import etree

from bot.backfill import Progress
from bot.cli.common import print_momentum, write_chart
from bot.cli.parser import program_name
from bot.clock import Clock, SystemClock
from bot.demo.corpus import Entry
from bot.loopback.atom import RawEntry
from bot.render import paper_console

LAB, CHANNEL, MEMBER = "Your lab", "papers", "you"


async def cmd_demo(png: Path, clock: Clock | None) -> int:
    from bot.demo import ANNOUNCED_WITHIN, DEMO_CATEGORIES, DEMO_TOPIC, demo_settings, never_proxy_loopback
    from bot.demo.corpus import days_spanned, load_corpus
    from bot.loopback.arxiv import LoopbackArxiv
    from bot.loopback.discord import ALL_PERMISSIONS, LoopbackDiscord
    from bot.loopback.harness import running_bot

    never_proxy_loopback()
    clock = clock or SystemClock()
    began = clock.monotonic()
    now = clock.now()
    entries = [e for e in load_corpus(now) if set(DEMO_CATEGORIES).intersection(e.paper.categories)]
    held = [e for e in entries if now - e.paper.published <= ANNOUNCED_WITHIN]
    days = days_spanned(entries, now)
    print(
        f"paperwatch demo: a loopback arXiv on 127.0.0.1 serves {len(entries)} real arXiv papers (the answer "
        "to the query 'testing', metadata CC0), their dates moved so the newest is an hour old and each year "
        "of them lasts a week; a loopback Discord on 127.0.0.1 holds a server with a #papers channel, and the "
        "real bot (discord.py) connects to it. Nothing here reaches the internet or touches your settings and "
        "database."
    )
    with tempfile.TemporaryDirectory(prefix="paperwatch-demo-") as folder:
        shown = [served(e) for e in entries if e not in held]
        async with LoopbackArxiv(shown) as arxiv, LoopbackDiscord() as discord:
            guild = discord.add_guild(LAB)
            channel = discord.add_text_channel(guild, CHANNEL)
            you = discord.add_member(guild, MEMBER, permissions=ALL_PERMISSIONS)
            settings = demo_settings(
                Path(folder) / "demo.sqlite3",
                arxiv.url,
                discord_token=discord.token,
                discord_api_base=discord.api_base,
                discord_gateway_url=discord.gateway_url,
            )
            async with running_bot(settings, discord, clock=clock, extra_topics=[DEMO_TOPIC]) as bot:
                use, ctx = bot.services, bot.ctx
                topic = await use.topics.find(guild.id, DEMO_TOPIC.name)
                assert topic is not None  # the catalog's, with the demo's topic joined

                print(f"\n1. Backfill: {days} days of {', '.join(DEMO_CATEGORIES)}, a request per day")
                stored = await ctx.backfill(progress=demo_progress).run(days)
                matched = await use.history.count_matches(topic, now - timedelta(days=days), now)
                print(f"{stored} papers stored; {matched} match the topic {topic.name!r}: {topic.query}")

                print(f"\n2. Momentum of {topic.name}, as /momentum shows it")
                result = await use.momentum.topic(topic)
                print_momentum(topic.name, result)
                await write_chart(png, topic.name, result)

                print(
                    f"\n3. /follow {topic.name}, typed in #{CHANNEL} of the loopback Discord; the bot answers:"
                )
                follow = await discord.invoke(
                    guild, channel, you, "follow", [{"name": "topic", "value": topic.name}]
                )
                answer = await follow.wait_original(lambda m: topic.name in (m.get("content") or ""))
                print(indented(answer.get("content") or ""))

                print("\n4. New papers as cards, as the channel gets them")
                first = await ctx.ingestor().poll_once()
                print(f"First poll: {first.summary()}")
                print("(a fresh install's first poll is history: matched, never posted)")
                arxiv.papers.extend(served(e) for e in held)
                print(f"arXiv announces {len(held)} new papers; the next poll finds them:", flush=True)
                report = await ctx.ingestor().poll_once()
                delivered = await bot.worker.deliver_once()
                messages = discord.messages(channel.id)
                show_cards(messages, entries, [topic.name])
                print(
                    f"{report.summary()}; {delivered.sent} new for {topic.name}, posted by discord.py to "
                    f"#{CHANNEL} ({len(messages)} messages, shown above as cards)"
                )
    prog = program_name()
    print(
        f"\nDone in {clock.monotonic() - began:.1f} s. The chart is in {png}. To run it for real: set "
        f"DISCORD_TOKEN and ARXIV_CONTACT in .env (see .env.example), `{prog} backfill`, then `{prog}`."
    )
    return 0


def served(entry: Entry) -> RawEntry:
    """The entry as the loopback arXiv serves it: exactly as recorded, its dates moved."""
    xml = etree.tostring(entry.element, encoding="unicode")
    return RawEntry(xml, entry.paper.published, entry.paper.categories)


def show_cards(messages: Sequence[dict[str, Any]], entries: Sequence[Entry], topics: Sequence[str]) -> None:
    """Each card the channel received, drawn for a terminal from the paper its embed links to."""
    by_url = {e.paper.abs_url: e.paper for e in entries}
    for message in messages:
        for embed in message.get("embeds") or []:
            paper = by_url.get(embed.get("url") or "")
            if paper is not None:
                print(paper_console(paper, topics=topics, width=100))


def indented(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())


def demo_progress(progress: Progress) -> None:
    """A line every 30 days and the last: the demo's backfill is quick, a line per day would scroll away."""
    if progress.windows_done % 30 == 0 or progress.windows_left == 0:
        print(progress.line(), flush=True)
