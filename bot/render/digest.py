"""Digests: up to ten compact cards in one message, within the 6,000 characters all its embeds share, with the
line above them and their forum post's title."""

from __future__ import annotations

from collections.abc import Sequence

import discord

from bot.models import Paper
from bot.render.card import RAW_MARGIN, TOPIC_CHARS, TOPICS_READ, embed_size, paper_embed
from bot.render.limits import CONTENT_LIMIT, EMBED_TOTAL_LIMIT, EMBEDS_PER_MESSAGE, THREAD_NAME_LIMIT
from bot.render.text import SEP, clean, clip, inert_markdown, safe_clip

DIGEST_ABSTRACT_CHARS = 280
# What the cards of one digest may use together: Discord's 6,000 less a margin, so a digest never meets
# the limit however Discord rounds (a 400 for size is still handled by the worker: it splits the digest).
DIGEST_EMBEDS_CHARS = EMBED_TOTAL_LIMIT - 300

DigestItem = tuple[Paper, Sequence[str]]


def digest_embeds(items: Sequence[DigestItem], *, total: int = DIGEST_EMBEDS_CHARS) -> list[discord.Embed]:
    """One compact card per paper, all of them within `total` characters: cards smaller than an equal
    share keep their natural size and leave the rest to the others, which shrink to a common cap."""
    if len(items) > EMBEDS_PER_MESSAGE:
        raise ValueError(f"a message holds at most {EMBEDS_PER_MESSAGE} embeds, not {len(items)}")
    embeds = [paper_embed(p, topics=t, abstract_chars=DIGEST_ABSTRACT_CHARS) for p, t in items]
    cap = _fair_cap([embed_size(e) for e in embeds], total)
    return [
        embed
        if embed_size(embed) <= cap
        else paper_embed(paper, topics=topics, abstract_chars=DIGEST_ABSTRACT_CHARS, budget=cap)
        for embed, (paper, topics) in zip(embeds, items, strict=True)
    ]


def _fair_cap(sizes: Sequence[int], total: int) -> int:
    """The largest cap such that sum(min(size, cap)) <= total (water-filling)."""
    left = total
    for i, size in enumerate(sorted(sizes)):
        share = left // (len(sizes) - i)
        if size > share:
            return share
        left -= size
    return total


def _digest_topics(items: Sequence[DigestItem]) -> list[str]:
    names = {clean(t, RAW_MARGIN * TOPIC_CHARS) for _, topics in items for t in topics[:TOPICS_READ]}
    return sorted(n for n in names if n)


def _papers_text(count: int) -> str:
    return "1 new paper" if count == 1 else f"{count} new papers"


def digest_content(items: Sequence[DigestItem]) -> str:
    """The line above a digest's cards: "**10 new papers** for RL Post-Training · Reward Modeling"."""
    names = (
        SEP.join(inert_markdown(clip(name, TOPIC_CHARS)) for name in _digest_topics(items)) or "your topics"
    )
    return clip(f"**{_papers_text(len(items))}** for {names}", CONTENT_LIMIT)


def digest_thread_name(items: Sequence[DigestItem]) -> str:
    """A digest's forum post title (plain text): "10 new papers: RL Post-Training · Reward Modeling"."""
    names = SEP.join(_digest_topics(items))
    text = f"{_papers_text(len(items))}: {names}" if names else _papers_text(len(items))
    return safe_clip(text, THREAD_NAME_LIMIT)
