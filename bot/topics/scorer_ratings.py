"""A server's ratings of a topic, as that server's own re-ranking of what the topic posts there.

Ratings are the server's, so they must never change what another server receives: they do not enter the
topic's shared model. Each (server, topic) with ratings gets a `RatingView`, built at the scorer's training
(and at start) from the papers its members rated, as rows of the scorer's features with the net vote of each
(+1 belongs, -1 does not). A new paper is compared with them (cosine, the same features the scorer uses):

- withheld in that server when the rated paper closest to it is a 👎 one, at cosine >= NEAR and MARGIN times
  closer than any kept paper (a 👍 one, or one of the topic's matches nobody rejected: the papers the channel
  received and let stand): a 👎 on a false hit keeps its look-alikes out of that server's channels, never the
  papers that look more like the topic's others (the paper is still the topic's match everywhere else, and in
  that server's /latest and /search);
- lifted into that server's suggestions (follows with match: suggested) when the two rated papers closest to
  it are 👍 ones, each at cosine >= LIFT_NEAR: enough 👍 near a paper the query and the shared scorer missed.

A nearest-neighbour rule rather than a model: a few dozen ratings cannot retrain a logistic regression fitted
on hundreds of matches, but each can speak for the papers that look like it (bench/ratings_eval.py).

CPU-bound: `verdicts` runs in a worker thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from bot.topics.scorer import Featurizer, paper_text

NEAR = 0.08  # cosine above which the closest rated paper speaks for a new one (unrelated papers: ~0-0.05)
MARGIN = (
    1.5  # how much closer than the closest kept paper the 👎 one must be: a paper between the two is kept
)
ANCHORS = 500  # of the topic's matches nobody rejected, compared as kept papers (a sample bounds the work)
LIFT_NEAR = 0.2  # cosine each of the two closest rated papers needs to lift a paper the topic missed


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
    kept: sp.csr_matrix  # rows of the topic's matches nobody rejected (0 rows: none given)

    @classmethod
    def build(
        cls, featurizer: Featurizer, rated: Sequence[RatedText], kept: Sequence[tuple[str, str]] = ()
    ) -> RatingView | None:
        """From the rated papers and (title, abstract) of the topic's matches nobody rejected; None when no
        rated paper leans either way (members disagree evenly, or none)."""
        leaning = [r for r in rated if r.net]
        if not leaning:
            return None
        rows = featurizer.transform([paper_text(r.title, r.abstract) for r in leaning])
        votes = np.array([1.0 if r.net > 0 else -1.0 for r in leaning], dtype=np.float32)
        kept_rows = (
            featurizer.transform([paper_text(title, abstract) for title, abstract in kept])
            if kept
            else sp.csr_matrix((0, rows.shape[1]), dtype=np.float32)
        )
        return cls(tuple(r.arxiv_id for r in leaning), rows, votes, kept_rows)

    def verdicts(self, features: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """(withheld, lifted) flags per row of `features`."""
        sims = (features @ self.rows.T).toarray()
        n = sims.shape[0]
        if sims.shape[1] == 0:
            return np.zeros(n, bool), np.zeros(n, bool)
        order = np.argsort(-sims, axis=1, kind="stable")
        first = order[:, 0]
        best = sims[np.arange(n), first]
        closest_kept = np.where(self.votes > 0, sims, 0.0).max(axis=1)
        if self.kept.shape[0]:
            closest_kept = np.maximum(closest_kept, (features @ self.kept.T).toarray().max(axis=1))
        withheld = (self.votes[first] < 0) & (best >= NEAR) & (best >= MARGIN * closest_kept)
        if sims.shape[1] < 2:
            return withheld, np.zeros(n, bool)
        second = order[:, 1]
        lifted = (
            (self.votes[first] > 0) & (self.votes[second] > 0) & (sims[np.arange(n), second] >= LIFT_NEAR)
        )
        return withheld, lifted
