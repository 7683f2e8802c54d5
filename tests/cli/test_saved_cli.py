"""`python -m bot saved --user ID [--bibtex]` as an operator runs it: a real process on a real database."""

from __future__ import annotations

from pathlib import Path

import bibtexparser

from bot.clock import SystemClock
from bot.store import open_store
from tests.cli.process import run_cli
from tests.factories import GRPO, ROBOT

ALICE = 123456789012345678


async def test_saved_lists_and_exports_a_members_reading_list(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = await open_store(db)
    now = SystemClock().now()
    await store.papers.upsert([GRPO, ROBOT], seen_at=now)
    await store.saved.save(ALICE, GRPO.arxiv_id, now)
    await store.saved.save(ALICE, ROBOT.arxiv_id, now)
    await store.close()
    env = {"DATABASE_PATH": str(db)}

    code, out, err = await run_cli("saved", "--user", str(ALICE), env=env, cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].split()[1:3] == [ROBOT.arxiv_id, "Sim-to-real"] and GRPO.arxiv_id in lines[2]

    code, out, err = await run_cli("saved", "--user", str(ALICE), "--bibtex", env=env, cwd=tmp_path)
    assert code == 0, err
    library = bibtexparser.parse_string(out)
    assert library.failed_blocks == []
    assert [e["eprint"] for e in library.entries] == [ROBOT.arxiv_id, GRPO.arxiv_id]
    assert {e["primaryClass"] for e in library.entries} == {"cs.RO", "cs.LG"}


async def test_an_empty_list_or_a_bad_id_says_what_to_do(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    await (await open_store(db)).close()
    env = {"DATABASE_PATH": str(db)}
    code, out, err = await run_cli("saved", "--user", "42", "--bibtex", env=env, cwd=tmp_path)
    assert code == 2 and "reading list is empty" in err and out == ""
    code, out, err = await run_cli("saved", "--user", "alice", env=env, cwd=tmp_path)
    assert code == 2 and "'alice' is not a whole number" in err
