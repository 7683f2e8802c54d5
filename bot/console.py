"""A poster that prints cards in a terminal: `python -m bot watch` for people without a Discord server."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from typing import TextIO

from bot.models import Paper
from bot.render import paper_console

CONSOLE_GUILD = 0  # console follows belong to no Discord server; their channel ids are negative


def console_channel(topic_id: int) -> int:
    return -topic_id


class ConsolePoster:
    def __init__(self, stream: TextIO | None = None, width: int | None = None) -> None:
        self.stream = stream or sys.stdout
        self.width = width or min(100, shutil.get_terminal_size((100, 24)).columns)
        self.printed: set[str] = set()

    def _print(self, text: str) -> None:
        rule = "─" * self.width
        self.stream.write(f"{rule}\n{text}\n")
        self.stream.flush()

    async def post_card(self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str) -> int | None:
        self._print(paper_console(paper, topics=topics, width=self.width))
        self.printed.add(paper.arxiv_id)
        return None

    async def post_digest(
        self, channel_id: int, items: Sequence[tuple[Paper, Sequence[str]]], nonce: str
    ) -> int | None:
        for paper, topics in items:
            await self.post_card(channel_id, paper, topics, nonce)
        return None

    async def post_line(self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str) -> int | None:
        return await self.post_card(channel_id, paper, topics, nonce)  # a terminal has no size limit

    async def post_text(self, channel_id: int, text: str, nonce: str) -> int | None:
        self._print(text)
        return None

    async def already_posted(self, channel_id: int, papers: Sequence[Paper]) -> set[str]:
        return {p.arxiv_id for p in papers if p.arxiv_id in self.printed}

    async def repeats_safely(self, channel_id: int) -> bool:
        return False  # a terminal keeps no nonces: what it printed is checked instead
