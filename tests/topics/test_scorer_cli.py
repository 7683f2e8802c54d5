"""`python -m bot scorer train|status` as an operator runs it (a real process on a real database), and the
evaluation on labelled papers (`python bench/scorer_eval.py`) on a small labels folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.scorer_eval import main as eval_main
from bot.clock import SystemClock
from bot.store import open_store
from bot.topics.scorer_training import scorer_folder
from tests.cli.process import run_cli
from tests.factories import GRPO, ROBOT


def line_of(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(name + "  "))


async def test_train_learns_from_the_labels_and_status_reads_the_model_back(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = await open_store(db)
    await store.papers.upsert([GRPO, ROBOT], seen_at=SystemClock().now())
    await store.close()
    env = {"DATABASE_PATH": str(db)}

    code, out, err = await run_cli("scorer", "status", env=env, cwd=tmp_path)
    assert code == 0, err
    assert "has not been trained yet" in line_of(out, "RL Post-Training")

    code, out, err = await run_cli("scorer", "train", env=env, cwd=tmp_path)
    assert code == 0, err
    # RL Post-Training has 153 labelled positives: enough to learn from, even on a history of two papers
    assert "scored" in line_of(out, "RL Post-Training")
    # Offline RL has 3 labelled positives and no query match here: it stays query-only, and says why
    assert "query-only   too few papers to learn from" in line_of(out, "Offline RL")
    model = scorer_folder(db) / "scorer-model.npz"
    assert model.exists()

    code, again, err = await run_cli("scorer", "status", env=env, cwd=tmp_path)
    assert code == 0, err
    assert line_of(again, "RL Post-Training") == line_of(out, "RL Post-Training")

    store = await open_store(db)
    stored = await store.scorer_models.get()
    assert stored is not None  # the model every process reads: in the database
    await store.scorer_models.put(b"damaged", format_version=stored.format_version, at=stored.trained_at)
    await store.close()  # never fatal: read as untrained, then rebuilt
    code, out, err = await run_cli("scorer", "status", env=env, cwd=tmp_path)
    assert code == 0 and "Traceback" not in err
    assert "has not been trained yet" in line_of(out, "RL Post-Training")
    code, out, err = await run_cli("scorer", "train", env=env, cwd=tmp_path)
    assert code == 0, err
    assert "scored" in line_of(out, "RL Post-Training")


async def test_scorer_needs_an_existing_database(tmp_path: Path) -> None:
    code, out, err = await run_cli(
        "scorer", "train", env={"DATABASE_PATH": str(tmp_path / "none.sqlite3")}, cwd=tmp_path
    )
    assert code == 2 and out == ""
    assert "no database at" in err and not (tmp_path / "none.sqlite3").exists()


def labels_folder(tmp_path: Path) -> Path:
    """A small labelled set: RL post-training papers that say so or not, and papers of other fields."""
    folder = tmp_path / "labels"
    folder.mkdir()
    records, rows = [], ["arxiv_id,topic,label,note"]
    for n in range(180):
        belongs = n % 3 == 0
        if belongs:
            title = f"Reinforcement learning post-training of LLM reasoning, study {n}"
            abstract = "We post-train a language model with GRPO on verifiable rewards and rollouts."
        else:
            title = f"Semantic segmentation of street scenes, study {n}"
            abstract = "A convolutional backbone segments images into masks on driving benchmarks."
        arxiv_id = f"2606.{10000 + n:05d}"
        records.append({"id": arxiv_id, "title": title, "abstract": abstract})
        rows.append(f"{arxiv_id},RL Post-Training,{int(belongs)},made up")
    (folder / "records.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    (folder / "labels.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def test_the_evaluation_reads_only_the_half_it_did_not_train_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = eval_main(
        [
            *("--labels", str(labels_folder(tmp_path)), "--filler", "200", "--topic", "RL Post-Training"),
            *("--min-positives", "20"),  # the made-up set is small
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    header, row = out.splitlines()[:2]
    assert "query R / P" in header and "query+suggested R / P" in header
    cells = row.split()
    # the held-out half of 180 records (by a hash of the id) holds 90 or so, a third of them positive
    positives, negatives = int(cells[2]), int(cells[3])
    assert 20 <= positives <= 40 and 45 <= negatives <= 75
    assert cells[4] == "scored"


def test_the_evaluation_names_an_unknown_topic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_main(["--labels", str(labels_folder(tmp_path)), "--topic", "No Such Topic"]) == 2
    assert "no catalog topic named 'No Such Topic'" in capsys.readouterr().err
