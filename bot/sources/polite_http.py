"""Polite HTTP for arXiv: one request at a time, a minimum interval, bounded bodies, retries with backoff.

arXiv's etiquette (at most one request every 3 s, one connection) applies to the API, RSS and OAI-PMH together,
so every arXiv source shares one PoliteHttp. The caller's `parse` decides what a usable answer is: raising
`Retryable` from it (an empty page that should not be empty, a truncated body) retries like a 503 would.
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
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.min_interval = min_interval
        self.max_tries = max(1, max_tries)
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_bytes = max_bytes
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
        self, url: str, params: Mapping[str, str | int] | None, headers: Mapping[str, str]
    ) -> Fetched:
        async with self._lock:
            await self._wait_turn()
            self.requests_sent += 1
            async with self.client.stream("GET", url, params=params, headers=headers) as response:
                declared = response.headers.get("Content-Length")
                if declared and declared.isdigit() and int(declared) > self.max_bytes:
                    raise Retryable(f"response of {declared} bytes is over the {self.max_bytes} byte bound")
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise Retryable(f"response is over the {self.max_bytes} byte bound")
                    chunks.append(chunk)
                return Fetched(
                    str(response.url), response.status_code, dict(response.headers), b"".join(chunks)
                )

    async def get(
        self,
        url: str,
        parse: Callable[[Fetched], T] | Callable[[Fetched], Awaitable[T]],
        *,
        params: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
        what: str = "arXiv",
    ) -> T:
        """GET with retries. Statuses in RETRY_STATUSES, transport errors, undecodable (corrupt gzip) bodies
        and `Retryable` from `parse` are retried; any other exception from `parse` propagates (e.g. a query
        arXiv rejects)."""
        last_reason = ""
        for attempt in range(self.max_tries):
            retry_after: float | None = None
            try:
                fetched = await self._get_once(url, params, headers or {})
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
            except httpx.TimeoutException as exc:
                last_reason = f"timed out ({type(exc).__name__})"
            except httpx.TransportError as exc:
                last_reason = f"connection failed ({type(exc).__name__}: {exc})"
            except httpx.DecodingError as exc:  # a corrupt gzip body: not a TransportError, still transient
                last_reason = f"undecodable body ({exc})"
            if attempt + 1 >= self.max_tries:
                break
            wait = retry_after if retry_after is not None else self.backoff(attempt)
            wait = min(max(wait, self.min_interval), self.backoff_cap)
            log.warning(
                "%s: %s; try %d of %d, retrying in %.1f s",
                what,
                last_reason,
                attempt + 1,
                self.max_tries,
                wait,
            )
            await self.clock.sleep(wait)
        raise ArxivUnavailable(
            f"{what} did not answer after {self.max_tries} tries (last: {last_reason})"
        )
