"""The delivery worker: claim due rows of the outbox, post them, record the outcome.

Every row is marked 'sending' before its post and 'sent' after, and every post carries a nonce derived from
(channel, paper): Discord answers a repeated nonce with the message it already made, so a retry cannot double-post.
A row still 'sending' after a crash is checked against the channel's recent messages before it is sent again.

Any number of workers, in any number of processes, share the outbox by channel: a worker claims a channel's lease
(the store's `claim_channels`), renews it before each post and frees it when the channel is done, so a channel's
order and its rate limit stay in one worker. A worker killed while holding channels frees them when their lease
expires, or on PostgreSQL at once, its session gone (each round first shows the worker running: `keep_alive`); the
worker that claims one next first checks its rows left 'sending', as after a crash. A worker holds at most its
share of the channels with posts due, so a kill strands no more than that, and one with nothing to claim while
others hold posts due stays in, claiming again every second (`deliver`). Rate limits and server errors are retried
later with backoff; a channel Discord refuses (deleted, access removed) marks its follows broken instead of being
retried forever. A post Discord rejects (400) is tried again at once in a smaller form: a digest split in halves, a
single paper as one line of text; only a paper whose line is rejected too is marked failed, so no paper is dropped
for being too big.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import hashlib
import logging
import os
import secrets
import socket
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any, Protocol

from bot.clock import Clock
from bot.models import Paper, PendingDelivery, Reach, UpsertResult, WorkShare
from bot.render.limits import CONTENT_LIMIT, EMBEDS_PER_MESSAGE  # not bot.render's card: no discord here
from bot.render.text import SUGGESTED, clip, inert_markdown
from bot.store import Store

log = logging.getLogger(__name__)
# Discord checks a message's nonce against the author's messages of "the past few minutes": a post left in flight
# this recently is made again with its nonce rather than looked for in the channel's history first.
NONCE_TRUSTED = timedelta(seconds=60)
RECLAIM_SECONDS = 1.0  # a running round claims again at least this often, see deliver_once


class RetryLater(Exception):
    """Discord is busy (429) or failing (5xx); the post may succeed later."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class ChannelGone(Exception):
    """Discord refuses the channel for good: deleted (404) or access removed (403, Missing Access)."""


class PostRejected(Exception):
    """Discord rejected this one post (400): retrying it unchanged cannot help."""


class Poster(Protocol):
    async def post_card(
        self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str
    ) -> int | None: ...

    async def post_digest(
        self, channel_id: int, items: Sequence[tuple[Paper, Sequence[str]]], nonce: str
    ) -> int | None: ...

    async def post_line(self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str) -> int | None:
        """The paper in its smallest form (one line of text), for a post rejected in a larger one."""
        ...

    async def post_text(self, channel_id: int, text: str, nonce: str) -> int | None: ...

    async def already_posted(self, channel_id: int, papers: Sequence[Paper]) -> set[str]:
        """arXiv ids among `papers` that the channel already shows from us (crash recovery)."""
        ...

    async def repeats_safely(self, channel_id: int) -> bool:
        """Whether a post made again with the same nonce within NONCE_TRUSTED of the first cannot show twice in
        the channel (Discord answers a nonce it saw in the last minutes with the message it made)."""
        ...


class Outcome(enum.Enum):
    POSTED = "posted"
    REJECTED = "rejected"  # this post, as it was: the caller tries a smaller form (rows are pending again)
    WAIT = "wait"  # the channel is rate-limited, failing or gone: nothing more for it this round


def card_topics(item: PendingDelivery) -> tuple[str, ...]:
    """The topics a card names, with the render's mark when only the learned scorer put the paper there."""
    return (*item.topics, SUGGESTED) if item.suggested else item.topics


def nonce_for(channel_id: int, key: str) -> str:
    """A stable nonce (<= 25 characters, as Discord requires) for one post of `key` in one channel."""
    return hashlib.blake2b(f"{channel_id}:{key}".encode(), digest_size=12).hexdigest()


