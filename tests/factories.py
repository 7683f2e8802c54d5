"""Paper values for tests: realistic defaults, every field overridable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.models import Author, Paper

BASE_TIME = datetime(2026, 11, 16, 9, 30, tzinfo=UTC)


def make_paper(n: int = 1, **fields: Any) -> Paper:
    published = fields.pop("published", BASE_TIME - timedelta(hours=n))
    values: dict[str, Any] = {
        "arxiv_id": f"2611.{10000 + n:05d}",
        "version": 1,
        "title": f"Paper number {n} on reinforcement learning",
        "abstract": f"We study problem {n}. Our method improves results.",
        "authors": (Author("Ada Lovelace", ("University of London",)), Author("Alan Turing")),
        "primary_category": "cs.LG",
        "categories": ("cs.LG", "cs.AI"),
        "published": published,
        "updated": fields.pop("updated", published),
    }
    values.update(fields)
    return Paper(**values)


# Two papers of clearly different fields: one for the RL topics, one for robotics (a category of its own).
GRPO = make_paper(
    1,
    title="Group Relative Policy Optimization for math reasoning in large language models",
    abstract="We post-train an LLM with GRPO on verifiable rewards and improve reasoning accuracy.",
)
ROBOT = make_paper(
    2,
    title="Sim-to-real transfer for legged robots",
    abstract="We train a quadruped locomotion policy with PPO in simulation and deploy it on hardware.",
    categories=("cs.RO",),
    primary_category="cs.RO",
)
