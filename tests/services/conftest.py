"""Fixtures of the services' tests: one world per test (tests/services/world.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.clock import FakeClock
from bot.store import Store
from tests.services.world import World, services_world


@pytest.fixture
async def world(store: Store, clock: FakeClock) -> AsyncIterator[World]:
    async with services_world(store, clock) as built:
        yield built
