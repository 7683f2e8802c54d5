"""`migrate-store --from sqlite:///path --to postgresql://...`: copy a deployment from its SQLite file into an
empty PostgreSQL database, with progress; run it again after an interrupt and it continues."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bot.errors import PaperwatchError
from bot.services.store_migration import migrate_store

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def sqlite_path(text: str) -> Path:
    """The file of a `sqlite:///relative` or `sqlite:////absolute` address (or a plain path)."""
    if not text.startswith("sqlite:"):
        return Path(text)
    parts = urlsplit(text)
    if parts.netloc or not parts.path.startswith("/") or len(parts.path) < 2:
        raise PaperwatchError(
            f"--from {text!r} is not a SQLite address: write sqlite:///paperwatch.sqlite3 (relative) or "
            "sqlite:////srv/paperwatch/paperwatch.sqlite3 (absolute)"
        )
    return Path(unquote(parts.path[1:]))


def progress(line: str) -> None:
    print(line, flush=True)


async def cmd_migrate_store(source: str, target: str) -> int:
    if not target.startswith(POSTGRES_SCHEMES):
        raise PaperwatchError(
            "--to must be a PostgreSQL address: postgresql://user:password@host:5432/database"
        )
    done = await migrate_store(sqlite_path(source), target, progress)
    copied = sum(done.copied.values())
    how = "resumed and finished" if done.resumed else "finished"
    print(f"Copy of {done.source} {how}: {copied:,} rows written by this run.", file=sys.stdout)
    return 0
