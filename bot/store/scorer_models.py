"""The learned scorer's trained model, as one blob per model name (bot/topics/scorer_store.py writes and reads
the blob; the store keeps it). Written in SQL both engines run: SQLite's BLOB and PostgreSQL's BYTEA both take
and give bytes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.store.papers import from_ts, to_ts
from bot.store.sql import SqlDatabase

DEFAULT_MODEL = "default"


@dataclass(frozen=True)
class StoredModel:
    format_version: int  # the blob's format (scorer_store.FORMAT when written)
    model: bytes
    trained_at: datetime


class ScorerModelRepository(Protocol):
    async def get(self, name: str = DEFAULT_MODEL) -> StoredModel | None:
        """The model stored under that name; None when there is none."""

    async def trained_at(self, name: str = DEFAULT_MODEL) -> datetime | None:
        """When the model stored under that name was trained (its blob not read); None when there is none."""

    async def put(self, blob: bytes, *, format_version: int, at: datetime, name: str = DEFAULT_MODEL) -> None:
        """Store the model under that name, replacing the one before in a single write: a reader sees the old
        model or the new one, never a mix."""


class ScorerModelRepo:
    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    async def get(self, name: str = DEFAULT_MODEL) -> StoredModel | None:
        row = await self.db.fetchone(
            "SELECT format, model, trained_at FROM scorer_models WHERE name = ?", (name,)
        )
        if row is None:
            return None
        return StoredModel(int(row["format"]), bytes(row["model"]), from_ts(row["trained_at"]))

    async def trained_at(self, name: str = DEFAULT_MODEL) -> datetime | None:
        row = await self.db.fetchone("SELECT trained_at FROM scorer_models WHERE name = ?", (name,))
        return None if row is None else from_ts(row["trained_at"])

    async def put(self, blob: bytes, *, format_version: int, at: datetime, name: str = DEFAULT_MODEL) -> None:
        await self.db.execute(
            "INSERT INTO scorer_models (name, format, model, trained_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET format = excluded.format, model = excluded.model, "
            "trained_at = excluded.trained_at",
            (name, format_version, blob, to_ts(at)),
        )
