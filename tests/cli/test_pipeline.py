"""`poll --once` reads arXiv's RSS announcement feed after the API and says what it brought."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from bot.cli import main
from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv, rss_feed
from bot.store import open_store
from tests.factories import make_paper

NOW = FakeClock().now()  # what the command's clock reads


async def test_poll_once_reads_the_feed_after_the_api_and_prints_both(
    cli_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recent = make_paper(1, published=NOW - timedelta(hours=20))
    late = make_paper(2, published=NOW - timedelta(days=9))  # older than the poll's range
    db = cli_env / "db.sqlite3"
    async with LoopbackArxiv([recent, late]) as arxiv:
        arxiv.set_rss(rss_feed([(recent, "new"), (late, "new")], announced=NOW), cats="cs.AI+cs.LG")
        for name, value in {
            "ARXIV_API_URL": arxiv.url,
            "ARXIV_RSS_URL": arxiv.rss_url,
            "DATABASE_PATH": str(db),
            "ARXIV_MIN_INTERVAL_SECONDS": "0",
            "ARXIV_CATEGORIES": "cs.AI cs.LG",
        }.items():
            monkeypatch.setenv(name, value)
        code = await asyncio.to_thread(main, ["poll", "--once"], clock=FakeClock())
        out, err = capsys.readouterr()
    assert code == 0, err
    api, rss, total = out.splitlines()
    assert api.startswith("arxiv-api:cs.AI,cs.LG: 1 papers fetched") and "1 new" in api
    assert rss == (
        "arxiv-rss:cs.AI,cs.LG: 2 papers announced in the watched categories, 1 new to the store, "
        "0 new versions; 1 completed from the API"
    )
    assert total == f"2 papers in {db}"
    async with await open_store(db) as store:
        assert await store.papers.get(late.arxiv_id) == late


async def test_watch_shows_a_paper_only_the_feed_announces_as_a_new_card(
    cli_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    late = make_paper(
        3, title="GRPO post-training for reasoning language models", published=NOW - timedelta(days=9)
    )
    async with LoopbackArxiv([late]) as arxiv:
        arxiv.set_rss(rss_feed([(late, "new")], announced=NOW), cats="cs.LG")
        for name, value in {
            "ARXIV_API_URL": arxiv.url,
            "ARXIV_RSS_URL": arxiv.rss_url,
            "DATABASE_PATH": str(cli_env / "db.sqlite3"),
            "ARXIV_MIN_INTERVAL_SECONDS": "0",
            "ARXIV_CATEGORIES": "cs.LG",
        }.items():
            monkeypatch.setenv(name, value)
        code = await asyncio.to_thread(main, ["watch", "RL Post-Training", "--once"], clock=FakeClock())
        out, err = capsys.readouterr()
    assert code == 0, err
    header, cards = out.split("New papers will appear below as they are announced (Ctrl+C to stop).\n")
    assert "GRPO post-training" not in header  # not history: the first poll did not bring it
    assert "GRPO post-training for reasoning language models" in cards and "New in cs.LG" in cards
    assert "arxiv-rss:cs.LG: 1 papers announced in the watched categories, 1 new to the store" in cards
    assert cards.rstrip().endswith("1 new for RL Post-Training")
