"""The learned scorer's model in the database (migration 0013 / PostgreSQL 0003), on both back ends."""

from __future__ import annotations

from datetime import timedelta

from bot.clock import FakeClock
from bot.store import Store


async def test_a_model_is_stored_read_back_and_replaced_whole(store: Store, clock: FakeClock) -> None:
    assert await store.scorer_models.get() is None
    blob = bytes(range(256)) * 1000  # any bytes, NUL included
    await store.scorer_models.put(blob, format_version=1, at=clock.now())
    stored = await store.scorer_models.get()
    assert stored is not None
    assert (stored.format_version, stored.model, stored.trained_at) == (1, blob, clock.now())

    later = clock.now() + timedelta(days=1)
    await store.scorer_models.put(b"newer", format_version=2, at=later)
    stored = await store.scorer_models.get()
    assert stored is not None and (stored.format_version, stored.model, stored.trained_at) == (
        2,
        b"newer",
        later,
    )
    assert await store.scorer_models.get("another") is None  # models are kept by name


async def test_a_model_written_in_a_rolled_back_transaction_is_not_kept(
    store: Store, clock: FakeClock
) -> None:
    await store.scorer_models.put(b"old", format_version=1, at=clock.now())
    try:
        async with store.transaction():
            await store.scorer_models.put(b"new", format_version=1, at=clock.now())
            raise RuntimeError("the training's other writes failed")
    except RuntimeError:
        pass
    stored = await store.scorer_models.get()
    assert stored is not None and stored.model == b"old"
