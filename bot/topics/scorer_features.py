"""Every stored paper's scorer features, computed once and kept in files beside the model.

A new topic's history scan scores every stored paper, and a retrain reads the rows of each topic's matches and
of a random sample: recomputing TF-IDF for a million papers would take minutes, reading them back takes a
second. The rows are appended in chunks, each in the order the store assigned its papers (`position`), so the
next sync asks the store only for papers after the last position kept.

A chunk is one `.npz` file (CSR arrays and the arXiv ids of its rows). The folder's `features.json` lists the
chunks and the featurizer they were computed with (a fingerprint of its IDF); the chunk files are written
first, then the list is replaced atomically, so a crash leaves the previous list valid. Anything unreadable
(a missing or corrupt chunk, another featurizer, another format) makes `FeatureFile.open` start empty: the
rows are rebuilt from the store, never fatal.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from bot.topics.scorer import N_FEATURES, Featurizer

log = logging.getLogger(__name__)

FORMAT = 1
INDEX = "features.json"
CHUNK_ROWS = 50_000


def fingerprint(featurizer: Featurizer) -> str:
    """Which featurizer computed a row: rows of another one are not comparable."""
    digest = hashlib.sha256(featurizer.idf.tobytes())
    digest.update(f"{featurizer.top_terms}:{N_FEATURES}".encode())
    return digest.hexdigest()[:16]


@dataclass
class Chunk:
    """One chunk of rows: held in memory (no folder), or read from its file when used, so a million papers'
    rows never sit in memory at once."""

    rows: int
    last_position: int  # the store position of the chunk's last paper
    file: Path | None = None
    held: tuple[np.ndarray, sp.csr_matrix] | None = None

    def load(self) -> tuple[np.ndarray, sp.csr_matrix]:
        """(arXiv ids, rows as float32 CSR)."""
        if self.held is not None:
            return self.held
        assert self.file is not None
        return _load_chunk(self.file)


class FeatureFile:
    """Feature rows of stored papers, in memory and (with a folder) on disk."""

    def __init__(self, featurizer: Featurizer, folder: Path | None = None) -> None:
        self.featurizer = featurizer
        self.folder = folder
        self.chunks: list[Chunk] = []
        self._pending_ids: list[str] = []
        self._pending_rows: list[sp.csr_matrix] = []
        self._pending_position = 0

    @classmethod
    def open(cls, featurizer: Featurizer, folder: Path) -> FeatureFile:
        """The rows kept in `folder` for this featurizer; an empty file when there are none or they are
        unreadable (logged: they will be rebuilt)."""
        features = cls(featurizer, folder)
        try:
            features.chunks = _read(folder, fingerprint(featurizer))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError) as exc:
            log.warning(
                "scorer features in %s are unreadable (%s): rebuilding them from the store", folder, exc
            )
            shutil.rmtree(folder, ignore_errors=True)
        return features

    def __len__(self) -> int:
        return sum(c.rows for c in self.chunks) + len(self._pending_ids)

    @property
    def last_position(self) -> int:
        """The store position of the last paper with a row (0: none)."""
        if self._pending_ids:
            return self._pending_position
        return self.chunks[-1].last_position if self.chunks else 0

    def add(self, ids: Sequence[str], texts: Sequence[str], last_position: int) -> None:
        """Featurize papers that follow the last position kept; written to disk as chunks fill up."""
        if ids:
            self._pending_ids.extend(ids)
            self._pending_rows.append(self.featurizer.transform(texts))
        self._pending_position = last_position
        if len(self._pending_ids) >= CHUNK_ROWS:
            self.flush()

    def flush(self) -> None:
        """Turn what was added into a chunk, and write the folder's list when there is a folder."""
        if self._pending_ids:
            ids = np.array(self._pending_ids)
            matrix = sp.csr_matrix(sp.vstack(self._pending_rows), dtype=np.float32)
            chunk = Chunk(len(ids), self._pending_position)
            if self.folder is None:
                chunk.held = (ids, matrix)
            else:
                chunk.file = _write_chunk(self.folder, len(self.chunks), ids, matrix, self._pending_position)
            self.chunks.append(chunk)
            self._pending_ids, self._pending_rows = [], []
        if self.folder is not None and self.chunks:
            _write_index(self.folder, fingerprint(self.featurizer), self.chunks)

    def each_chunk(self) -> Iterator[tuple[np.ndarray, sp.csr_matrix]]:
        """(ids, rows) of every chunk, in store order."""
        self.flush()
        for chunk in self.chunks:
            yield chunk.load()

    def rows(self, ids: Sequence[str]) -> tuple[list[str], sp.csr_matrix]:
        """The rows of those ids that have one, in store order, with their ids."""
        wanted = np.array(list(ids)) if ids else np.array([], dtype=str)
        found_ids: list[str] = []
        parts: list[sp.csr_matrix] = []
        for chunk_ids, matrix in self.each_chunk():
            mask = np.isin(chunk_ids, wanted)
            if mask.any():
                found_ids.extend(chunk_ids[mask].tolist())
                parts.append(matrix[np.flatnonzero(mask)])
        return found_ids, self._stack(parts)

    def sample(
        self, count: int, rng: np.random.Generator, excluded: Sequence[str] = ()
    ) -> tuple[list[str], sp.csr_matrix, int]:
        """`count` rows drawn uniformly from those whose id is not `excluded`, with their ids and how many
        rows were eligible."""
        self.flush()
        banned = np.array(list(excluded)) if excluded else np.array([], dtype=str)
        total = len(self) - (len(np.unique(banned)) if len(banned) else 0)  # excluded ids are stored ones
        if total <= 0 or count <= 0:
            return [], self._stack([]), max(total, 0)
        # Draw positions among all rows, a few more than needed, and drop the excluded ones: one pass.
        spare = min(len(self), count + len(banned))
        picks = np.sort(rng.choice(len(self), size=spare, replace=False))
        found_ids: list[str] = []
        parts: list[sp.csr_matrix] = []
        offset = 0
        for chunk in self.chunks:
            mine = picks[(picks >= offset) & (picks < offset + chunk.rows)] - offset
            offset += chunk.rows
            if len(mine):
                ids, matrix = chunk.load()
                mine = mine[~np.isin(ids[mine], banned)]
                found_ids.extend(ids[mine].tolist())
                parts.append(matrix[mine])
        keep = (
            rng.permutation(len(found_ids))[:count] if len(found_ids) > count else np.arange(len(found_ids))
        )
        keep.sort()
        stacked = self._stack(parts)
        return [found_ids[i] for i in keep], stacked[keep], total

    @staticmethod
    def _stack(parts: list[sp.csr_matrix]) -> sp.csr_matrix:
        if not parts:
            return sp.csr_matrix((0, N_FEATURES), dtype=np.float32)
        return sp.csr_matrix(sp.vstack(parts), dtype=np.float32)


