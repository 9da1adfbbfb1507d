"""embeddings: float32 vectors keyed by content hash (the truth the vector index loads from)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import numpy as np

from mnemonist.model.memory import utcnow
from mnemonist.store.backend import is_postgres
from mnemonist.store.memories import hash_in_use


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes, dimensions: int) -> np.ndarray:
    vec = np.frombuffer(blob, dtype="<f4")
    if vec.shape[0] != dimensions:
        raise ValueError(f"stored vector has {vec.shape[0]} values, expected {dimensions}")
    return vec


def upsert(conn: sqlite3.Connection, content_hash: str, model: str, vector: np.ndarray) -> None:
    conn.execute(
        "INSERT INTO embeddings (content_hash, model, dimensions, vector, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(content_hash) DO UPDATE SET"
        " model = excluded.model, dimensions = excluded.dimensions,"
        " vector = excluded.vector, created_at = excluded.created_at",
        (content_hash, model, int(vector.shape[0]), to_blob(vector), utcnow()),
    )
    if is_postgres(conn):  # pgvector's copy, what the PostgreSQL vector leg searches
        from mnemonist.store.postgres.vectors import literal

        conn.execute("UPDATE embeddings SET embedding = CAST(? AS vector) WHERE content_hash = ?",
                     (literal(vector), content_hash))


def get(conn: sqlite3.Connection, content_hash: str, model: str) -> np.ndarray | None:
    row = conn.execute(
        "SELECT vector, dimensions FROM embeddings WHERE content_hash = ? AND model = ?",
        (content_hash, model),
    ).fetchone()
    return from_blob(row["vector"], row["dimensions"]) if row else None


def live_vectors(
    conn: sqlite3.Connection, model: str, dimensions: int | None
) -> Iterator[tuple[int, str | None, np.ndarray]]:
    """(seq, project, vector) of every live (not superseded) memory embedded with `model`."""
    rows = conn.execute(
        "SELECT m.seq, m.project, e.vector, e.dimensions FROM memories m"
        " JOIN embeddings e ON e.content_hash = m.content_hash"
        " WHERE m.is_deleted = 0 AND m.superseded_at IS NULL AND e.model = ?",
        (model,),
    )
    for row in rows:
        if dimensions is not None and row["dimensions"] != dimensions:
            continue
        yield row["seq"], row["project"], from_blob(row["vector"], row["dimensions"])


def count_live(conn: sqlite3.Connection, model: str) -> int:
    """How many vectors `live_vectors` will yield (at most): the index reserves that room."""
    return conn.execute(
        "SELECT COUNT(*) FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash"
        " WHERE m.is_deleted = 0 AND m.superseded_at IS NULL AND e.model = ?", (model,),
    ).fetchone()[0]


def vectors_by_seq(
    conn: sqlite3.Connection, seqs: list[int], model: str, dimensions: int, *,
    context: bool = False,
) -> dict[int, np.ndarray]:
    """The stored vectors of these memories (of their context text with `context`), by seq:
    what an int8 vector index scores its candidates with. Seqs without one are left out."""
    out: dict[int, np.ndarray] = {}
    if context:
        source = ("memory_context c JOIN embeddings e ON e.content_hash = c.text_hash"
                  " WHERE e.model = ? AND c.seq IN ({})")
        key = "c.seq"
    else:  # by primary key: NOT INDEXED keeps the planner off the memories indexes
        source = ("memories m NOT INDEXED JOIN embeddings e ON e.content_hash = m.content_hash"
                  " WHERE e.model = ? AND m.seq IN ({})")
        key = "m.seq"
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        sql = f"SELECT {key}, e.vector FROM " + source.format(",".join("?" * len(chunk)))
        for seq, blob in conn.execute(sql, [model, *chunk]):
            if len(blob) == 4 * dimensions:
                out[seq] = np.frombuffer(blob, dtype="<f4")
    return out


def superseded_vectors(
    conn: sqlite3.Connection, where: str, args: list[Any], dimensions: int
) -> list[tuple[int, np.ndarray]]:
    """(seq, vector) of the superseded memories passing `where` (over `memories m`): they stay
    out of the live vector index, so a recall of what was true then scores them from here."""
    rows = conn.execute(
        "SELECT m.seq, e.vector, e.dimensions FROM memories m"
        " JOIN embeddings e ON e.content_hash = m.content_hash"
        f" WHERE m.superseded_at IS NOT NULL AND {where}",
        args,
    )
    return [(row["seq"], from_blob(row["vector"], row["dimensions"]))
            for row in rows if row["dimensions"] == dimensions]


def context_vectors(
    conn: sqlite3.Connection, model: str, dimensions: int | None
) -> Iterator[tuple[int, str | None, np.ndarray]]:
    """(seq, project, vector) of the context texts (store.context) of live memories."""
    rows = conn.execute(
        "SELECT c.seq, m.project, e.vector, e.dimensions FROM memory_context c"
        " JOIN memories m ON m.seq = c.seq"
        " JOIN embeddings e ON e.content_hash = c.text_hash AND e.model = ?"
        " WHERE m.is_deleted = 0 AND m.superseded_at IS NULL",
        (model,),
    )
    for row in rows:
        if dimensions is None or row["dimensions"] == dimensions:
            yield row["seq"], row["project"], from_blob(row["vector"], row["dimensions"])


def live_vectors_of(
    conn: sqlite3.Connection, seqs: list[int], model: str, dimensions: int, *,
    context: bool = False,
) -> dict[int, tuple[str | None, np.ndarray]]:
    """seq → (project, vector) of those of `seqs` that `live_vectors` (`context_vectors`
    with `context`) yields now: a memory left out is not live or has no such vector. What
    an in-memory index reads again for the memories another writer changed."""
    if context:
        source = ("memory_context c JOIN memories m ON m.seq = c.seq"
                  " JOIN embeddings e ON e.content_hash = c.text_hash")
    else:
        source = "memories m JOIN embeddings e ON e.content_hash = m.content_hash"
    out: dict[int, tuple[str | None, np.ndarray]] = {}
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        rows = conn.execute(
            f"SELECT m.seq, m.project, e.vector FROM {source}"
            " WHERE m.is_deleted = 0 AND m.superseded_at IS NULL AND e.model = ?"
            f" AND e.dimensions = ? AND m.seq IN ({','.join('?' * len(chunk))})",
            [model, dimensions, *chunk])
        for seq, project, blob in rows:
            if len(blob) == 4 * dimensions:
                out[seq] = (project, np.frombuffer(blob, dtype="<f4"))
    return out


def delete_unreferenced(conn: sqlite3.Connection, hashes: list[str]) -> int:
    """Drop embeddings no memory row (live or tombstone) points to any more."""
    removed = 0
    for content_hash in hashes:
        cur = conn.execute(
            f"DELETE FROM embeddings WHERE content_hash = ? AND NOT {hash_in_use('?')}",
            (content_hash, content_hash, content_hash),
        )
        removed += cur.rowcount
    return removed


def stats(conn: sqlite3.Connection, model: str) -> dict[str, int]:
    row = conn.execute(
        "SELECT COUNT(*) AS live,"
        " SUM(CASE WHEN e.model = ? THEN 1 ELSE 0 END) AS current,"
        " SUM(CASE WHEN e.content_hash IS NOT NULL AND e.model != ? THEN 1 ELSE 0 END) AS stale"
        " FROM memories m LEFT JOIN embeddings e ON e.content_hash = m.content_hash"
        " WHERE m.is_deleted = 0 AND m.superseded_at IS NULL",  # the memories `live` counts
        (model, model),
    ).fetchone()
    live = row["live"] or 0
    current = row["current"] or 0
    return {"live": live, "embedded": current, "stale": row["stale"] or 0,
            "missing": live - current}
