"""How often /ask's extractive answer cites a paper that answers the question, on labelled real papers.

    python bench/ask_eval.py              # the share, then every question whose cited papers miss
    python bench/ask_eval.py --show       # also every answer as /ask would print it

The 826 real arXiv records of bot/topics/labels/records.jsonl go into a real SQLite store (a temporary file);
bench/ask_questions.toml holds the questions, each with the ids of the records that answer it. A question
counts as answered when a paper the answer cites (not merely lists as closest) is one of those. Goal: 80%.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.answers import Answer
from bot.clock import FakeClock
from bot.render.answer import answer_text
from bot.services.ask import AskService
from bot.store import SqliteStore
from bot.topics.catalog import load_catalog
from bot.topics.index import TopicIndex
from bot.topics.relevance import DEFAULT_LABELS, load_labels

QUESTIONS = Path(__file__).resolve().parent / "ask_questions.toml"
GOAL = 0.8


@dataclass(frozen=True)
class Question:
    text: str
    answers: frozenset[str]


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    with path.open("rb") as file:
        data = tomllib.load(file)
    return [Question(q["text"], frozenset(q["answers"])) for q in data["question"]]


def cited(answer: Answer) -> set[str]:
    return {answer.papers[n - 1].arxiv_id for s in answer.statements for n in s.sources}


async def evaluate(questions: list[Question], show: bool) -> float:
    papers = load_labels(DEFAULT_LABELS, load_catalog()).papers
    missing = {a for q in questions for a in q.answers} - set(papers)
    if missing:
        raise SystemExit(f"{QUESTIONS}: ids not in the records: {', '.join(sorted(missing))}")
    clock = FakeClock(datetime(2026, 7, 1, tzinfo=UTC))
    with tempfile.TemporaryDirectory() as folder:
        store = await SqliteStore.open(Path(folder) / "ask-eval.sqlite3", clock)
        try:
            await store.papers.upsert(papers.values(), seen_at=clock.now())
            index = TopicIndex(store, clock)
            await index.start([])
            service = AskService(store, index, clock)
            hits = 0
            for question in questions:
                answer = await service.ask(question.text)
                ok = bool(cited(answer) & question.answers)
                hits += ok
                if show or not ok:
                    mark = "ok  " if ok else "MISS"
                    print(f"{mark} {question.text}  (answering: {', '.join(sorted(question.answers))})")
                    if show or not ok:
                        print("     " + answer_text(answer).replace("\n", "\n     "))
        finally:
            await store.close()
    return hits / len(questions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="print every answer, not only the misses")
    args = parser.parse_args()
    questions = load_questions()
    share = asyncio.run(evaluate(questions, args.show))
    print(
        f"\n{len(questions)} questions over {QUESTIONS.name}: the cited papers include an answering one for "
        f"{share:.0%} (goal {GOAL:.0%})"
    )


if __name__ == "__main__":
    main()
