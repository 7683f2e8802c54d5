"""Similar: the stored papers nearest to one paper by the learned scorer's features, for a card's button."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bot.models import Paper
from bot.services.ratings import PaperGone
from bot.store import Store
from bot.topics.scorer import Featurizer, paper_text
from bot.topics.scorer_similar import nearest, telling_words
from bot.topics.scorer_training import LearnedScorer

SIMILAR_SHOWN = 5
CANDIDATES = 100  # papers compared by features: bounds a click's work at any history size
WORDS = 8  # telling words that find the candidates


@dataclass(frozen=True)
class SimilarPapers:
    paper: Paper
    nearest: list[tuple[Paper, float]]  # (paper, cosine), best first


class SimilarService:
    def __init__(self, store: Store, scorer: LearnedScorer | None = None) -> None:
        self.store = store
        self.scorer = scorer

    def _trained(self) -> Featurizer | None:
        scorer = self.scorer
        return scorer.scorers.featurizer if scorer is not None and scorer.scorers is not None else None

    async def similar(self, arxiv_id: str, count: int = SIMILAR_SHOWN) -> SimilarPapers:
        """The `count` stored papers nearest to a stored one. Raises PaperGone. Before the scorer's first
        training there is no IDF of the history: the words are weighed by their count in the paper, and the
        candidates compared under an IDF fitted on them (the same features, a smaller sample)."""
        paper = await self.store.papers.get(arxiv_id)
        if paper is None:
            raise PaperGone(arxiv_id)
        trained = self._trained()
        featurizer = trained if trained is not None else await asyncio.to_thread(_fit, [paper])
        words = await asyncio.to_thread(telling_words, featurizer, paper, WORDS)
        candidates = await self.store.similar.candidates(paper.arxiv_id, words, limit=CANDIDATES)
        if trained is None and candidates:
            featurizer = await asyncio.to_thread(_fit, [paper, *candidates])
        found = await asyncio.to_thread(nearest, featurizer, paper, candidates, count)
        return SimilarPapers(paper, found)


def _fit(papers: list[Paper]) -> Featurizer:
    return Featurizer.fit(paper_text(p.title, p.abstract) for p in papers)
