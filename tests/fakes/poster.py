"""A recording Poster for delivery unit tests (the end-to-end tests post through the real discord.py client)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bot.models import Paper


class Crash(BaseException):
    """The process dies here: nothing after this line of the worker runs."""


@dataclass
class Post:
    channel_id: int
    kind: str  # card | digest | line | text
    papers: list[str]
    topics: list[tuple[str, ...]]
    nonce: str
    text: str = ""


@dataclass
class RecordingPoster:
    posts: list[Post] = field(default_factory=list)
    # Called before each post with it; may raise (RetryLater, ChannelGone, ...) to refuse it.
    before: Callable[[Post], None] | None = None
    # Called after a post is recorded (Discord made it); may raise Crash to lose the answer.
    after: Callable[[Post], None] | None = None
    _next_id: int = 1000

    def _record(self, post: Post) -> int:
        if self.before:
            self.before(post)
        # Discord's nonce rule: the same nonce in the same channel returns the existing message.
        for old in self.posts:
            if old.channel_id == post.channel_id and old.nonce == post.nonce:
                return 1
        self.posts.append(post)
        self._next_id += 1
        if self.after:
            self.after(post)
        return self._next_id

    async def post_card(self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str) -> int | None:
        return self._record(Post(channel_id, "card", [paper.arxiv_id], [tuple(topics)], nonce))

    async def post_digest(
        self, channel_id: int, items: Sequence[tuple[Paper, Sequence[str]]], nonce: str
    ) -> int | None:
        return self._record(
            Post(channel_id, "digest", [p.arxiv_id for p, _ in items], [tuple(t) for _, t in items], nonce)
        )

    async def post_line(self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str) -> int | None:
        return self._record(Post(channel_id, "line", [paper.arxiv_id], [tuple(topics)], nonce))

    async def post_text(self, channel_id: int, text: str, nonce: str) -> int | None:
        return self._record(Post(channel_id, "text", [], [], nonce, text))

    async def already_posted(self, channel_id: int, papers: Sequence[Paper]) -> set[str]:
        shown = {a for p in self.posts if p.channel_id == channel_id for a in p.papers}
        return {p.arxiv_id for p in papers if p.arxiv_id in shown}

    async def repeats_safely(self, channel_id: int) -> bool:
        return True  # a repeated nonce returns the existing post, as Discord does (`_record`)

    def cards(self, channel_id: int) -> list[str]:
        return [a for p in self.posts if p.channel_id == channel_id and p.kind == "card" for a in p.papers]
