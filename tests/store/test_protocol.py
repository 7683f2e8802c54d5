"""The SQLite store implements the `Store` protocol member by member, so callers typed against the protocol can
be handed it (mypy checks the same in `bot.store.open_store`, which returns the SQLite store as a `Store`)."""

from __future__ import annotations

import inspect
import typing
from datetime import datetime
from pathlib import Path

from bot.clock import FakeClock
from bot.models import Follow
from bot.store import SqliteStore, Store, open_store
from bot.store.follows import FollowRepo
from bot.store.protocol import FollowRepository
from tests.factories import make_paper

_DUNDERS_OF_THE_CONTRACT = {"__aenter__", "__aexit__"}


def _members(protocol: type) -> dict[str, typing.Any]:
    return {
        name: member
        for name, member in vars(protocol).items()
        if (not name.startswith("_") or name in _DUNDERS_OF_THE_CONTRACT)
        and (inspect.isfunction(member) or isinstance(member, property))
    }


def _shape(function: typing.Callable[..., object]) -> tuple[object, ...]:
    """Async or not, the parameters (name, kind, default) and the resolved annotations."""
    parameters = [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]
    return inspect.iscoroutinefunction(function), parameters, typing.get_type_hints(function)


def _written(function: typing.Callable[..., object]) -> str:
    return f"{'async ' if inspect.iscoroutinefunction(function) else ''}def {inspect.signature(function)}"


def mismatches(protocol: type, implementation: object) -> list[str]:
    """How `implementation` (a class, or an instance whose attributes hold the repositories) departs from
    `protocol`: missing members, and methods whose parameters, defaults, annotations or async-ness differ."""
    found = []
    cls = implementation if isinstance(implementation, type) else type(implementation)
    for name, member in _members(protocol).items():
        if isinstance(member, property):
            wanted = typing.get_type_hints(member.fget)["return"]
            if not hasattr(implementation, name):
                found.append(f"{name}: missing")
            else:
                found += [f"{name}.{m}" for m in mismatches(wanted, getattr(implementation, name))]
            continue
        mine = getattr(cls, name, None)
        if mine is None:
            found.append(f"{name}: missing")
        elif _shape(mine) != _shape(member):
            found.append(f"{name}: {_written(mine)} is not {_written(member)}")
    return found


def test_the_sqlite_store_has_every_member_of_the_protocol_with_the_same_signature(tmp_path: Path) -> None:
    repositories = [
        typing.get_type_hints(m.fget)["return"] for m in _members(Store).values() if isinstance(m, property)
    ]
    assert len(repositories) == 12 and all(_members(r) for r in repositories)
    assert mismatches(Store, SqliteStore(tmp_path / "never-opened.sqlite3")) == []


def test_the_postgresql_store_has_every_member_of_the_protocol_with_the_same_signature() -> None:
    from bot.store.postgres import PostgresStore

    assert mismatches(Store, PostgresStore("postgresql://127.0.0.1/never-opened")) == []


def test_the_comparison_names_every_departure() -> None:
    class Drifted(FollowRepo):
        async def touch(self, channel: int, at: datetime) -> None: ...

        async def remove(self, guild_id: int, topic_id: int, channel_id: int | None = 0) -> int:
            return 0

        async def digest_channels_due(self, hour: str) -> list[int]:  # type: ignore[override]
            return []

        def for_topics(self, topic_ids: list[int]) -> list[Follow]:  # type: ignore[override]
            return []

    drifted = [m.split(":")[0] for m in mismatches(FollowRepository, Drifted)]
    assert drifted == ["for_topics", "remove", "touch", "digest_channels_due"]
    assert len(mismatches(FollowRepository, object)) == 9
    assert all(m.endswith(": missing") for m in mismatches(FollowRepository, object))


async def test_open_store_opens_the_sqlite_file_it_is_given(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "paperwatch.sqlite3"
    async with await open_store(path, clock) as store:
        assert isinstance(store, SqliteStore)
        await store.papers.upsert([make_paper(1)], seen_at=clock.now())
    async with await open_store(path, clock) as again:
        assert await again.papers.count() == 1
