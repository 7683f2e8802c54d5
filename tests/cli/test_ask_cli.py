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
