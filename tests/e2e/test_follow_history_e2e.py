"""/follow of a query with a long history: the answer comes at once and the history is matched in the background,
through the store's queue (so a restart resumes it), its progress edited into the answer and shown by /status and
/momentum. A paper polled meanwhile is posted once: history matches are never posted."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.app import PaperBot
from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import ALL_PERMISSIONS, LOADING
from bot.loopback.harness import running_paperbot
from bot.models import Paper
from bot.topics.index import HISTORY_BATCH, HistoryProgress
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord
from tests.peek import store_of

BOUND = 30.0  # generous: each step here takes milliseconds
BACKGROUND = "matching its history in the background"
EVER = (timedelta(days=-100_000), timedelta(days=1))


def tapirs(clock: FakeClock, count: int, start: int = 30_000) -> list[Paper]:
    return [
        make_paper(
            start + n, title=f"Tapir foraging ecology {n}", published=clock.now() - timedelta(hours=2 + n)
        )
        for n in range(count)
    ]


async def stored_history(bot: PaperBot, papers: list[Paper]) -> None:
    """Papers stored before the topic exists (history: matched later, never posted)."""
    await bot.history_task  # the catalog's own history first: the queue holds only what the test adds
    topics = bot.services.topics
    # The tapirs are all this store holds: a topic may cover them all (a real store holds other papers).
    topics.limits = replace(topics.limits, broad_floor=10 * HISTORY_BATCH)
    for start in range(0, len(papers), 500):
        await bot.ctx.intake.store_papers(papers[start : start + 500], announce=False)


async def matched(bot: PaperBot, topic_id: int, clock: FakeClock) -> int:
    now = clock.now()
    return await store_of(bot).topics.count_matches(topic_id, now + EVER[0], now + EVER[1])


async def next_step(progress: HistoryProgress) -> None:
    progress.changed.clear()
    await asyncio.wait_for(progress.changed.wait(), BOUND)


def field(message: dict[str, Any], name: str) -> str | None:
    fields = {f["name"]: f["value"] for e in message.get("embeds") or [] for f in e.get("fields", [])}
    return fields.get(name)


async def test_follow_of_a_long_history_answers_at_once_then_edits_in_its_progress(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    admin = discord.add_member(guild, "admin", permissions=ALL_PERMISSIONS)
    count = 3 * HISTORY_BATCH + 500  # four batches
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await stored_history(bot, tapirs(clock, count))
        store = store_of(bot)
        follow = await discord.invoke(
            guild,
            channel,
            admin,
            "follow",
            [{"name": "topic", "value": "Tapirs"}, {"name": "query", "value": "ti:tapir"}],
        )
        first = await follow.wait_original(lambda m: not m["flags"] & LOADING)
        async with store.transaction():  # no batch is written meanwhile: the match is still running
            topic = await bot.services.topics.resolve(guild.id, "Tapirs")
            assert await matched(bot, topic.id, clock) < count
            # 0%, or further when a batch was written before the test took the write lock
            assert re.search(
                rf"Created this server's topic \*\*Tapirs\*\*: {BACKGROUND}: \d+%…", first["content"]
            )
            assert "/status shows how far" in first["content"]
            status = await discord.invoke(guild, channel, admin, "status", [])
            history = field(await status.wait_original(lambda m: not m["flags"] & LOADING), "History")
            assert history is not None and history.startswith("Matching history:") and "1 topic" in history
            momentum = await discord.invoke(
                guild, channel, admin, "momentum", [{"name": "topic", "value": "Tapirs"}]
            )
            still = field(await momentum.wait_original(lambda m: not m["flags"] & LOADING), "Still counting")
            assert still is not None and still.startswith("Matching history:")
        final = await follow.wait_original(lambda m: f"{count:,} stored papers match" in m["content"])
        assert (
            "Created this server's topic **Tapirs**" in final["content"]
            and BACKGROUND not in final["content"]
        )
        shares = [
            int(found.group(1))
            for edit in follow.edits
            if (found := re.search(rf"{BACKGROUND}: (\d+)%", edit.get("content") or ""))
        ]
        assert shares == sorted(set(shares)) and all(0 < s < 100 for s in shares)  # each tenth once, in order
        assert await matched(bot, topic.id, clock) == count
        assert await store.topics.history_queue() == []
        done = await discord.invoke(guild, channel, admin, "status", [])
        assert field(await done.wait_original(lambda m: not m["flags"] & LOADING), "History") is None


async def test_a_restart_mid_match_resumes_it_and_a_paper_polled_meanwhile_is_posted_once(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    admin = discord.add_member(guild, "admin", permissions=ALL_PERMISSIONS)
    count = 8 * HISTORY_BATCH + 500  # batches enough that the stop below lands midway
    new = make_paper(39_999, title="Tapir calves in the wild", published=clock.now() - timedelta(minutes=30))
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await stored_history(bot, tapirs(clock, count))
        store = store_of(bot)
        follow = await discord.invoke(
            guild,
            channel,
            admin,
            "follow",
            [{"name": "topic", "value": "Tapirs"}, {"name": "query", "value": "ti:tapir"}],
        )
        await follow.wait_original(lambda m: not m["flags"] & LOADING)
        topic = await bot.services.topics.resolve(guild.id, "Tapirs")
        index = bot.services.topics.index
        progress = index.history_progress(topic.id)
        assert progress is not None
        while progress.checked < HISTORY_BATCH:
            await next_step(progress)
        async with store.transaction():  # the next batch waits to be written...
            await index.stop()  # ...when the bot stops, as its close does (here at a chosen point)
            await bot.ctx.intake.store_papers([new], announce=True)  # a poll meanwhile
        assert (await bot.worker.deliver_once()).sent == 1
        assert HISTORY_BATCH <= await matched(bot, topic.id, clock) < count + 1
        assert await store.topics.history_queue() == [topic.id]

    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as restarted:
        await restarted.history_task  # resumed from the store's queue (it may well be done already)
        assert await matched(restarted, topic.id, clock) == count + 1  # the polled paper once among them
        assert await store_of(restarted).topics.history_queue() == []
        assert restarted.services.topics.index.history_progress(topic.id) is None
        assert (await restarted.worker.deliver_once()).sent == 0  # history matches are never posted
    posted = [m for m in discord.messages(channel.id) if new.title in str(m.get("embeds"))]
    assert len(posted) == 1
