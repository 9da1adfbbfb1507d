"""The learned sparse leg of recall: the query's SPLADE expansion against the inverted
indexes of the memories' expansions (content and/or context text), and how it joins the
keyword leg.

Its scores are normalised per query to the best match (1.0) and blended into the keyword
leg's: keyword' = (1 - w) · keyword + w · sparse over the union of both legs' candidates, `w`
being `search.sparse_weight`; at w = 1 the SPLADE scores replace the FTS5 ones, in between
they share the keyword leg's place in the fusion (docs/sparse.md).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from typing import Protocol

from mnemonist.model.requests import RecallFilters
from mnemonist.providers.sparse.splade import SparseVector
from mnemonist.search.session_splade import QUERY_REFRESH, Pool, QuerySessions, SessionVectors
from mnemonist.search.sparse_index import SparseIndex

QUERY_CACHE = 512


class Encoder(Protocol):
    model_id: str

    def encode(self, texts: list[str]) -> list[SparseVector]: ...


class SparseLeg:
    def __init__(self, encoder: Encoder, indexes: dict[str, SparseIndex]) -> None:
        self.encoder = encoder
        self.indexes = indexes  # field ('content' | 'context') -> index
        self._cache: OrderedDict[str, SparseVector] = OrderedDict()
        self._lock = threading.Lock()
        #: pooled session vectors, made on the first recall that asks for them
        #: (`search.session_signal: splade | both`) and kept up to date after
        self.sessions: SessionVectors | None = None

    def encode_query(self, query: str) -> SparseVector:
        key = " ".join(query.split())
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        vec = self.encoder.encode([key])[0]
        with self._lock:
            self._cache[key] = vec
            if len(self._cache) > QUERY_CACHE:
                self._cache.popitem(last=False)
        return vec

    def session_view(self, conn: sqlite3.Connection, query: str, filters: RecallFilters | None,
                     pool: Pool) -> QuerySessions | None:
        """The sessions' pooled expansions seen through this query's, for session expansion;
        None when no turn index exists. The first call (or a new `pool`) computes every
        session's vector here, once; after that a recall refreshes at most `QUERY_REFRESH`
        changed memories' sessions and leaves a larger backlog to the background expander."""
        turns = self.indexes.get("content") or self.indexes.get("context")
        if turns is None:
            return None
        with self._lock:
            vectors = self.sessions
            full = vectors is None or vectors.pool != pool
            if vectors is None:
                vectors = self.sessions = SessionVectors(turns, pool)
            vectors.set_pool(pool)
        if full:
            while vectors.refresh(conn):
                pass
        elif 0 < vectors.waiting <= QUERY_REFRESH:
            vectors.refresh(conn, QUERY_REFRESH, wait=False)
        vec = self.encode_query(query)
        return QuerySessions(vectors, vec.terms, vec.weights, filters.project if filters else None)

    def scores(self, query: str, filters: RecallFilters | None, top_k: int,
               fields: str) -> dict[int, float]:
        """The top_k memories by SPLADE dot product (summed over `fields`), scaled so the
        best is 1. Only the project filter applies here; recall filters every candidate
        afterwards, whichever leg proposed it."""
        names = ("content", "context") if fields == "both" else (fields,)
        vec = self.encode_query(query)
        project = filters.project if filters else None
        raw: dict[int, float] = {}
        for name in names:
            index = self.indexes.get(name)
            if index is None:
                continue
            for seq, score in index.search(vec.terms, vec.weights, top_k, project=project,
                                           filter_project=project is not None):
                raw[seq] = raw.get(seq, 0.0) + score
        if len(names) > 1:  # a memory found through one field still has its other score
            raw = self._exact_sum(vec, raw, names)
        best = max(raw.values(), default=0.0)
        return {s: v / best for s, v in raw.items()} if best > 0 else {}

    def _exact_sum(self, vec: SparseVector, raw: dict[int, float],
                   names: tuple[str, ...]) -> dict[int, float]:
        out = dict.fromkeys(raw, 0.0)
        for name in names:
            index = self.indexes.get(name)
            if index is None:
                continue
            for seq, value in index.scores(vec.terms, vec.weights, list(raw)).items():
                out[seq] += value
        return out


def blend(keyword: dict[int, float], sparse: dict[int, float], weight: float,
          mode: str = "share") -> dict[int, float]:
    """share: keyword' = (1 - weight) · keyword + weight · sparse; add: keyword + weight ·
    sparse (a third leg on top of FTS5). Over both legs' candidates."""
    if weight <= 0 or not sparse:
        return keyword
    keep = 1.0 if mode == "add" else 1.0 - weight
    return {s: keep * keyword.get(s, 0.0) + weight * sparse.get(s, 0.0)
            for s in set(keyword) | set(sparse)}
