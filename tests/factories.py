"""Paper values for tests, the one place a test builds a Paper: realistic defaults, every field overridable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.models import Author, Paper

BASE_TIME = datetime(2026, 11, 16, 9, 30, tzinfo=UTC)
TEXT_TIME = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)  # text_paper's date


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


def text_paper(
    title: str = "",
    abstract: str = "",
    authors: tuple[str, ...] = ("Ada Lovelace",),
    categories: tuple[str, ...] = ("cs.LG",),
    arxiv_id: str = "2603.01234",
    comment: str | None = None,
    journal_ref: str | None = None,
) -> Paper:
    """A paper with exactly these text fields and no other words to match (authors by plain name, the first
    category primary): what the query, matcher and catalog tests match against."""
    return make_paper(
        arxiv_id=arxiv_id,
        title=title,
        abstract=abstract,
        authors=tuple(Author(name) for name in authors),
        primary_category=categories[0],
        categories=categories,
        published=TEXT_TIME,
        comment=comment,
        journal_ref=journal_ref,
    )


def rl_paper(n: int, **fields: Any) -> Paper:
    """A paper the catalog's RL Post-Training (and GRPO) topics match."""
    return make_paper(
        n,
        title=f"GRPO for reasoning language models, part {n}",
        abstract="We fine-tune LLMs with GRPO and verifiable rewards.",
        **fields,
    )


def plain_paper(n: int, title: str | None = None, **fields: Any) -> Paper:
    """A paper of a field no catalog topic covers."""
    return make_paper(
        n, title=title or f"Graph colouring heuristics {n}", abstract="We colour graphs.", **fields
    )
