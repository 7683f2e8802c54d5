"""No command waits behind another: the real bot against the loopback Discord, with reads held on purpose.

A SQL function, `slow()`, blocks the read connection running it until the test opens a gate: it stands in for
a search over a million papers, without any clock."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import pytest_asyncio

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import LOADING
from bot.loopback.harness import running_paperbot
from bot.store import SqliteStore
from tests.cogs.world import Env, Server, answer, module_loop, store_as_polled
from tests.factories import make_paper, rl_paper
from tests.fakes.checked_discord import FakeDiscord
from tests.peek import store_of

_GATES = itertools.count()
BOUND = 30.0  # generous: an answer that is not held comes in milliseconds


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    async with FakeDiscord() as fake_discord, LoopbackArxiv() as fake_arxiv:
        path = tmp_path_factory.mktemp("concurrency")
        async with running_paperbot(path, fake_discord, fake_arxiv, clock=FakeClock()) as bot:
            yield Env(fake_discord, fake_arxiv, bot)


@pytest.fixture
def server(env: Env) -> Server:
    return env.new_server()


@contextmanager
def gate_released() -> Iterator[threading.Event]:
    gate = threading.Event()
    try:
        yield gate
    finally:
        gate.set()  # never leave a connection's thread blocked


def sqlite_of(env: Env) -> SqliteStore:
    store = store_of(env.bot)
    assert isinstance(store, SqliteStore)
    return store


async def hold_reads(env: Env, gate: threading.Event, count: int) -> list[asyncio.Task[object]]:
    """`count` reads, each holding a read connection of the bot's store until the gate opens."""
    store = sqlite_of(env)
    loop = asyncio.get_running_loop()
    started = asyncio.Semaphore(0)

    def slow() -> int:
        loop.call_soon_threadsafe(started.release)
        gate.wait(BOUND)
        return 1

    # A new name each time: SQLite refuses to redefine a function while a connection runs a statement.
    name = f"slow_{next(_GATES)}"
    for conn in store.db.connections():
        await conn.create_function(name, 0, slow)
    held: list[asyncio.Task[object]] = [
        asyncio.create_task(store.db.fetchall(f"SELECT {name}()")) for _ in range(count)
    ]
    for _ in range(count):
        await asyncio.wait_for(started.acquire(), BOUND)
    return held


@module_loop
async def test_another_members_topics_answers_while_a_slow_read_runs(server: Server) -> None:
    await server.follow("RL Post-Training")
    with gate_released() as gate:
        held = await hold_reads(server.env, gate, 1)
        topics = await server.run("topics")
        response = await asyncio.wait_for(topics.wait_response(), BOUND)
        assert response["type"] == 4 and "RL Post-Training" in str(response["data"])
        assert not any(task.done() for task in held)  # answered while the slow read still ran
        gate.set()
        await asyncio.gather(*held)


@module_loop
async def test_search_defers_before_its_query_runs(server: Server) -> None:
    await store_as_polled(server.env.bot, [make_paper(9100, title="Quokka population census")])
    with gate_released() as gate:
        held = await hold_reads(server.env, gate, sqlite_of(server.env).db.readers)
        search = await server.run("search", query="quokka")
        # Every read connection is busy, so the search cannot have read anything yet: Discord sees the deferral.
        response = await asyncio.wait_for(search.wait_response(), BOUND)
        assert response["type"] == 5
        assert not any(task.done() for task in held)
        gate.set()
        await asyncio.gather(*held)
    message = await answer(search)
    assert not message["flags"] & LOADING and "Quokka" in message["content"]


def embed_fields(message: dict[str, Any]) -> dict[str, str]:
    [embed] = message["embeds"]
    return {f["name"]: f["value"] for f in embed.get("fields", [])}


@module_loop
async def test_status_and_momentum_say_history_is_still_being_matched(server: Server) -> None:
    bot = server.env.bot
    store = sqlite_of(server.env)
    rl = await bot.services.topics.resolve(server.guild.id, "RL Post-Training")
    assert bot.history_task is not None
    await bot.history_task  # the start's own catch-up is done: it would match what the test queues next
    # Papers stored by an earlier release, before the topic existed (so never matched), and queued at start.
    await store.papers.upsert([rl_paper(9200 + n) for n in range(3)], seen_at=bot.ctx.clock.now())
    await store.topics.queue_history([rl.id], bot.ctx.clock.now())
    await answer(
        await server.run("momentum", topic="RL Post-Training")
    )  # caches the day counts: reads only now
    matching = asyncio.create_task(bot.ctx.match_history())  # created outside the transaction below
    async with store.transaction():  # the matcher's first write waits for this: it is mid-history
        progress = None
        while progress is None or not progress.total:
            progress = bot.services.momentum.index.history_progress(rl.id)
            if progress is not None and not progress.total:
                progress.changed.clear()
                await asyncio.wait_for(progress.changed.wait(), BOUND)
            elif progress is None:
                await asyncio.sleep(0)
        status = await server.run("status")
        fields = embed_fields((await asyncio.wait_for(status.wait_response(), BOUND))["data"])
        assert fields["History"].startswith("Matching history: 0%…") and "1 topic" in fields["History"]
        momentum = await answer(await server.run("momentum", topic="RL Post-Training"))
        assert "Matching history: 0%…" in embed_fields(momentum)["Still counting"]
    assert await asyncio.wait_for(matching, BOUND) >= 3
    done = embed_fields((await (await server.run("status")).wait_response())["data"])
    assert "History" not in done
    after = await answer(await server.run("momentum", topic="RL Post-Training"))
    assert "Still counting" not in embed_fields(after)
