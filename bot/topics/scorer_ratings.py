"""A server's ratings of a topic, as that server's own re-ranking of what the topic posts there.

Ratings are the server's, so they must never change what another server receives: they do not enter the
topic's shared model. Each (server, topic) with ratings gets a `RatingView`, built at the scorer's training
(and at start) from the papers its members rated, as rows of the scorer's features with the net vote of each
(+1 belongs, -1 does not). A new paper is compared with them (cosine, the same features the scorer uses):

- withheld in that server when the rated papers near it (cosine >= NEAR) say "not this topic" on balance by at
  least VETO: a 👎 on a false hit keeps its look-alikes out of that server's channels (the paper is still the
  topic's match everywhere else, and in that server's /latest and /search);
- lifted into that server's suggestions (follows with match: suggested) when they say "belongs" by at least
  LIFT: enough 👍 near a paper the query and the shared scorer missed.

CPU-bound: `verdicts` runs in a worker thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from bot.topics.scorer import Featurizer, paper_text

NEAR = 0.35  # cosine at which a rated paper speaks for a new one
VETO = 0.35  # net weight of "does not belong" that withholds a paper: one clear 👎 neighbour
LIFT = 0.7  # net weight of "belongs" that lifts one: two 👍 neighbours, or one near-twin


@dataclass(frozen=True)
class RatedText:
    arxiv_id: str
    title: str
    abstract: str
    net: int  # 👍 minus 👎 of the server's members


@dataclass(frozen=True)
class RatingView:
    """One server's rated papers of one topic, as feature rows and net votes (+1 / -1)."""

    ids: tuple[str, ...]
    rows: sp.csr_matrix
    votes: np.ndarray

    @classmethod
    def build(cls, featurizer: Featurizer, rated: Sequence[RatedText]) -> RatingView | None:
        """None when no rated paper leans either way (members disagree evenly, or none)."""
        leaning = [r for r in rated if r.net]
        if not leaning:
            return None
        rows = featurizer.transform([paper_text(r.title, r.abstract) for r in leaning])
        votes = np.array([1.0 if r.net > 0 else -1.0 for r in leaning], dtype=np.float32)
        return cls(tuple(r.arxiv_id for r in leaning), rows, votes)

    def balance(self, features: sp.csr_matrix) -> np.ndarray:
        """Per row of `features`: the votes of the rated papers near it, each weighted by its cosine."""
        sims = (features @ self.rows.T).toarray()
        sims[sims < NEAR] = 0.0
        return np.asarray(sims @ self.votes).ravel()

    def verdicts(self, features: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """(withheld, lifted) flags per row."""
        balance = self.balance(features)
        return balance <= -VETO, balance >= LIFT
