"""Reading what a running bot keeps to itself, for tests only."""

from __future__ import annotations

from bot.app import PaperBot
from bot.store import Store


def store_of(bot: PaperBot) -> Store:
    """The running bot's own store, which it hands to no cog: for a test that sets up a state no command can
    make (more topics than a server may create, a catalog a later release brings) or reads one none shows."""
    return bot.ctx._store
