"""The delivery outbox on PostgreSQL: the SQLite store's repository (bot/store/deliveries.py), with PostgreSQL's
names for a string aggregate and a two-argument maximum, its headline, and lease claims that skip the lease rows
other workers are claiming at that moment."""

from __future__ import annotations

from typing import ClassVar

from bot.models import PendingDelivery
from bot.store.deliveries import DeliveryRepo as SharedDeliveryRepo
from bot.store.postgres.papers import HEADLINE
from bot.store.postgres.topics import with_card_topics


class DeliveryRepo(SharedDeliveryRepo):
    HEADLINE: ClassVar[str] = HEADLINE
    TOPIC_NAMES: ClassVar[str] = (
        "(SELECT string_agg(t.name, chr(31) ORDER BY t.name) FROM delivery_topics dt"
        " JOIN topics t ON t.id = dt.topic_id WHERE dt.delivery_id = d.id)"
    )
    GREATEST: ClassVar[str] = "GREATEST"
    LOCK: ClassVar[str] = " FOR UPDATE OF l SKIP LOCKED"

    async def card_topics(self, items: list[PendingDelivery]) -> list[PendingDelivery]:
        return await with_card_topics(self.db, items)  # type: ignore[arg-type]
