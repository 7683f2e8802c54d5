"""The relevance report: a labels folder is read strictly, each topic is scored with the hierarchy's rule, and
the CLI prints the table with every miss and false hit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.topics.catalog import load_catalog
from bot.topics.relevance import (
    DEFAULT_LABELS,
    LabelsError,
    evaluate,
    half_of,
    load_labels,
    main,
    render_errors,
)

CATALOG_TEXT = """
[[topic]]
slug = "rl"
name = "RL Post-Training"
description = "RL on pretrained models."
definition = "Post-training with rewards. Out: RL from scratch."
query = '"reinforcement learning" AND LLM'

[[topic]]
slug = "dpo"
name = "Direct Preference Optimization"
parent = "rl"
description = "Preference pairs."
definition = "DPO and kin. Out: Bayesian optimisation."
query = 'DPO'

[[topic]]
slug = "vlm"
name = "Vision-Language Models"
description = "Images and text."
definition = "Models of images and text. Out: pure vision."
query = '"vision-language"'
"""

RECORDS = [
    ("2601.00001", "Length Bias in DPO", "We study DPO on chat preference pairs."),
    ("2601.00002", "Exploration in RL for LLM Reasoning", "We train an LLM with reinforcement learning."),
    ("2601.00003", "Parkour from Scratch", "A quadruped learns with reinforcement learning in simulation."),
    (
        "2601.00004",
        "Teaching Models to Search",
        "Agents learn to query a search engine from outcome rewards.",
    ),
    ("2601.00005", "Evaluating RL-Tuned LLMs", "We only evaluate an LLM trained by reinforcement learning."),
    ("2601.00006", "A Vision-Language Benchmark", "A benchmark for vision-language understanding."),
]
LABELS = """arxiv_id,topic,label,note
2601.00001,RL Post-Training,1,preference optimisation
2601.00001,Direct Preference Optimization,1,DPO
2601.00002,RL Post-Training,1,RL on an LLM
2601.00002,dpo,0,not preference optimisation
2601.00003,RL Post-Training,0,from scratch
2601.00004,RL Post-Training,1,"RL on an agent, never says LLM"
2601.00005,RL Post-Training,0,"evaluation only"
2601.00006,Vision-Language Models,1,benchmark
"""


def write_records(folder: Path, records: list[tuple[str, str, str]] = RECORDS) -> None:
    lines = [
        json.dumps({"id": i, "title": t, "abstract": a, "authors": ["Ada Lovelace"], "categories": ["cs.LG"],
                    "primary_category": "cs.LG", "published": "2026-01-02", "source": "test"})
        for i, t, a in records
    ]  # fmt: skip
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A labels folder and a catalog file with the tree rl > dpo, and vlm beside them."""
    labels = tmp_path / "labels"
    labels.mkdir()
    write_records(labels)
    (labels / "labels.csv").write_text(LABELS, encoding="utf-8")
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(CATALOG_TEXT, encoding="utf-8")
    return labels, catalog


def test_each_topic_is_scored_with_the_hierarchy_rule(world: tuple[Path, Path]) -> None:
    labels, catalog_file = world
    catalog = load_catalog(catalog_file)
    results = {r.topic.slug: r for r in evaluate(load_labels(labels, catalog), catalog)}
    rl = results["rl"]
    # The DPO paper never says "reinforcement learning": the parent reaches it through its child.
    assert (rl.positives, rl.negatives, rl.hits) == (3, 2, 2)
    assert [p.arxiv_id for p in rl.misses] == ["2601.00004"]
    assert [p.arxiv_id for p in rl.false_hits] == ["2601.00005"]
    assert rl.recall == pytest.approx(2 / 3) and rl.precision == pytest.approx(2 / 3)
    dpo = results["dpo"]
    assert (dpo.positives, dpo.negatives, dpo.hits, dpo.false_hits) == (1, 1, 1, [])
    assert dpo.depth == 1 and rl.depth == 0
    # No labelled negatives: precision cannot be measured and is not claimed.
    assert results["vlm"].recall == 1.0 and results["vlm"].precision is None


def test_only_the_topics_asked_for_are_scored(world: tuple[Path, Path]) -> None:
    labels, catalog_file = world
    catalog = load_catalog(catalog_file)
    assert [r.topic.slug for r in evaluate(load_labels(labels, catalog), catalog, ["dpo"])] == ["dpo"]


