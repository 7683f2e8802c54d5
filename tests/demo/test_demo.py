"""`python -m bot demo` as a newcomer runs it: a real process, no token, no settings, no internet."""

from __future__ import annotations

import re
import socket
from datetime import UTC, datetime
from pathlib import Path

from bot.demo import ANNOUNCED_WITHIN, DEMO_CATEGORIES, DEMO_TOPIC
from bot.demo.corpus import corpus_bytes, load_corpus
from bot.sources.arxiv_api import parse_feed
from tests.cli.process import run_cli
from tests.shared_files import FIXTURES


def names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_the_corpus_is_the_recorded_arxiv_answer() -> None:
    assert corpus_bytes() == (FIXTURES / "api_query_testing_100.xml").read_bytes()


async def test_demo_runs_the_pipeline_from_backfill_to_cards(tmp_path: Path) -> None:
    # An operator's broken settings and database are none of the demo's business.
    (tmp_path / ".env").write_text("POLL_INTERVAL_MINUTES=often\nDATABASE_PATH=operator.sqlite3\n")
    # No internet: even a proxy that goes nowhere is never used for the loopback arXiv.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{sock.getsockname()[1]}"
    proxies = {
        name: nowhere for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy")
    }
    code, out, err = await run_cli("demo", "--png", "chart.png", env=proxies, cwd=tmp_path)
    assert code == 0, err
    assert err == ""
    papers = [p for p in parse_feed(corpus_bytes()).papers if set(DEMO_CATEGORIES) & set(p.categories)]
    matching = [p for p in papers if DEMO_TOPIC.query.matches(p)]
    # Held back for the announcement: the papers moved into its last hours (no paper is near its edge).
    now = datetime.now(UTC)
    held = {e.paper.arxiv_id for e in load_corpus(now) if now - e.paper.published <= ANNOUNCED_WITHIN}
    held_papers = [p for p in papers if p.arxiv_id in held]
    held_matches = [p for p in held_papers if p in matching]
    assert len(held_papers) > len(held_matches) >= 3  # a few cards, and papers that are not the topic's

    assert out.startswith(
        f"paperwatch demo: a loopback arXiv on 127.0.0.1 serves {len(papers)} real arXiv papers"
    )
    # 1. the backfill, with progress, stores every paper but the three announced later
    assert re.search(r"^\d+ papers stored · 30 windows done, \d+ left · about \d+ s left$", out, re.M)
    assert re.search(r"^\d+ papers stored · all \d+ windows done$", out, re.M)
    stored, matched = len(papers) - len(held_papers), len(matching) - len(held_matches)
    assert f"\n{stored} papers stored; {matched} match the topic 'ML for Software Testing'" in out
    # 2. /momentum's sentence, its weekly counts and the chart as a PNG file
    assert re.search(
        r"^ML for Software Testing: \d+ papers in the last four weeks, up \d+% on the four weeks before\.",
        out,
        re.M,
    )
    assert len(re.findall(r"^  Week of \w{3} \d+ +\d+", out, re.M)) == 12
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # 4. the first poll is history; the announced papers arrive as cards, the matching ones only
    assert f"arXiv announces {len(held_papers)} new papers" in out
    cards = out.split("the next poll finds them:", 1)[1]
    for paper in held_papers:
        assert (paper.abs_url in cards) == (paper in held_matches), paper.arxiv_id
    assert all(paper.title in cards for paper in held_matches)
    assert f"{len(held_matches)} new for ML for Software Testing, posted by discord.py to #papers" in out
    # 3. /follow went through the loopback Discord, and the bot's answer is shown
    follow = out.split("3. /follow ML for Software Testing", 1)[1].split("4. New papers", 1)[0]
    assert "papers in the last four weeks" in follow
    # nothing left behind but the chart: the demo's database was temporary, the operator's untouched
    assert names_in(tmp_path) == [".env", "chart.png"]
