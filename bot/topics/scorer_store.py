"""The trained scorers in one archive: kept in the database (`Store.scorer_models`, shared by every process of
a deployment) and, as its local copy, in a file beside it that the scorer's child process reads.

A NumPy `.npz` archive without pickles (loading it runs no code, whoever wrote the file): a JSON header with
the format version and each topic's status, the featurizer's IDF, and each scored topic's weights (float16:
its non-zero ones, or one per column when that is smaller).
It is written to a temporary file and renamed over the old one, so a crash leaves the old model. A missing,
damaged or older-format file reads as None, and the caller trains again: never fatal.
"""

from __future__ import annotations

import json
import logging
import os
import zipfile
from pathlib import Path

import numpy as np

from bot.topics.scorer import HELD, N_FEATURES, Featurizer, LinearWeights, ScorerSet, TopicScorer

log = logging.getLogger(__name__)

# 2: a topic's weights may be kept dense (one float32 per column), when that is smaller; 3: float16 weights.
FORMAT = 3
READABLE = (
    1,
    2,
    FORMAT,
)  # formats 1 (non-zero float32 weights only) and 2 read as before, narrowed to float16
MODEL_FILE = "scorer-model.npz"


def save(scorers: ScorerSet, path: Path) -> None:
    topics = {}
    arrays: dict[str, np.ndarray] = {
        "idf": scorers.featurizer.idf,
        "trained_on": np.array(sorted(scorers.trained_on), dtype=str),
    }
    for number, (key, scorer) in enumerate(scorers.topics.items()):
        entry = {
            "key": key,
            "query": scorer.query,
            "status": scorer.status,
            "why": scorer.why,
            "intercept": scorer.intercept,
            "threshold": scorer.threshold if scorer.scored else None,
            "positives": scorer.positives,
            "negatives": scorer.negatives,
            "estimated_precision": scorer.estimated_precision,
            "estimated_recall": scorer.estimated_recall,
            "held_out_suggestions": sorted(scorer.held_out_suggestions),
            "weights": None,
        }
        weights = scorer.coef
        if weights is not None and weights.columns is None:
            arrays[f"w{number}_dense"] = weights.values.astype(HELD)
            entry["weights"], entry["dense"] = f"w{number}", True
        elif weights is not None and weights.columns is not None:
            arrays[f"w{number}_columns"] = weights.columns.astype(np.int32)
            arrays[f"w{number}_values"] = weights.values.astype(HELD)
            entry["weights"] = f"w{number}"
        topics[str(number)] = entry
    header = {
        "format": FORMAT,
        "n_features": N_FEATURES,
        "documents": scorers.featurizer.documents,
        "top_terms": scorers.featurizer.top_terms,
        "topics": topics,
    }
    arrays["header"] = np.array(json.dumps(header))
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as out:
        np.savez(out, **arrays)  # type: ignore[arg-type]  # numpy's stubs want positional arrays here
    os.replace(partial, path)


def write_blob(blob: bytes, path: Path) -> None:
    """A model archive read from the store, written as the local model file (atomically, as `save`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(blob)
    os.replace(partial, path)


def load(path: Path, *, weights: bool = True) -> ScorerSet | None:
    """The scorers saved at `path`; None (logged) when the file is missing, damaged or of another format.
    Without `weights`, each topic's status, threshold and the featurizer only: what the bot's own process
    needs (the scoring process reads the weights, 25 MiB for 50 dense topics; the sampled ids neither)."""
    try:
        return _load(path, weights)
    except FileNotFoundError:
        log.debug("no scorer model at %s yet: it will be trained", path)
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError) as exc:
        log.warning("the scorer model at %s is unreadable (%s): it will be trained again", path, exc)
    return None


def _load(path: Path, weights: bool) -> ScorerSet:
    with np.load(path, allow_pickle=False) as arrays:
        header = json.loads(str(arrays["header"]))
        if header.get("format") not in READABLE or header.get("n_features") != N_FEATURES:
            raise ValueError(f"format {header.get('format')!r}, expected one of {READABLE}")
        idf = arrays["idf"].astype(np.float32)
        if idf.shape != (N_FEATURES,):
            raise ValueError("the IDF has the wrong shape")
        scorers = ScorerSet(
            Featurizer(idf, int(header["documents"]), int(header["top_terms"])),
            trained_on=frozenset(arrays["trained_on"].tolist()) if weights else frozenset(),
        )
        for entry in header["topics"].values():
            coef = None
            if not weights:
                pass
            elif entry["weights"] is not None and entry.get("dense"):
                dense = arrays[entry["weights"] + "_dense"]
                if dense.shape != (N_FEATURES,) or not np.all(np.isfinite(dense)):
                    raise ValueError("a topic's weights are damaged")
                coef = LinearWeights(dense.astype(HELD))
            elif entry["weights"] is not None:
                columns = arrays[entry["weights"] + "_columns"].astype(np.int32)
                values = arrays[entry["weights"] + "_values"]
                if columns.shape != values.shape or (
                    len(columns) and not 0 <= columns.min() <= columns.max() < N_FEATURES
                ):
                    raise ValueError("a topic's weights are damaged")
                order = np.argsort(columns, kind="stable")
                coef = LinearWeights.sparse(columns[order], values[order])
            threshold = entry["threshold"]
            scorers.topics[entry["key"]] = TopicScorer(
                query=entry["query"],
                status=entry["status"] if entry["status"] in ("scored", "query-only") else "query-only",
                why=entry["why"],
                coef=coef,
                intercept=float(entry["intercept"]),
                threshold=float("inf") if threshold is None else float(threshold),
                positives=int(entry["positives"]),
                negatives=int(entry["negatives"]),
                estimated_precision=entry["estimated_precision"],
                estimated_recall=entry["estimated_recall"],
                held_out_suggestions=frozenset(entry["held_out_suggestions"]) if weights else frozenset(),
            )
    return scorers
