"""Polite HTTP for arXiv: one request at a time, a minimum interval, bounded bodies and time, retries with backoff.

arXiv's etiquette (at most one request every 3 s, one connection) applies to the API, RSS and OAI-PMH together,
so every arXiv source shares one PoliteHttp. The caller's `parse` decides what a usable answer is: raising
`Retryable` from it (an empty page that should not be empty, a truncated body) retries like a 503 would.

Whatever the HTTP layer raises leaves `get` as an ArxivUnavailable (a SourceError), never as an httpx or socket
error: a poll records it and the next cycle tries again.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import TypeVar

import httpx

from bot.clock import Clock
from bot.errors import ArxivUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 520, 522, 524})
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# The whole of one request, from sending it to the last byte. httpx's timeout is per read, so a server trickling
# a byte a second would hold the one shared connection (and every poll and /paper lookup queued behind its lock)
# forever. A 2,000-entry page takes arXiv well under a minute to produce and send.
DEFAULT_DEADLINE = 180.0
YIELD_EVERY_BYTES = 1 << 20  # let other work run after each MiB read
REASON_CHARS = 200  # an exception's text can be long (a whole URL); a log line needs its start


class Retryable(Exception):
    """Raised by a parse callback: this answer is unusable now but may be fine on a later try."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str
    status: int
    headers: Mapping[str, str]
    content: bytes


def build_http_client(user_agent: str, timeout: float = 60.0) -> httpx.AsyncClient:
    """An httpx client for arXiv: one connection, a descriptive User-Agent, explicit timeouts."""
    return httpx.AsyncClient(
        headers={"User-Agent": user_agent, "Accept-Encoding": "gzip"},
        timeout=httpx.Timeout(timeout, connect=15.0),
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        follow_redirects=True,
    )


def describe(exc: BaseException) -> str:
    """`Type: message` of an exception, looking inside exception groups (anyio wraps socket errors in them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    named = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return named if len(named) <= REASON_CHARS else named[: REASON_CHARS - 1] + "…"


def parse_retry_after(value: str | None, now_ts: float) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now_ts)


class PoliteHttp:
    def __init__(
        self,
        client: httpx.AsyncClient,
        clock: Clock,
        *,
        min_interval: float = 3.0,
        max_tries: int = 5,
        backoff_base: float = 3.0,
        backoff_cap: float = 300.0,
        max_bytes: int = DEFAULT_MAX_BYTES,
        deadline: float = DEFAULT_DEADLINE,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.min_interval = min_interval
        self.max_tries = max(1, max_tries)
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_bytes = max_bytes
        self.deadline = deadline
        self.rng = rng or random.Random()
        self._lock = asyncio.Lock()
        self._last_start: float | None = None
        self.requests_sent = 0

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with full jitter, never below the minimum interval."""
        ceiling = min(self.backoff_cap, self.backoff_base * (2**attempt))
        return max(self.min_interval, self.rng.uniform(ceiling / 2, ceiling))

    async def _wait_turn(self) -> None:
        if self._last_start is not None:
            remaining = self.min_interval - (self.clock.monotonic() - self._last_start)
            if remaining > 0:
                await self.clock.sleep(remaining)
        self._last_start = self.clock.monotonic()

    async def _get_once(
        self, url: str, params: Mapping[str, str | int] | None, headers: Mapping[str, str], what: str
    ) -> Fetched:
        """One request. Transient failures raise Retryable; any other failure of the HTTP layer raises
        ArxivUnavailable at once (retrying a redirect loop within the call only hammers the server)."""
        async with self._lock:
            await self._wait_turn()
            self.requests_sent += 1
            # The deadline runs on the event loop's clock: a socket that trickles cannot be driven by an
            # injected clock. It covers only the request itself, not the wait for the lock or the interval.
            deadline = asyncio.timeout(self.deadline)
            try:
                async with deadline:
                    return await self._read(url, params, headers)
            except TimeoutError:
                if deadline.expired():
                    raise Retryable(f"no complete answer within the {self.deadline:g} s deadline") from None
                raise Retryable("timed out") from None
            except (Retryable, asyncio.CancelledError):
                raise
            except httpx.TimeoutException as exc:
                raise Retryable(f"timed out ({type(exc).__name__})") from exc
            except httpx.TransportError as exc:
                raise Retryable(f"connection failed ({describe(exc)})") from exc
            except httpx.DecodingError as exc:  # a corrupt gzip body: not a TransportError, still transient
                raise Retryable(f"undecodable body ({describe(exc)})") from exc
            except httpx.TooManyRedirects:
                raise ArxivUnavailable(f"{what} is stuck in a redirect loop; will try again later") from None
            except Exception as exc:  # anything else the HTTP stack lets out (e.g. a bad port)
                log.debug("%s: unexpected error from the HTTP layer", what, exc_info=True)
                raise ArxivUnavailable(f"{what} could not be fetched ({describe(exc)})") from exc

    async def _read(
        self, url: str, params: Mapping[str, str | int] | None, headers: Mapping[str, str]
    ) -> Fetched:
        async with self.client.stream("GET", url, params=params, headers=headers) as response:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > self.max_bytes:
                raise Retryable(f"response of {declared} bytes is over the {self.max_bytes} byte bound")
            chunks: list[bytes] = []
            size = yielded_at = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > self.max_bytes:
                    raise Retryable(f"response is over the {self.max_bytes} byte bound")
                chunks.append(chunk)
                if size - yielded_at > YIELD_EVERY_BYTES:
                    # A body already buffered is read without a pause; a large page would hold the loop.
                    yielded_at = size
                    await asyncio.sleep(0)
            return Fetched(str(response.url), response.status_code, dict(response.headers), b"".join(chunks))

    async def get(
        self,
        url: str,
        parse: Callable[[Fetched], T] | Callable[[Fetched], Awaitable[T]],
        *,
        params: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
        what: str = "arXiv",
    ) -> T:
        """GET with retries. Statuses in RETRY_STATUSES, transport errors, the deadline, undecodable (corrupt
        gzip) bodies and `Retryable` from `parse` are retried; other failures of the HTTP layer raise
        ArxivUnavailable at once; any other exception from `parse` propagates (e.g. a query arXiv rejects).
        `what` names the request in logs and errors: keep it short (it is repeated on every retry)."""
        last_reason = ""
        for attempt in range(self.max_tries):
            retry_after: float | None = None
            try:
                fetched = await self._get_once(url, params, headers or {}, what)
                if fetched.status in RETRY_STATUSES:
                    retry_after = parse_retry_after(
                        fetched.headers.get("retry-after"), self.clock.now().timestamp()
                    )
                    raise Retryable(f"HTTP {fetched.status}", retry_after)
                result = parse(fetched)
                if asyncio.iscoroutine(result):
                    result = await result
                return result  # type: ignore[return-value]
            except Retryable as exc:
                last_reason, retry_after = str(exc), exc.retry_after
            if attempt + 1 >= self.max_tries:
                break
            wait = retry_after if retry_after is not None else self.backoff(attempt)
            wait = min(max(wait, self.min_interval), self.backoff_cap)
            log.warning(
                "%s: attempt %d of %d failed (%s); next in %.1f s",
                what,
                attempt + 1,
                self.max_tries,
                last_reason,
                wait,
            )
            await self.clock.sleep(wait)
        raise ArxivUnavailable(f"{what} did not answer after {self.max_tries} tries (last: {last_reason})")
