"""No command waits behind another: the real bot against the loopback Discord, with reads held on purpose.

A SQL function, `slow()`, blocks the read connection running it until the test opens a gate: it stands in for
a search over a million papers, without any clock."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import pytest
import pytest_asyncio

from bot.clock import FakeClock
from bot.store import SqliteStore
from tests.cogs.world import Env, Server, answer, module_loop, store_as_polled
from tests.factories import make_paper
from tests.fakes.arxiv_server import FakeArxiv
from tests.fakes.discord_server import LOADING, FakeDiscord
from tests.harness import running_paperbot, store_of

BOUND = 30.0  # generous: an answer that is not held comes in milliseconds


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    async with FakeDiscord() as fake_discord, FakeArxiv() as fake_arxiv:
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

    for conn in store.db.connections():
        await conn.create_function("slow", 0, slow)
    held: list[asyncio.Task[object]] = [
        asyncio.create_task(store.db.fetchall("SELECT slow()")) for _ in range(count)
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
