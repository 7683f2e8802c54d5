"""The store's back ends for tests: SQLite (a file in a temporary folder) and PostgreSQL (a fresh database of the
session's throwaway cluster, tests/store/postgres_cluster.py). A pytest plugin (tests/conftest.py loads it).

Which tests run on both: every test of tests/store that takes `store` (unless marked `sqlite_only`: it reads
SQLite's own tables), any other test marked `both_back_ends` (it goes through the `Store` protocol only), and
every test that takes `back_end` (the end-to-end tests: the whole bot, its settings pointing at one back end)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.store import SqliteStore, Store
from tests.store.postgres_cluster import Cluster, PostgresMissing, start_cluster

BACK_ENDS = ("sqlite", "postgres")
_STORE_TESTS = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: the test reads SQLite's own tables (store.db)")
    config.addinivalue_line("markers", "both_back_ends: the test's `store` is each back end in turn")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    definition = metafunc.definition
    if "back_end" in metafunc.fixturenames:
        sqlite_only = definition.get_closest_marker("sqlite_only") is not None
        metafunc.parametrize("back_end", ("sqlite",) if sqlite_only else BACK_ENDS, indirect=True)
    if "store" not in metafunc.fixturenames:
        return
    if definition.get_closest_marker("sqlite_only") is not None:
        back_ends: tuple[str, ...] = ("sqlite",)
    elif definition.get_closest_marker("both_back_ends") is not None or definition.path.is_relative_to(
        _STORE_TESTS
    ):
        back_ends = BACK_ENDS
    else:
        return  # the SQLite store, unparametrized
    metafunc.parametrize("store", back_ends, indirect=True)


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


@pytest.fixture(scope="session")
def shared_postgres_database(postgres_cluster: Cluster) -> str:
    """One database of the session's cluster that tests running the whole bot take turns in (`back_end`)."""
    return postgres_cluster.new_database().rsplit("/", 1)[1]


@pytest.fixture
def back_end(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The store the bot's settings choose for this test: DATABASE_URL names the session's shared PostgreSQL
    database, emptied first, or is unset (the SQLite file under the test's folder) whatever the developer's
    environment says."""
    name: str = getattr(request, "param", "sqlite")
    if name == "postgres":
        cluster: Cluster = request.getfixturevalue("postgres_cluster")
        monkeypatch.setenv(
            "DATABASE_URL", cluster.emptied(request.getfixturevalue("shared_postgres_database"))
        )
    else:
        monkeypatch.delenv("DATABASE_URL", raising=False)
    return name


async def open_back_end(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Store:
    """The store the test asked for (`request.param`; SQLite when unparametrized), opened and migrated."""
    if getattr(request, "param", "sqlite") == "sqlite":
        return await SqliteStore.open(tmp_path / "paperwatch.sqlite3", clock)
    from bot.store.postgres import PostgresStore

    return await PostgresStore.open(request.getfixturevalue("postgres_url"), clock)
