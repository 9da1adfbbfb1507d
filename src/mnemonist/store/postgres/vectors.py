"""The vector leg on PostgreSQL: pgvector over the `embeddings` table, no in-process copy.

`PgVectorIndex` has the surface of `search.vector_index.VectorIndex` (search, scores, vector,
len, dimensions, add/remove/set_project), but the database is the index: every daemon on the
same PostgreSQL sees every other daemon's vectors as soon as they commit, so the in-process
add/remove/set_project calls the service makes after a commit have nothing to do here.

Each embedding's `embedding vector` column is written with its float32 blob
(`store.embeddings.upsert`). Below `EXACT_BELOW` live vectors a search is an exact scan
(`<=>` cosine distance over every candidate row, what SQLite's NumPy index does); above it,
the HNSW index of baseline.sql (`(embedding::vector(384)) vector_cosine_ops`, 384 dimensions:
the default model's) answers with `hnsw.ef_search = EF_SEARCH` and pgvector's iterative scan,
so that filters (project, scope, private memories) still fill k results.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterable
from typing import Any

import numpy as np

EXACT_BELOW = 20_000
EF_SEARCH = 100
HNSW_DIMENSIONS = (384,)  # the dimensions baseline.sql has an HNSW index for
_COUNT_TTL_S = 30.0


def literal(vector: np.ndarray) -> str:
    """pgvector's text form: '[0.1,0.2,...]'."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def parse(text: str) -> np.ndarray:
    return np.asarray([float(x) for x in text.strip("[]").split(",")], dtype=np.float32)


class PgVectorIndex:
    """Vectors of live memories (kind "content") or of their context texts ("context")."""

    def __init__(self, db: Any, dimensions: int, model: str, kind: str = "content") -> None:
        self.db = db
        self.dimensions = dimensions
        self.model = model
        self.kind = kind
        self._count: tuple[float, int] | None = None
        self._lock = threading.Lock()
        key = "c.text_hash" if kind == "context" else "m.content_hash"
        ctx = " JOIN memory_context c ON c.seq = m.seq" if kind == "context" else ""
        self._from = (f"FROM memories m{ctx} JOIN embeddings e ON e.content_hash = {key}"
                      f" AND e.model = %s AND e.dimensions = {int(dimensions)}")
        self._live = "m.is_deleted = 0 AND m.superseded_at IS NULL AND e.embedding IS NOT NULL"

    #: what the in-process index reports about itself: nothing is held in this process
    nbytes = 0
    precision = "pgvector"

    # -- the database is the index: nothing to keep in step --------------------------------
    def add(self, seq: int, vector: np.ndarray, project: str | None = None) -> None:
        pass

    def add_many(self, items: Iterable[tuple[int, str | None, np.ndarray]]) -> None:
        pass

    def remove(self, seq: int) -> bool:
        return False

    def set_project(self, seq: int, project: str | None) -> None:
        pass

    # -- reads -----------------------------------------------------------------------------
    def _rows(self, sql: str, args: list[Any], settings: dict[str, str] | None = None
              ) -> list[tuple[Any, ...]]:
        with self.db.connection() as raw:
            if not settings:
                return [tuple(r) for r in raw.execute(sql, args).fetchall()]
            with raw.transaction():
                for name, value in settings.items():
                    raw.execute("SELECT set_config(%s, %s, true)", (name, value))
                return [tuple(r) for r in raw.execute(sql, args).fetchall()]

    def __len__(self) -> int:
        with self._lock:
            if self._count is not None and time.monotonic() - self._count[0] < _COUNT_TTL_S:
                return self._count[1]
        return self.count_now()

    def count_now(self) -> int:
        """The live vectors now (`len` may be up to `_COUNT_TTL_S` old: it only chooses
        between the exact scan and HNSW)."""
        n = int(self._rows(f"SELECT count(*) {self._from} WHERE {self._live}",
                           [self.model])[0][0])
        with self._lock:
            self._count = (time.monotonic(), n)
        return n

    def __contains__(self, seq: int) -> bool:
        return bool(self._rows(f"SELECT 1 {self._from} WHERE {self._live} AND m.seq = %s",
                               [self.model, seq]))

    def vector(self, seq: int) -> np.ndarray | None:
        rows = self._rows(
            f"SELECT e.embedding::text {self._from} WHERE {self._live} AND m.seq = %s",
            [self.model, seq])
        return parse(rows[0][0]) if rows else None

    def scores(self, query: np.ndarray, seqs: Iterable[int]) -> dict[int, float]:
        wanted = [int(s) for s in seqs]
        if not wanted:
            return {}
        rows = self._rows(
            f"SELECT m.seq, 1 - (e.embedding <=> %s::vector) {self._from}"
            f" WHERE {self._live} AND m.seq = ANY(%s)",
            [literal(query), self.model, wanted])
        return {int(s): float(v) for s, v in rows}

    def search_and_score(
        self, query: np.ndarray, k: int, also: Iterable[int], **filters: Any
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """`search` and the `scores` of `also` (the recall's other candidates), as the
        in-process index answers them."""
        return self.search(query, k, **filters), self.scores(query, also)

    def search(
        self,
        query: np.ndarray,
        k: int,
        *,
        project: str | None = None,
        filter_project: bool = False,
        allowed: set[int] | None = None,
        scope: Collection[str] | None = None,
        hidden: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Top-k (seq, cosine), with the filters of `VectorIndex.search`."""
        if k <= 0:
            return []
        where: list[str] = [self._live]
        args: list[Any] = []
        if filter_project:
            if project is None:
                where.append("m.project IS NULL")
            else:
                where.append("m.project = %s")
                args.append(project)
        if scope is not None:
            where.append("(m.project IS NULL OR lower(m.project) = ANY(%s))")
            args.append([p.lower() for p in scope])
        if allowed is not None:
            if not allowed:
                return []
            where.append("m.seq = ANY(%s)")
            args.append(sorted(allowed))
        if hidden:
            where.append("NOT (m.seq = ANY(%s))")
            args.append(sorted(hidden))
        q = literal(query)
        exact = (self.dimensions not in HNSW_DIMENSIONS or allowed is not None
                 or len(self) < EXACT_BELOW)
        if exact:
            distance, settings = "e.embedding <=> %s::vector", None
        else:
            d = self.dimensions
            distance = f"(e.embedding::vector({d})) <=> %s::vector({d})"
            settings = {"hnsw.ef_search": str(max(EF_SEARCH, k)),
                        "hnsw.iterative_scan": "relaxed_order"}
        sql = (f"SELECT seq, 1 - dist FROM (SELECT m.seq, {distance} AS dist {self._from}"
               f" WHERE {' AND '.join(where)} ORDER BY {distance} LIMIT %s) t"
               " ORDER BY dist, seq")
        rows = self._rows(sql, [q, self.model, *args, q, k], settings)
        return [(int(s), float(v)) for s, v in rows]


def index_blob(conn: Any, content_hash: str) -> None:
    """Fill an embedding row's pgvector column from its float32 blob (a row inserted as a
    whole, e.g. by a bundle import, has only the blob)."""
    row = conn.execute("SELECT vector, dimensions FROM embeddings WHERE content_hash = ?",
                       (content_hash,)).fetchone()
    if row is None:
        return
    vec = np.frombuffer(bytes(row[0]), dtype="<f4")
    if vec.shape[0] == row[1]:
        conn.execute("UPDATE embeddings SET embedding = CAST(? AS vector) WHERE content_hash = ?",
                     (literal(vec), content_hash))
