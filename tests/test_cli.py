"""The command line as a user runs it: a real process, settings from the environment, a loopback arXiv."""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.sources.arxiv_api import parse_feed
from bot.store import Store
from tests.fakes.arxiv_server import FakeArxiv
from tests.shared_files import FIXTURES

REPO = Path(__file__).resolve().parents[1]


async def run_cli(*args: str, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("DISCORD_", "ARXIV_", "DATABASE_"))}
    full_env.update(env)
    full_env["PYTHONPATH"] = str(REPO)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        env=full_env,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_without_token_exits_with_one_clear_line(tmp_path: Path) -> None:
    code, out, err = await run_cli(env={"DATABASE_PATH": str(tmp_path / "db.sqlite3")}, cwd=tmp_path)
    assert code != 0 and out == ""
    assert err.strip().splitlines() == [
        "paperwatch: DISCORD_TOKEN is not set: put your bot token in the environment or in .env (see .env.example)"
    ]


async def test_bad_setting_names_the_variable(tmp_path: Path) -> None:
    code, _, err = await run_cli("stats", env={"POLL_INTERVAL_MINUTES": "often"}, cwd=tmp_path)
    assert code == 2 and "POLL_INTERVAL_MINUTES" in err and "Traceback" not in err


def submitted_an_hour_ago(document: bytes) -> bytes:
    """A recorded page with every submission an hour old: a poll keeps only what lies in the range it asked for."""
    stamp = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    return re.sub(rb"<published>[^<]*</published>", b"<published>" + stamp + b"</published>", document)


async def test_poll_once_stores_every_fixture_paper_with_every_field(tmp_path: Path) -> None:
    current = submitted_an_hour_ago((FIXTURES / "api_query_testing_100.xml").read_bytes())
    legacy = submitted_an_hour_ago((FIXTURES / "api_query_legacy_10.xml").read_bytes())
    expected = parse_feed(current).papers + parse_feed(legacy).papers
    db = tmp_path / "data" / "paperwatch.sqlite3"
    async with FakeArxiv() as arxiv:
        arxiv.serve_raw_next(current)
        arxiv.serve_raw_next(legacy)
        code, out, err = await run_cli(
            "poll",
            "--once",
            env={
                "ARXIV_API_URL": arxiv.url,
                "DATABASE_PATH": str(db),
                "ARXIV_MIN_INTERVAL_SECONDS": "0",
                "ARXIV_CATEGORIES": "cs.LG cs.SE",
            },
            cwd=tmp_path,
        )
    assert code == 0, err
    assert "110 new" in out and "cycle complete" in out
    store = await Store.open(db)
    try:
        assert await store.papers.count() == len(expected) == 110
        for paper in expected:
            assert await store.papers.get(paper.arxiv_id) == paper
    finally:
        await store.close()


async def test_stats_prints_a_week_by_category_table(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = await Store.open(db)
    from datetime import timedelta

    from tests.factories import make_paper

    now = store.clock.now()
    await store.papers.upsert(
        [make_paper(i, published=now - timedelta(days=i), categories=("cs.CL",)) for i in range(10)],
        seen_at=now,
    )
    await store.close()
    code, out, err = await run_cli("stats", "--weeks", "3", env={"DATABASE_PATH": str(db)}, cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("10 papers stored")
    assert lines[1].split() == ["week", "cs.CL"]
    assert sum(int(line.split()[1]) for line in lines[2:]) == 10
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT COUNT(*) FROM papers").fetchone()[0] == 10


async def test_momentum_prints_the_sentence_and_writes_the_chart(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from tests.factories import make_paper

    db = tmp_path / "db.sqlite3"
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    rl = "GRPO post-training of language models for reasoning"
    # 49 papers in the last four weeks, 16 in the four before; kept two days away from every window edge.
    current = [
        make_paper(i, title=rl, published=today - timedelta(days=3 + i % 23, hours=5)) for i in range(49)
    ]
    previous = [make_paper(100 + i, title=rl, published=today - timedelta(days=31 + i)) for i in range(16)]
    others = [
        make_paper(200 + i, title="Graph colouring bounds", published=today - timedelta(days=3 + i % 20))
        for i in range(9751)
    ]
    store = await Store.open(db)
    await store.papers.upsert(current + previous + others, seen_at=datetime.now(UTC))
    await store.close()
    png = tmp_path / "chart.png"
    code, out, err = await run_cli(
        "momentum",
        "RL Post-Training",
        "--png",
        str(png),
        env={"DATABASE_PATH": str(db), "ARXIV_CATEGORIES": "cs.LG cs.AI"},
        cwd=tmp_path,
    )
    assert code == 0, err
    assert out.splitlines()[0] == (
        "RL Post-Training: 49 papers in the last four weeks, up 206% on the four weeks before. "
        "0.5% of all new papers."
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


async def test_match_lists_what_a_query_finds(tmp_path: Path) -> None:
    from tests.factories import make_paper

    db = tmp_path / "db.sqlite3"
    store = await Store.open(db)
    papers = [
        make_paper(1, title="Speculative decoding with Medusa heads"),
        make_paper(2, title="Graph colouring"),
    ]
    await store.papers.upsert(papers, seen_at=store.clock.now())
    await store.close()
    code, out, err = await run_cli(
        "match", "--query", "ti:medusa", env={"DATABASE_PATH": str(db)}, cwd=tmp_path
    )
    assert code == 0, err
    assert out.splitlines()[0] == "1 stored paper matches 'ti:medusa'"
    assert "Speculative decoding with Medusa heads" in out
    code, _, err = await run_cli(
        "match", "--query", "ti:(medusa", env={"DATABASE_PATH": str(db)}, cwd=tmp_path
    )
    assert code == 2 and "position" in err and "Traceback" not in err


async def test_watch_prints_new_matching_papers_as_cards(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from tests.factories import make_paper

    now = datetime.now(UTC)
    grpo = make_paper(
        1, title="GRPO post-training for reasoning language models", published=now - timedelta(hours=2)
    )
    other = make_paper(2, title="Graph colouring bounds", published=now - timedelta(hours=3))
    async with FakeArxiv([grpo, other]) as arxiv:
        code, out, err = await run_cli(
            "watch",
            "RL Post-Training",
            "--once",
            env={
                "ARXIV_API_URL": arxiv.url,
                "DATABASE_PATH": str(tmp_path / "db.sqlite3"),
                "ARXIV_MIN_INTERVAL_SECONDS": "0",
                "ARXIV_CATEGORIES": "cs.LG cs.AI",
            },
            cwd=tmp_path,
        )
    assert code == 0, err
    assert out.startswith("Watching RL Post-Training: ")
    assert "GRPO post-training for reasoning language models" in out
    assert "Graph colouring bounds" not in out
    # a fresh database: the first poll's papers are history, shown as the latest matches and not as new ones
    assert out.rstrip().endswith("0 new for RL Post-Training")
