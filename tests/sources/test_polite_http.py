"""PoliteHttp: a corrupt gzip body (httpx.DecodingError, not a TransportError) is retried like other faults."""

from __future__ import annotations

import random

import pytest

from bot.clock import FakeClock
from bot.errors import ArxivUnavailable
from bot.sources.polite_http import Fetched, PoliteHttp, build_http_client
from tests.fakes.arxiv_server import FakeArxiv

CORRUPT_GZIP = b"\x1f\x8b\x08\x00" + b"not really gzip" * 8


def body(fetched: Fetched) -> bytes:
    return fetched.content


async def test_corrupt_gzip_body_is_retried_then_succeeds() -> None:
    clock = FakeClock()
    async with FakeArxiv() as fa, build_http_client("paperwatch-test/0.1") as client:
        fa.serve_raw_next(CORRUPT_GZIP, headers={"Content-Encoding": "gzip"})
        fa.serve_raw_next(b"fine")
        http = PoliteHttp(client, clock, min_interval=3.0, max_tries=3, rng=random.Random(1))
        assert await http.get(fa.url, body) == b"fine"
        assert len(fa.requests) == 2
        assert clock.sleeps == [3.0]


async def test_corrupt_gzip_every_time_is_unavailable_not_an_httpx_error() -> None:
    async with FakeArxiv() as fa, build_http_client("paperwatch-test/0.1") as client:
        fa.serve_raw_next(CORRUPT_GZIP, count=2, headers={"Content-Encoding": "gzip"})
        http = PoliteHttp(client, FakeClock(), max_tries=2, rng=random.Random(1))
        with pytest.raises(ArxivUnavailable, match="undecodable body"):
            await http.get(fa.url, body)
        assert len(fa.requests) == 2
