"""The store's tests run against both back ends: SQLite (a file in a temporary folder) and PostgreSQL (a fresh
database of the session's throwaway cluster, tests/store/postgres_cluster.py). A test that reads SQLite's own
tables is marked `sqlite_only`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.store import SqliteStore, Store
from tests.store.postgres_cluster import Cluster, PostgresMissing, start_cluster

BACK_ENDS = ("sqlite", "postgres")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: the test reads SQLite's own tables (store.db)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store" in metafunc.fixturenames:
        sqlite_only = metafunc.definition.get_closest_marker("sqlite_only") is not None
        metafunc.parametrize("store", ["sqlite"] if sqlite_only else BACK_ENDS, indirect=True)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """One PostgreSQL cluster for the whole session; without PostgreSQL installed, the tests that need it fail
    saying how to install it."""
    try:
        cluster = start_cluster()
    except PostgresMissing as missing:
        pytest.fail(str(missing), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> str:
    """A fresh, empty database of the session's cluster."""
    return postgres_cluster.new_database()


@pytest.fixture
async def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Store]:
    opened: Store
    if request.param == "sqlite":
        opened = await SqliteStore.open(tmp_path / "paperwatch.sqlite3", clock)
    else:
        from bot.store.postgres import PostgresStore

        opened = await PostgresStore.open(request.getfixturevalue("postgres_url"), clock)
    try:
        yield opened
    finally:
        await opened.close()
