"""Session vectors for session expansion by SPLADE (`search.session_signal: splade | both`).

Session expansion (`search/session_expansion.py`) ranks the sessions of the first round's 40
best candidates by their turns' fused scores. A question whose evidence session none of those
candidates comes from cannot be helped that way: the session is never looked at. Here every
session (a source of at most `MAX_TURNS` memories) also has one sparse vector, the pooled
SPLADE expansions of its turns, kept in an inverted index of its own; the query's expansion is
scored against it by dot product, so a session can be ranked as a whole, and found, even when
no single turn of it was a candidate.

Pooling: `max` keeps each term's largest weight (the session read as one long text, as SPLADE
pools a text's word pieces), `sum` adds the turns' term weights (the session's centroid: a
term many turns carry weighs more). Either is L2-normalised, so the dot product with the query
is a cosine up to the query's norm (the same for every session of one query) and a long
session is not favoured for holding more words. On LoCoMo `max` ranks the evidence session
first for 60% of the questions, `sum` for 46% (docs/benchmarks.md).

Cost: the vectors are kept up to date from the turn index's change notifications. A change
marks the memory; `refresh` (run by the background expander each cycle, and at query time
only when few memories are waiting) recomputes the sessions of the marked memories from the
turn index, reading their members through the `memories_source` index. A recall reads the
postings of the query's terms in the session index (a few thousand sessions at most where the
turn index has millions of memories) and the vectors of at most a few dozen sessions.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Literal

import numpy as np

from mnemonist.search.sparse_index import SparseIndex
from mnemonist.store import recall_reads

#: a source longer than this is a document, not a conversation: no session vector
MAX_TURNS = 200
#: memories a query-time refresh takes on; more waiting are left to the background expander
QUERY_REFRESH = 256
#: memories one refresh takes on (bounds one background cycle)
REFRESH_BATCH = 4096

Key = tuple[str, str]  # (project or "", source_id)
Pool = Literal["sum", "max"]


def pooled(parts: list[tuple[np.ndarray, np.ndarray]], pool: Pool) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """The turns' expansions pooled into one L2-normalised (terms, weights) vector."""
    parts = [p for p in parts if p[0].size]
    if not parts:
        return np.zeros(0, np.int32), np.zeros(0, np.float32)
    terms = np.concatenate([p[0] for p in parts]).astype(np.int64)
    weights = np.concatenate([p[1] for p in parts]).astype(np.float32)
    unique, inverse = np.unique(terms, return_inverse=True)
    if pool == "max":
        out = np.zeros(unique.size, np.float32)
        np.maximum.at(out, inverse, weights)
    else:
        out = np.bincount(inverse, weights=weights, minlength=unique.size).astype(np.float32)
    norm = float(np.linalg.norm(out))
    if norm > 0:
        out /= norm
    return unique.astype(np.int32), out