def test_the_cli_prints_the_table_and_every_miss_and_false_hit(
    world: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    labels, catalog = world
    assert main(["--labels", str(labels), "--catalog", str(catalog)]) == 0
    out = capsys.readouterr().out
    rows = {line.strip().split("  ")[0]: line for line in out.splitlines()[1:4]}
    assert rows["RL Post-Training"].split()[-2:] == ["66.7%", "66.7%"]
    assert rows["Direct Preference Optimization"].startswith("  Direct")  # indented under its parent
    assert rows["Vision-Language Models"].split()[-2:] == ["100.0%", "n/a"]
    assert "miss       2601.00004  Teaching Models to Search" in out
    assert "false hit  2601.00005  Evaluating RL-Tuned LLMs" in out


def test_the_cli_scores_one_topic_by_name_or_slug(
    world: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    labels, catalog = world
    assert (
        main(
            ["--labels", str(labels), "--catalog", str(catalog), "--topic", "direct preference optimization"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Direct Preference Optimization" in out and "RL Post-Training" not in out
    assert (
        main(["--labels", str(labels), "--catalog", str(catalog), "--topic", "Underwater Basket Weaving"])
        == 2
    )
    assert "no catalog topic named 'Underwater Basket Weaving'" in capsys.readouterr().err


def test_the_halves_split_the_records_by_id_alone(
    world: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    labels, catalog = world
    ids = [i for i, _, _ in RECORDS]
    halves = {i: half_of(i) for i in ids}
    assert set(halves.values()) == {"A", "B"}  # these ids fall in both halves
    assert halves == {i: half_of(i) for i in ids}
    for half in ("A", "B"):
        assert main(["--labels", str(labels), "--catalog", str(catalog), "--half", half]) == 0
        out = capsys.readouterr().out
        for arxiv_id in ("2601.00004", "2601.00005"):  # a miss and a false hit appear in their own half only
            assert (arxiv_id in out) is (halves[arxiv_id] == half)


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("2601.00001,RL Post-Training,1", r"line 10: expected 4 columns"),
        ("2601.00001,Quantum Basket Weaving,1,x", r"line 10: unknown topic 'Quantum Basket Weaving'"),
        ("2601.00003,dpo,yes,x", r"line 10: label must be 1 \(belongs\) or 0 \(does not\), not 'yes'"),
        ("2609.99999,dpo,1,x", r"line 10: record '2609.99999' is not in records.jsonl"),
        ("2601.00002,Direct Preference Optimization,1,x", r"line 10: 2601.00002 is labelled for .* again \(first on line 5\)"),
    ],
)  # fmt: skip
def test_a_bad_labels_row_is_an_error_naming_the_file_and_line(
    world: tuple[Path, Path], capsys: pytest.CaptureFixture[str], row: str, problem: str
) -> None:
    labels, catalog = world
    with (labels / "labels.csv").open("a", encoding="utf-8") as f:
        f.write(row + "\n")
    with pytest.raises(LabelsError, match=rf"labels\.csv: {problem}"):
        load_labels(labels, load_catalog(catalog))
    assert main(["--labels", str(labels), "--catalog", str(catalog)]) == 2
    assert "labels.csv: line 10" in capsys.readouterr().err


def test_a_bad_header_or_record_is_an_error_naming_the_file_and_line(world: tuple[Path, Path]) -> None:
    labels, catalog_file = world
    catalog = load_catalog(catalog_file)
    (labels / "labels.csv").write_text("id,topic,label\n", encoding="utf-8")
    with pytest.raises(
        LabelsError, match=r"labels\.csv: line 1: the header must be arxiv_id,topic,label,note"
    ):
        load_labels(labels, catalog)
    (labels / "labels.csv").write_text(LABELS, encoding="utf-8")
    with (labels / "records.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"id": "2601.00009", "title": "No abstract"}\n')
    with pytest.raises(LabelsError, match=r"records\.jsonl: line 7: field 'abstract' is missing"):
        load_labels(labels, catalog)
    write_records(labels, [*RECORDS, RECORDS[0]])
    with pytest.raises(LabelsError, match=r"records\.jsonl: line 7: record 2601.00001 appears twice"):
        load_labels(labels, catalog)
    (labels / "records.jsonl").write_text("{not json\n", encoding="utf-8")
    with pytest.raises(LabelsError, match=r"records\.jsonl: line 1: not a JSON object"):
        load_labels(labels, catalog)
    (labels / "records.jsonl").unlink()
    with pytest.raises(LabelsError, match=r"records\.jsonl: cannot read the labels"):
        load_labels(labels, catalog)


def test_the_packaged_labels_name_only_catalog_topics_and_records() -> None:
    catalog = load_catalog()
    labels = load_labels(DEFAULT_LABELS, catalog)
    labelled = {label.slug for label in labels.labels}
    assert "rl-post-training" in labelled and "rl-training-systems" in labelled
    assert len(labels.papers) >= 800


# Each child with 10 or more labelled positives must meet the sub-topic goal (recall 90, precision 80) on the
# whole set, except where the labelled records show it does not: those children are held at the figure reached
# until a review closes the gap, and a child a review lifted above the goal is held there. Each floor is the
# whole-set figure after the last round that moved it; README "Relevance" gives every round, its misses and the
# held-out batches (measured once before joining the set) that lowered some floors.
CHILD_RECALL_FLOOR: dict[str, float] = {
    "process-reward-models": 0.95,
    "reward-modeling": 0.93,
    "rl-code-generation": 0.95,
    "curriculum-rl": 0.89,
    "credit-assignment": 0.92,
    "rlvr": 0.93,
    "multi-objective-rl": 0.94,
    "direct-preference-optimization": 0.94,
    "llm-agent-training": 0.94,
    "rl-multimodal": 0.94,
    "rl-diffusion": 1.0,
    "rl-training-systems": 0.91,
    "rlhf": 0.97,
    "reward-hacking": 0.97,
}
# Precision, the same way: each entry is the whole-set figure after the round or held-out batch that last moved it.
CHILD_PRECISION_FLOOR: dict[str, float] = {
    "direct-preference-optimization": 0.91,
    "llm-agent-training": 0.88,
    "rl-training-systems": 0.85,
    "rl-code-generation": 0.93,
    "rlvr": 0.88,
    "credit-assignment": 0.87,
    "curriculum-rl": 0.92,
    "multi-objective-rl": 0.82,
    "rl-multimodal": 0.9,
    "rl-diffusion": 0.87,
    "process-reward-models": 0.93,
    "reward-modeling": 0.87,
    "rlhf": 0.91,
    "reward-hacking": 0.81,
}


def test_the_packaged_catalog_keeps_its_figures_on_the_development_set() -> None:
    # A regression guard for catalog edits, not a claim about unseen papers: both halves of this set have
    # been read while writing the queries (bot/topics/labels/README.md gives the held-out figures).
    catalog = load_catalog()
    results = {r.topic.slug: r for r in evaluate(load_labels(DEFAULT_LABELS, catalog), catalog)}
    parent = results["rl-post-training"]
    assert (parent.recall or 0) >= 0.95 and (parent.precision or 0) >= 0.90, render_errors([parent])
    children = [r for r in results.values() if r.topic.parent is not None and r.positives >= 10]
    assert len(children) >= 8
    for child in children:
        floor = CHILD_RECALL_FLOOR.get(child.topic.slug, 0.90)
        precision_floor = CHILD_PRECISION_FLOOR.get(child.topic.slug, 0.80)
        assert (child.recall or 0) >= floor, render_errors([child])
        assert (child.precision or 0) >= precision_floor, render_errors([child])


# The topics reviewed in issue 8: each has hand-labelled near misses, so its precision is measured.
REVIEWED = (
    "tool-use", "llm-reasoning", "test-time-scaling", "rag", "long-context", "hallucination",
    "mechanistic-interpretability", "llm-safety", "diffusion-models", "robot-learning", "ai-for-science",
    "recommender-systems", "jailbreaks",
)  # fmt: skip
# Held at the whole-set figures the session-7 rebuilds reached (LLM Safety; Tool Use, LLM Reasoning, Mechanistic
# Interpretability and Long Context), once their held-out batches had joined the set (README "Relevance").
RECALL_FLOOR = {
    "llm-safety": 0.87,
    "tool-use": 0.92, "llm-reasoning": 0.95, "mechanistic-interpretability": 0.95, "long-context": 0.89,
}  # fmt: skip
PRECISION_FLOOR = {
    "tool-use": 0.91, "llm-reasoning": 0.94, "mechanistic-interpretability": 0.95, "long-context": 0.86,
}  # fmt: skip


def test_the_reviewed_topics_have_near_misses_and_keep_their_figures() -> None:
    catalog = load_catalog()
    results = {r.topic.slug: r for r in evaluate(load_labels(DEFAULT_LABELS, catalog), catalog, REVIEWED)}
    assert [slug for slug in REVIEWED if results[slug].positives < 2 or results[slug].negatives < 1] == []
    for slug, result in results.items():
        if result.positives >= 10 and result.negatives >= 5:
            assert (result.recall or 0) >= RECALL_FLOOR.get(slug, 0.8), render_errors([result])
            assert (result.precision or 0) >= PRECISION_FLOOR.get(slug, 0.8), render_errors([result])
