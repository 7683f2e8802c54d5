"""`python -m bot demo`: the real bot (backfill, store, match, momentum, /follow, outbox, cards through
discord.py) against a loopback arXiv serving a small corpus of real papers and a loopback Discord whose
channel the terminal shows. No token, no internet.

`corpus` holds the papers and moves their dates; the loopback servers are bot/loopback/. The command itself
lives with the other commands, in bot/cli/demo.py.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from bot.config import Settings
from bot.topics.catalog import CatalogTopic
from bot.topics.query import parse_query

# The corpus answers arXiv's query "testing"; the topic picks its machine-learning side.
DEMO_TOPIC = CatalogTopic(
    slug="ml-for-software-testing",
    name="ML for Software Testing",
    description="Testing software with machine learning, and testing machine-learning systems.",
    query=parse_query(
        '(ti:test OR ti:testing OR abs:"software testing") AND '
        '("deep learning" OR "machine learning" OR neural OR LLM OR "language model" OR ChatGPT)'
    ),
)
DEMO_CATEGORIES = ("cs.SE", "cs.LG", "cs.AI", "cs.CL")
# Entries moved into the last 4.5 days are held back, then announced after the first poll: the new papers
# that arrive as cards. Within the poll's overlap window (POLL_OVERLAP_HOURS, 120 by default).
ANNOUNCED_WITHIN = timedelta(hours=108)


class _DemoSettings(Settings):
    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource, *_: Any, **__: Any
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)  # neither the environment nor .env: the demo runs the same on every install


def never_proxy_loopback() -> None:
    """httpx sends even 127.0.0.1 through HTTP(S)_PROXY / ALL_PROXY: the demo's arXiv is on this machine, so this
    process names loopback in NO_PROXY (keeping whatever it held)."""
    for name in ("NO_PROXY", "no_proxy"):
        hosts = [h for h in os.environ.get(name, "").split(",") if h.strip()]
        os.environ[name] = ",".join([*hosts, "127.0.0.1"])


def demo_settings(database: Path, arxiv_url: str, **discord: str) -> Settings:
    """The demo's settings: its database and loopback arXiv, and `discord` (token, API base and gateway URL of
    the loopback Discord); nothing from the environment or a .env file."""
    values: dict[str, Any] = {
        **discord,
        "database_path": database,
        "arxiv_api_url": arxiv_url,
        "arxiv_min_interval_seconds": 0,  # arXiv's etiquette is for arXiv; this one is ours, on loopback
        "arxiv_categories": DEMO_CATEGORIES,
    }
    return _DemoSettings(**values)
