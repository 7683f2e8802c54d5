"""`python -m bot ask` as a real process over a real database."""

from __future__ import annotations

from pathlib import Path

from bot.clock import SystemClock
from bot.store import open_store
from tests.cli.process import run_cli
from tests.factories import make_paper

GRPO = make_paper(
    1,
    title="Group relative policy optimization for math reasoning",
    abstract="We post-train a language model with GRPO on verifiable rewards. "
    "GRPO drops the value network and normalises rewards within a group of sampled answers.",
)
ROBOT = make_paper(2, title="Legged robots", abstract="A quadruped learns to walk on ice with careful steps.")


async def test_ask_prints_cited_sentences_and_the_numbered_papers(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = await open_store(db)
    await store.papers.upsert([GRPO, ROBOT], seen_at=SystemClock().now())
    await store.close()
    env = {"DATABASE_PATH": str(db)}
    code, out, err = await run_cli("ask", "How does GRPO normalise rewards?", env=env, cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Q: How does GRPO normalise rewards?"
    assert lines[1] == (
        "  GRPO drops the value network and normalises rewards within a group of sampled answers. [1]"
    )
    assert "[1] Group relative policy optimization for math reasoning" in out
    assert f"https://arxiv.org/abs/{GRPO.arxiv_id}" in out and "Legged robots" not in out

    code, out, err = await run_cli("ask", "   ", env=env, cwd=tmp_path)
    assert code == 2 and "Ask a question in words" in err and "Traceback" not in err
    code, out, err = await run_cli("ask", "GRPO", "--topic", "No Such Topic", env=env, cwd=tmp_path)
    assert code == 2 and "no catalog topic named 'No Such Topic'" in err
    code, out, err = await run_cli("ask", "GRPO", "--since", "soon", env=env, cwd=tmp_path)
    assert code == 2 and "YYYY-MM-DD" in err


async def test_brief_prints_what_moved_in_a_catalog_topic(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    db = tmp_path / "db.sqlite3"
    now = datetime.now(UTC)
    papers = [
        make_paper(
            10 + i,
            title=f"GRPO post-training with verifiable rewards for math reasoning {i}",
            abstract="We post-train language models with GRPO and a process reward model on math problems.",
            published=now - timedelta(days=2 + i),
        )
        for i in range(3)
    ]
    store = await open_store(db)
    await store.papers.upsert(papers, seen_at=now)
    await store.close()
    env = {"DATABASE_PATH": str(db)}
    code, out, err = await run_cli("brief", "RL Post-Training", "--weeks", "2", env=env, cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("RL Post-Training, last 2 weeks (") and lines[0].endswith(
        ": 3 papers (0 in the 4 weeks before)"
    )
    assert '"process reward model" (3, was 0)' in out
    assert "Institutions: University of London (3)" in out
    assert f"https://arxiv.org/abs/{papers[0].arxiv_id}" in out
    code, _, err = await run_cli("brief", "RL Post-Training", "--weeks", "13", env=env, cwd=tmp_path)
    assert code == 2 and "1 to 12" in err