def _chunk_name(number: int) -> str:
    return f"chunk-{number:05d}.npz"


def _write_chunk(folder: Path, number: int, ids: np.ndarray, matrix: sp.csr_matrix, last: int) -> Path:
    """Rows are kept as float16 (a TF-IDF weight needs no more) and int32 columns: 6 bytes a term."""
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / _chunk_name(number)
    partial = folder / (_chunk_name(number) + ".partial")
    with partial.open("wb") as out:
        np.savez(
            out,
            ids=ids,
            data=matrix.data.astype(np.float16),
            indices=matrix.indices.astype(np.int32),
            indptr=matrix.indptr.astype(np.int64),
            last_position=np.array([last]),
        )
    os.replace(partial, final)
    return final


def _load_chunk(path: Path) -> tuple[np.ndarray, sp.csr_matrix]:
    with np.load(path, allow_pickle=False) as arrays:
        ids = arrays["ids"]
        matrix = sp.csr_matrix(
            (arrays["data"].astype(np.float32), arrays["indices"], arrays["indptr"]),
            shape=(len(ids), N_FEATURES),
        )
    return ids, matrix


def _write_index(folder: Path, print_: str, chunks: Sequence[Chunk]) -> None:
    index = {
        "format": FORMAT,
        "featurizer": print_,
        "chunks": [
            {"file": _chunk_name(i), "rows": c.rows, "last_position": c.last_position}
            for i, c in enumerate(chunks)
        ],
    }
    partial = folder / (INDEX + ".partial")
    partial.write_text(json.dumps(index), encoding="utf-8")
    os.replace(partial, folder / INDEX)


def _read(folder: Path, print_: str) -> list[Chunk]:
    index = json.loads((folder / INDEX).read_text(encoding="utf-8"))
    if index.get("format") != FORMAT:
        raise ValueError(f"format {index.get('format')!r}, expected {FORMAT}")
    if index.get("featurizer") != print_:
        raise ValueError("computed with another featurizer")
    chunks = []
    for entry in index["chunks"]:
        path = folder / entry["file"]
        ids, matrix = _load_chunk(path)  # read whole once: a damaged file fails here, not in a later scan
        if len(ids) != entry["rows"] or matrix.nnz != len(matrix.data):
            raise ValueError(f"{entry['file']} holds {len(ids)} rows, the list says {entry['rows']}")
        chunks.append(Chunk(len(ids), int(entry["last_position"]), path))
    return chunks
