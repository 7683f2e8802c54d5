"""The PostgreSQL store (asyncpg): the same `bot.store.Store` protocol as the SQLite one, chosen by DATABASE_URL."""

from bot.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