@dataclass
class DeliveryReport:
    sent: int = 0
    summarised: int = 0
    retried: int = 0
    failed: int = 0
    broken_channels: list[int] = field(default_factory=list)

    def add(self, other: DeliveryReport) -> None:
        self.sent += other.sent
        self.summarised += other.summarised
        self.retried += other.retried
        self.failed += other.failed
        self.broken_channels += other.broken_channels


async def enqueue_for_new_papers(
    store: Store,
    clock: Clock,
    result: UpsertResult,
    matches: Mapping[str, set[int]],
    in_server: Mapping[str, set[tuple[int, int]]] | None = None,
    suggested: Mapping[str, set[int]] | None = None,
    server_verdicts: Mapping[tuple[int, int], tuple[set[str], set[str]]] | None = None,
) -> int:
    """Write outbox rows for papers new to the store that match followed topics (inside the ingest
    transaction). New versions of known papers are never posted again. `in_server` holds (topic, server) pairs
    a paper counts for in that server only (a server's own topic under a catalog topic); `suggested`, the
    topics whose learned scorer suggests a paper, which only follows with match 'suggested' receive;
    `server_verdicts`, per (topic, server), the papers that server's ratings withhold from its follows of the
    topic and those they add to its suggestions.

    Only these few rows (a day's papers times their topics) leave the process: the store joins them with the
    follows (store.deliveries.fan_out), so the outbox's rows, one per (channel, paper), are built in the
    database. Returns how many outbox rows it added."""
    new = set(result.new)
    reach: dict[Reach, None] = {}  # in order, each once
    for arxiv_id, topic_ids in matches.items():
        if arxiv_id in new:
            reach.update((Reach(t, None, arxiv_id, "exact"), None) for t in sorted(topic_ids))
    for arxiv_id, pairs in (in_server or {}).items():
        if arxiv_id in new:
            reach.update((Reach(t, guild, arxiv_id, "exact"), None) for t, guild in sorted(pairs))
    for arxiv_id, topic_ids in (suggested or {}).items():
        if arxiv_id in new:
            reach.update((Reach(t, None, arxiv_id, "suggested"), None) for t in sorted(topic_ids))
    for (topic_id, guild_id), (withheld, lifted) in (server_verdicts or {}).items():
        reach.update((Reach(topic_id, guild_id, a, "suggested"), None) for a in sorted(lifted & new))
        reach.update((Reach(topic_id, guild_id, a, "withheld"), None) for a in sorted(withheld & new))
    return await store.deliveries.fan_out(list(reach), clock.now())


