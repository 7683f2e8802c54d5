"""Where each source stands, on PostgreSQL: bot/store/sources.py's repository, with PostgreSQL's names for the
two-argument maximum and minimum. (Backfill windows use bot/store/sources.py's repository as it is.)"""

from __future__ import annotations

from bot.store import sources


class SourceRepo(sources.SourceRepo):
    GREATEST, LEAST = "GREATEST", "LEAST"
