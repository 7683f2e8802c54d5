"""PoliteHttp against the loopback arXiv: what is retried (a corrupt gzip body, a deadline), what fails at once
(a redirect loop, any other error of the HTTP layer) and what each retry logs."""

from __future__ import annotations

import asyncio
import logging
import random

import pytest

from bot.clock import FakeClock
from bot.errors import ArxivUnavailable
from bot.loopback.arxiv import LoopbackArxiv
from bot.sources.arxiv_api import ArxivClient, category_query
from bot.sources.polite_http import Fetched, PoliteHttp, build_http_client

CORRUPT_GZIP = b"\x1f\x8b\x08\x00" + b"not really gzip" * 8


def body(fetched: Fetched) -> bytes:
    return fetched.content


async def test_corrupt_gzip_body_is_retried_then_succeeds() -> None:
    clock = FakeClock()
    async with LoopbackArxiv() as fa, build_http_client("paperwatch-test/0.1") as client:
        fa.serve_raw_next(CORRUPT_GZIP, headers={"Content-Encoding": "gzip"})
        fa.serve_raw_next(b"fine")
        http = PoliteHttp(client, clock, min_interval=3.0, max_tries=3, rng=random.Random(1))
        assert await http.get(fa.url, body) == b"fine"
        assert len(fa.requests) == 2
        assert clock.sleeps == [3.0]


async def test_corrupt_gzip_every_time_is_unavailable_not_an_httpx_error() -> None:
    async with LoopbackArxiv() as fa, build_http_client("paperwatch-test/0.1") as client:
        fa.serve_raw_next(CORRUPT_GZIP, count=2, headers={"Content-Encoding": "gzip"})
        http = PoliteHttp(client, FakeClock(), max_tries=2, rng=random.Random(1))
        with pytest.raises(ArxivUnavailable, match="undecodable body"):
            await http.get(fa.url, body)
        assert len(fa.requests) == 2


# -- a total deadline per request -------------------------------------------------------------------------
# A server that trickles one byte at a time satisfies every per-read timeout; only a total deadline ends the
# request. The deadline is a constructor argument, so these tests use a small one; nothing here asserts how
# long anything took, and the generous asyncio bound only turns a hang (before the deadline existed) into a
# failure.


async def test_a_trickling_answer_is_cut_off_at_the_deadline_retried_and_frees_the_client() -> None:
    clock = FakeClock()
    async with LoopbackArxiv() as fa, build_http_client("paperwatch-test/0.1", timeout=5.0) as client:
        fa.trickle_next(count=2, interval=0.05, body=b"x" * 100_000)  # ~20 bytes a second: hours in all
        http = PoliteHttp(client, clock, min_interval=3.0, max_tries=2, deadline=0.5, rng=random.Random(1))
        async with asyncio.timeout(60):
            with pytest.raises(ArxivUnavailable, match=r"deadline"):
                await http.get(fa.url, body)
            assert len(fa.requests) == 2  # the deadline is a retryable failure, like a timeout
            assert (
                len(clock.sleeps) == 1 and clock.sleeps[0] >= 3.0
            )  # the wait between the tries, on the clock
            # The one shared connection and the lock are free again: the next request is answered.
            fa.serve_raw_next(b"fine")
            assert await http.get(fa.url, body) == b"fine"


async def test_a_trickle_then_a_good_answer_succeeds() -> None:
    clock = FakeClock()
    async with LoopbackArxiv() as fa, build_http_client("paperwatch-test/0.1", timeout=5.0) as client:
        fa.trickle_next(interval=0.05, body=b"x" * 100_000)
        fa.serve_raw_next(b"fine")
        http = PoliteHttp(client, clock, min_interval=3.0, max_tries=3, deadline=0.5, rng=random.Random(1))
        async with asyncio.timeout(60):
            assert await http.get(fa.url, body) == b"fine"
        assert len(fa.requests) == 2


# -- errors of the HTTP layer that are not transport errors --------------------------------------------------


async def test_a_redirect_loop_is_arxiv_unavailable_without_hammering() -> None:
    clock = FakeClock()
    async with LoopbackArxiv() as fa, build_http_client("paperwatch-test/0.1") as client:
        fa.redirect_next(count=100)
        http = PoliteHttp(client, clock, max_tries=5, rng=random.Random(1))
        with pytest.raises(ArxivUnavailable, match="redirect"):
            await http.get(fa.url, body)
        # One request and the redirects it followed: a loop is not retried within the call (the next poll
        # tries again), so the 5 tries do not become 100 requests.
        assert len(fa.requests) == 21 and clock.sleeps == []


async def test_a_redirect_to_an_impossible_port_is_unavailable_not_a_crash() -> None:
    # httpx lets the socket layer's OverflowError out (wrapped in an ExceptionGroup): no httpx error at all.
    async with LoopbackArxiv() as fa, build_http_client("paperwatch-test/0.1") as client:
        fa.serve_raw_next(b"", status=302, headers={"Location": "http://127.0.0.1:99999/api/query"})
        http = PoliteHttp(client, FakeClock(), max_tries=3, rng=random.Random(1))
        with pytest.raises(ArxivUnavailable, match="port must be 0-65535"):
            await http.get(fa.url, body)
        assert len(fa.requests) == 1


# -- one short warning per retry -----------------------------------------------------------------------------


async def test_each_retry_logs_one_warning_with_attempt_reason_and_wait_not_the_whole_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    many = [f"cs.{chr(65 + i)}{chr(65 + j)}" for i in range(6) for j in range(6)]  # a long category query
    query = category_query(many)
    clock = FakeClock()
    async with LoopbackArxiv() as fa, build_http_client("paperwatch-test/0.1") as client:
        fa.fail_next(503, count=2)
        arxiv = ArxivClient(PoliteHttp(client, clock, max_tries=4, rng=random.Random(1)), fa.url)
        with caplog.at_level(logging.WARNING, logger="bot.sources.polite_http"):
            await arxiv.search(query, max_results=5)
    warnings = [r.getMessage() for r in caplog.records if r.name == "bot.sources.polite_http"]
    assert len(warnings) == 2
    for n, (line, wait) in enumerate(zip(warnings, clock.sleeps, strict=True), start=1):
        assert f"attempt {n} of 4" in line and "HTTP 503" in line and f"{wait:.1f} s" in line
        assert query not in line and len(line) < 200  # the query at most once, shortened
        assert line.count("cat:cs.AA") == 1