class SessionVectors:
    """One pooled SPLADE vector per session, searchable, following a turn index."""

    def __init__(self, turns: SparseIndex, pool: Pool = "max") -> None:
        self.turns = turns
        self.pool: Pool = pool
        self.index = SparseIndex(turns.vocab_size)
        self._ids: dict[Key, int] = {}
        self._keys: list[Key] = []
        #: the session each pooled memory was last counted in: a memory purged or moved to
        #: another project marks the session it left, whose vector is then pooled again
        self._member_of: dict[int, Key] = {}
        self._dirty: set[int] = set()
        self._lock = threading.Lock()  # one refresh at a time (see refresh)
        self._dirty_lock = threading.Lock()
        turns.listeners.append(self.mark)
        self.mark(turns.seqs())  # what the index already holds

    def __len__(self) -> int:
        return len(self.index)

    def mark(self, seqs: list[int]) -> None:
        """The turn index changed for these memories: their sessions are recomputed at the
        next refresh."""
        with self._dirty_lock:
            self._dirty.update(seqs)

    @property
    def waiting(self) -> int:
        return len(self._dirty)

    def set_pool(self, pool: Pool) -> None:
        """A different pooling (a setting changed at query time, as the bench's variants do):
        every session is marked for recomputation."""
        if pool != self.pool:
            self.pool = pool
            self.mark(self.turns.seqs())

    def refresh(self, conn: sqlite3.Connection, limit: int = REFRESH_BATCH, *,
                wait: bool = True) -> bool:
        """Recompute the sessions of up to `limit` marked memories; True when more wait.
        Refreshes run one at a time (two reading a session at different moments could store
        the older reading last); with `wait` false a refresh already running is left to
        finish the work and this one returns at once."""
        if not self._lock.acquire(blocking=wait):
            return bool(self._dirty)
        try:
            with self._dirty_lock:
                if not self._dirty:
                    return False
                take = sorted(self._dirty)[:limit]
                self._dirty.difference_update(take)
            keys = self._sessions_of(conn, take)
            keys.update(k for k in (self._member_of.pop(s, None) for s in take) if k)
            if keys:
                self._store(self._members(conn, keys))
        finally:
            self._lock.release()
        return bool(self._dirty)

    def _sessions_of(self, conn: sqlite3.Connection, seqs: list[int]) -> set[Key]:
        """The sessions of these memories as the table has them now (a purged memory has
        none; the session a memory left is added by `refresh` from `_member_of`)."""
        out: set[Key] = set()
        for i in range(0, len(seqs), 500):
            chunk = seqs[i:i + 500]
            for project, source in recall_reads.projects_and_sources(conn, chunk):
                out.add((project or "", source))
        return out

    def _members(self, conn: sqlite3.Connection, keys: set[Key]) -> dict[Key, list[int]]:
        """The live, current turns of each session."""
        sources = sorted({s for _, s in keys})
        out: dict[Key, list[int]] = {k: [] for k in keys}
        for i in range(0, len(sources), 500):
            chunk = sources[i:i + 500]
            rows = recall_reads.current_members(conn, chunk)
            for seq, project, source in rows:
                key = (project or "", source)
                if key in out:
                    out[key].append(seq)
        return out

    def _store(self, members: dict[Key, list[int]]) -> None:
        adds = []
        for key, seqs in members.items():
            for seq in seqs:
                self._member_of[seq] = key
            sid = self._ids.get(key)
            parts = [d for d in (self.turns.doc(s) for s in seqs) if d is not None]
            if not parts or len(seqs) > MAX_TURNS:
                if sid is not None:
                    self.index.remove(sid)
                continue
            if sid is None:
                sid = self._ids[key] = len(self._keys)
                self._keys.append(key)
            terms, weights = pooled(parts, self.pool)
            adds.append((sid, key[0], terms, weights))
        if adds:
            self.index.add_many(adds)

    # -- queries ---------------------------------------------------------------------------
    def find(self, terms: np.ndarray, weights: np.ndarray, k: int,
             project: str | None) -> list[tuple[Key, float]]:
        """The k sessions whose pooled expansion best matches the query (only `project`'s
        when given), best first."""
        if k <= 0:
            return []
        found = self.index.search(terms, weights, k, project=project or "",
                                  filter_project=project is not None)
        return [(self._keys[sid], score) for sid, score in found]

    def scores(self, terms: np.ndarray, weights: np.ndarray,
               keys: list[Key]) -> dict[Key, float]:
        """The dot product of the query with these sessions' vectors (0 for a session that
        has none: too long, or no turn expanded yet)."""
        ids = {self._ids[k]: k for k in keys if k in self._ids}
        got = self.index.scores(terms, weights, list(ids))
        return {k: got.get(self._ids[k], 0.0) if k in self._ids else 0.0 for k in keys}


class QuerySessions:
    """The session vectors seen through one query's expansion (what session expansion
    calls)."""

    def __init__(self, vectors: SessionVectors, terms: np.ndarray, weights: np.ndarray,
                 project: str | None) -> None:
        self.vectors = vectors
        self.terms = terms
        self.weights = weights
        self.project = project

    def find(self, k: int) -> list[tuple[Key, float]]:
        return self.vectors.find(self.terms, self.weights, k, self.project)

    def scores(self, keys: list[Key]) -> dict[Key, float]:
        return self.vectors.scores(self.terms, self.weights, keys)