class DeliveryWorker:
    def __init__(
        self,
        store: Store,
        poster: Poster,
        clock: Clock,
        *,
        per_channel: int = 10,
        max_attempts: int = 8,
        backoff: float = 30.0,
        digest_cards: int = 10,
        console: bool = False,
        channel_concurrency: int = 50,
        claim_batch: int = 2,
        lease_seconds: float = 60.0,
        worker_id: str | None = None,
        global_per_second: int | None = None,
    ) -> None:
        self.store = store
        self.poster = poster
        self.clock = clock
        self.per_channel = per_channel
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.digest_cards = max(1, min(digest_cards, EMBEDS_PER_MESSAGE))
        self.console = console  # serve the terminal's follows instead of Discord's
        self.channel_concurrency = channel_concurrency
        self.claim_batch = max(1, claim_batch)  # channels claimed at a time: see deliver_once
        self._progress: asyncio.Event | None = None  # set by each post of a round (deliver_once)
        self.yielding: set[int] = set()  # beyond this worker's share: left after their post in flight
        self.stopping = False  # set on shutdown: the post in flight finishes, the rest stays queued
        self.lease = timedelta(seconds=lease_seconds)  # longer than any one post, retries included
        # Discord's global limit (requests a second), which every channel's posts share: see _note_share.
        self.global_per_second = global_per_second
        self.gap = 0.0  # the least time between two posts of one channel now
        self._last_post: dict[int, float] = {}  # channel -> when this worker last posted to it (monotonic)
        # Unique across processes and restarts: a restarted process must not find its old leases its own.
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"

    async def _hold(self, channel_id: int) -> bool:
        """Take or renew this worker's lease on a channel; False when another worker holds it."""
        now = self.clock.now()
        return await self.store.deliveries.hold(self.worker_id, channel_id, now, now + self.lease)

    async def _release(self, channel_id: int) -> None:
        self._last_post.pop(channel_id, None)
        await self.store.deliveries.release(self.worker_id, [channel_id])

    def _note_share(self, share: WorkShare) -> None:
        """Each channel's even part of the global limit: with `n` channels posting at once (those with posts due,
        at most as many as the workers run), a channel posts at most every `n / limit` seconds. Else the
        first channels claimed spend a window's turns on bursts of their own (Discord lets a channel post 5 at once)
        while the others have not posted once; those then end late, a whole channel window late when a worker
        killed cost them a request."""
        if self.global_per_second:
            posting = min(share.busy, share.workers * self.channel_concurrency)
            self.gap = posting / self.global_per_second

    async def _take_gap(self, channel_id: int) -> None:
        """Wait out the channel's gap since this worker's last post to it (`_note_share`)."""
        last = self._last_post.get(channel_id)
        if last is not None:
            wait = last + self.gap - self.clock.monotonic()
            if wait > 0:
                await self.clock.sleep(wait)
        self._last_post[channel_id] = self.clock.monotonic()

    async def recover_in_flight(self) -> int:
        """After a crash: rows left 'sending' in channels no live worker holds are checked (see
        _recover_channel). Returns how many rows were checked."""
        await self.store.deliveries.keep_alive(self.worker_id)
        stuck = await self.store.deliveries.in_flight(console=self.console)
        recovered = 0
        for channel_id in sorted({d.channel_id for d in stuck}):
            if await self._hold(channel_id):
                try:
                    recovered += await self._recover_channel(channel_id)
                finally:
                    await self._release(channel_id)
        return recovered

    async def _recover_channel(self, channel_id: int) -> int:
        """Rows of a channel this worker holds that are still 'sending' were left by a worker that stopped
        (crashed, killed, lost its lease): marked sent if the channel shows them, else queued again (their
        nonce still protects against a post Discord made but we never heard of)."""
        items = await self.store.deliveries.in_flight(channel_id=channel_id)
        if not items:
            return 0
        since = await self.store.deliveries.sending_since(channel_id)
        recent = since is not None and self.clock.now() - since <= NONCE_TRUSTED
        recent = recent and all(d.mode == "each" for d in items)  # a digest's nonce names its chunk: checked
        try:
            if recent and await self.poster.repeats_safely(channel_id):
                # Its worker died a moment ago (killed, say): posted again with their nonces, which Discord
                # answers with any message already made, saving a request (and its turn) per channel taken over.
                shown = set()
            else:
                shown = await self.poster.already_posted(channel_id, [d.paper for d in items])
        except (RetryLater, ChannelGone) as exc:
            log.warning("could not check channel %d after a restart: %s", channel_id, exc)
            shown = set()
        done = [d.id for d in items if d.paper.arxiv_id in shown]
        await self.store.deliveries.mark_sent(done, None, self.clock.now())
        await self.store.deliveries.mark_retry(
            [d.id for d in items if d.id not in done], self.clock.now(), "restart"
        )
        return len(items)

    async def deliver(self) -> DeliveryReport:
        """Rounds (`deliver_once`) until no channel has posts due. While other workers hold the channels with
        posts due, this one stays in: it claims again every RECLAIM_SECONDS (each other worker then leaves it
        its share, see deliver_once), so a channel they free (done, yielded, or their worker killed) is taken
        over within a second, not at the next DELIVER_INTERVAL_SECONDS."""
        total = DeliveryReport()
        try:
            while True:
                total.add(await self.deliver_once())
                now = self.clock.now()
                share = await self.store.deliveries.share(
                    self.worker_id, now, now + self.lease, console=self.console
                )
                if share.busy == 0 or self.stopping:
                    break
                await self.clock.alarm(RECLAIM_SECONDS)
        except BaseException:
            with contextlib.suppress(Exception):  # the database away, say: its row runs out with the lease
                await self.store.deliveries.leave(self.worker_id)
            raise
        await self.store.deliveries.leave(self.worker_id)
        return total

    async def deliver_once(self) -> DeliveryReport:
        """One round: channels in parallel (Discord rate-limits each channel on its own), each channel's posts
        in announcement order, one at a time.

        Channels are claimed a few at a time (`claim_batch`), more as each post starts and as channels finish,
        so workers take channels in proportion to how fast they post; a channel whose worker died is taken over
        at this worker's next claim, within the round: at the latest RECLAIM_SECONDS after the last.

        A worker holds at most its share (the store's `share`: the channels with posts due over the workers in a
        round); beyond it (it started first, others joined) it leaves those it claimed last after their post."""
        report = DeliveryReport()
        await self.store.deliveries.keep_alive(self.worker_id)  # before claiming: others see it running
        running: dict[asyncio.Task[None], int] = {}
        progress = self._progress = asyncio.Event()
        more = True  # the last claim found channels: claim again after the next post
        # Else claim again every RECLAIM_SECONDS (an alarm, below): a killed worker's channels are taken over
        # then, not only when a post starts or a channel is done (seconds away while all wait on rate limits).
        last_claim = self.clock.monotonic()

        async def one_channel(channel_id: int) -> None:
            try:
                if not self.stopping:
                    await self._recover_channel(channel_id)
                    await self._deliver_channel(channel_id, report)
            finally:
                await self._release(channel_id)
                self.yielding.discard(channel_id)
                progress.set()

        failure: BaseException | None = None
        while True:
            room = self.channel_concurrency - len(running)
            progress.clear()  # before the claim: a post made while it runs wakes the next turn
            may_claim = room > 0 and failure is None and not self.stopping
            if may_claim and (more or self.clock.monotonic() >= last_claim + RECLAIM_SECONDS):
                last_claim, now = self.clock.monotonic(), self.clock.now()
                holding = [c for c in running.values() if c not in self.yielding]  # in the order claimed
                share = await self.store.deliveries.share(
                    self.worker_id, now, now + self.lease, console=self.console
                )
                self._note_share(share)
                self.yielding.update(holding[share.channels :])  # beyond its share: those claimed last
                want = min(room, self.claim_batch, share.channels - len(holding))
                more = False
                if want > 0:
                    claimed = await self.store.deliveries.claim_channels(
                        self.worker_id,
                        "each",
                        now,
                        now + self.lease,
                        console=self.console,
                        limit=want,
                        holding=list(running.values()),  # renewed as they post: not claimed again
                    )
                    for channel_id in claimed:
                        running[asyncio.create_task(one_channel(channel_id))] = channel_id
                    more = len(claimed) >= want
                    log.debug("claimed channels %s (%d running)", claimed, len(running))
            if not running:
                break
            waiters: set[asyncio.Future[Any]] = {asyncio.create_task(progress.wait())}
            if may_claim:  # the next claim is due then, whatever the channels do
                next_claim = last_claim + RECLAIM_SECONDS - self.clock.monotonic()
                waiters.add(self.clock.alarm(next_claim))
            done, _ = await asyncio.wait({*running, *waiters}, return_when=asyncio.FIRST_COMPLETED)
            for waiter in waiters:
                waiter.cancel()
            for task in [t for t in running if t in done]:
                running.pop(task)
                more = True  # a channel is done: room for another, perhaps one a dead worker left
                error = None if task.cancelled() else task.exception()  # always retrieved: none logged twice
                if failure is None and error is not None:
                    # Every channel's task ends before the round does (a failure in one, e.g. the database
                    # going away, must not leave the others posting into the next round); then it is raised.
                    failure = error
        if failure is not None:
            raise failure
        return report

    async def _deliver_channel(self, channel_id: int, report: DeliveryReport) -> None:
        due = await self.store.deliveries.for_channel(channel_id, mode="each", now=self.clock.now())
        now_posting, rest = due[: self.per_channel], due[self.per_channel :]
        for item in now_posting:
            if self.stopping or channel_id in self.yielding:
                return  # the rest stays queued: for this worker's next round, or another worker (its share)
            nonce = nonce_for(channel_id, item.paper.arxiv_id)
            post = partial(self.poster.post_card, channel_id, item.paper, card_topics(item), nonce)
            if not await self._post_or_smaller(channel_id, [item], report, post):
                return  # rate-limited, failing or gone: the rest of this channel waits for a later cycle
        if rest and not (self.stopping or channel_id in self.yielding):
            text = more_papers_text(rest)
            nonce = nonce_for(channel_id, f"more:{rest[0].id}:{rest[-1].id}")
            post = partial(self.poster.post_text, channel_id, text, nonce)
            outcome = await self._attempt(rest, report, post, status="summarised")
            if outcome is Outcome.REJECTED:
                await self._fail(rest, report, "Discord rejected the summary line")

    async def deliver_digests(self, hour: int) -> DeliveryReport:
        """Post the collected papers of digest follows whose hour (UTC) it is, up to `digest_cards` a message."""
        report = DeliveryReport()
        await self.store.deliveries.keep_alive(self.worker_id)
        for channel_id in await self.store.follows.digest_channels_due(hour):
            if self.stopping:
                break
            if not await self._hold(channel_id):
                continue  # another worker posts there now; the digest waits for it
            try:
                await self._recover_channel(channel_id)
                await self._digest_channel(channel_id, report)
            finally:
                await self._release(channel_id)
        return report

    async def _digest_channel(self, channel_id: int, report: DeliveryReport) -> None:
        items = await self.store.deliveries.for_channel(channel_id, mode="digest", now=self.clock.now())
        for start in range(0, len(items), self.digest_cards):
            if self.stopping:
                return
            chunk = items[start : start + self.digest_cards]
            if not await self._post_digest(channel_id, chunk, report):
                return

    async def _post_digest(
        self, channel_id: int, chunk: Sequence[PendingDelivery], report: DeliveryReport
    ) -> bool:
        """One digest message; if Discord rejects it, its halves, down to single papers and their lines.
        False when the channel must wait."""
        nonce = nonce_for(channel_id, f"digest:{chunk[0].id}:{chunk[-1].id}")
        pairs = [(d.paper, card_topics(d)) for d in chunk]
        if len(chunk) == 1:
            post = partial(self.poster.post_digest, channel_id, pairs, nonce)
            return await self._post_or_smaller(channel_id, chunk, report, post)
        outcome = await self._attempt(
            chunk, report, partial(self.poster.post_digest, channel_id, pairs, nonce)
        )
        if outcome is not Outcome.REJECTED:
            return outcome is Outcome.POSTED
        log.warning("channel %d rejected a digest of %d papers: posting it in halves", channel_id, len(chunk))
        half = len(chunk) // 2
        return await self._post_digest(channel_id, chunk[:half], report) and await self._post_digest(
            channel_id, chunk[half:], report
        )

    async def _post_or_smaller(
        self,
        channel_id: int,
        items: Sequence[PendingDelivery],
        report: DeliveryReport,
        post: Callable[[], Awaitable[int | None]],
    ) -> bool:
        """One paper's post; if Discord rejects it, the paper as one line; failed only if that is rejected
        too. False when the channel must wait."""
        outcome = await self._attempt(items, report, post)
        if outcome is Outcome.REJECTED:
            [item] = items
            log.warning(
                "channel %d rejected the post of %s: posting it as a line", channel_id, item.paper.arxiv_id
            )
            nonce = nonce_for(channel_id, f"line:{item.paper.arxiv_id}")
            line = partial(self.poster.post_line, channel_id, item.paper, card_topics(item), nonce)
            outcome = await self._attempt(items, report, line)
            if outcome is Outcome.REJECTED:
                await self._fail(items, report, "Discord rejected the post, even as one line")
        return outcome is not Outcome.WAIT

    async def _fail(self, items: Sequence[PendingDelivery], report: DeliveryReport, reason: str) -> None:
        await self.store.deliveries.mark([d.id for d in items], "failed", reason)
        report.failed += len(items)
        log.error("channel %d: %s (%d papers marked failed)", items[0].channel_id, reason, len(items))

    async def _attempt(
        self,
        items: Sequence[PendingDelivery],
        report: DeliveryReport,
        post: Callable[[], Awaitable[int | None]],
        status: str = "sent",
    ) -> Outcome:
        ids = [d.id for d in items]
        channel_id = items[0].channel_id
        if not await self._hold(channel_id):  # renewed before each post; lost, the channel is another's now
            log.warning("channel %d: this worker's lease on it ran out; another worker has it", channel_id)
            return Outcome.WAIT
        await self.store.deliveries.mark_sending(ids, self.clock.now())
        if self._progress is not None:
            self._progress.set()  # posting (perhaps about to wait on a rate limit): room to claim a few more
        await self._take_gap(channel_id)
        now = self.clock.now()
        try:
            message_id = await post()
        except RetryLater as exc:
            attempts = max(d.attempts for d in items) + 1
            if attempts >= self.max_attempts:
                await self.store.deliveries.mark(ids, "failed", f"gave up after {attempts} tries: {exc}")
                report.failed += len(ids)
            else:
                wait = exc.retry_after if exc.retry_after is not None else self.backoff * 2 ** (attempts - 1)
                until = now + timedelta(seconds=wait)
                await self.store.deliveries.mark_retry(ids, until, str(exc))
                await self.store.deliveries.postpone_channel(channel_id, until)
                report.retried += len(ids)
            log.warning("channel %d: %s; retrying later", channel_id, exc)
            return Outcome.WAIT
        except ChannelGone as exc:
            reason = str(exc)
            await self.store.follows.mark_broken(channel_id, reason, now)
            report.failed += await self.store.deliveries.fail_channel(channel_id, reason)
            report.broken_channels.append(channel_id)
            log.warning("channel %d refused for good (%s): its follows are marked broken", channel_id, reason)
            return Outcome.WAIT
        except PostRejected as exc:
            # Pending again, due now: the caller tries a smaller form in this round; a crash before it does
            # leaves the rows queued, never lost.
            await self.store.deliveries.mark_retry(ids, now, str(exc))
            log.warning("channel %d rejected a post: %s", channel_id, exc)
            return Outcome.REJECTED
        if status == "sent":
            await self.store.deliveries.mark_sent(ids, message_id, now)
            report.sent += len(ids)
        else:
            await self.store.deliveries.mark(ids, status)
            report.summarised += len(ids)
        await self.store.follows.touch(channel_id, now)
        return Outcome.POSTED


def more_papers_text(rest: Sequence[PendingDelivery]) -> str:
    """ "+23 more RL Post-Training papers - /latest RL Post-Training", one line per topic."""
    per_topic = Counter(d.topics[0] if d.topics else "matching" for d in rest)
    lines = []
    for topic, count in sorted(per_topic.items(), key=lambda kv: (-kv[1], kv[0])):
        noun = "paper" if count == 1 else "papers"
        name = inert_markdown(" ".join(topic.split()))  # a server names its own topics: no links, no pings
        lines.append(f"+{count} more {name} {noun} - /latest {name}")
    return clip("\n".join(lines), CONTENT_LIMIT)
