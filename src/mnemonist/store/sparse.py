"""Rows of `sparse_terms` (migration 17): SPLADE expansions per memory and field.

A row is current when its model is the configured one and its `text_hash` is the memory's
`content_hash` ('content') or its `memory_context.text_hash` ('context'); anything else is
stale. Only live, current (not superseded) memories keep rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import numpy as np

FIELDS = ("content", "context")

#: live memories with the text to encode per field, and the hash that text has
_SOURCES = {
    "content": ("SELECT m.seq, m.project, m.content AS text, m.content_hash AS h"
                " FROM memories m"),
    "context": ("SELECT m.seq, m.project, c.text AS text, c.text_hash AS h"
                " FROM memories m JOIN memory_context c ON c.seq = m.seq"),
}
_LIVE = "m.is_deleted = 0 AND m.superseded_at IS NULL"


def missing(conn: sqlite3.Connection, field: str, model: str,
            limit: int) -> list[tuple[int, str, str]]:
    """(seq, text, text_hash) of live memories whose `field` has no current expansion."""
    sql = (f"SELECT src.seq, src.text, src.h FROM ({_SOURCES[field]} WHERE {_LIVE}) src"
           " LEFT JOIN sparse_terms s ON s.seq = src.seq AND s.field = ?"
           " WHERE s.seq IS NULL OR s.model != ? OR s.text_hash != src.h LIMIT ?")
    return [(r[0], r[1], r[2]) for r in conn.execute(sql, (field, model, limit))]


def to_blobs(terms: np.ndarray, weights: np.ndarray) -> tuple[bytes, bytes]:
    return (np.asarray(terms, dtype="<i4").tobytes(), np.asarray(weights, dtype="<f4").tobytes())


def from_blobs(terms: bytes, weights: bytes) -> tuple[np.ndarray, np.ndarray]:
    return np.frombuffer(terms, dtype="<i4"), np.frombuffer(weights, dtype="<f4")


def write(conn: sqlite3.Connection, field: str, model: str, seq: int, text_hash: str,
          terms: np.ndarray, weights: np.ndarray) -> tuple[bool, str | None]:
    """Store the expansion if `text_hash` is still the memory's current text for `field`
    and the memory is live: (True, its project, which the index needs), else (False, None)."""
    row = conn.execute(
        f"SELECT src.project FROM ({_SOURCES[field]} WHERE m.seq = ? AND {_LIVE}) src"
        " WHERE src.h = ?", (seq, text_hash)).fetchone()
    if row is None:
        return False, None
    t, w = to_blobs(terms, weights)
    conn.execute(
        "INSERT INTO sparse_terms (seq, field, model, text_hash, terms, weights)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(seq, field) DO UPDATE SET model = excluded.model,"
        " text_hash = excluded.text_hash, terms = excluded.terms, weights = excluded.weights",
        (seq, field, model, text_hash, t, w))
    return True, row[0]


def orphans(conn: sqlite3.Connection, limit: int = 1000) -> list[tuple[int, str]]:
    """(seq, field) rows whose memory is deleted, superseded or purged."""
    sql = ("SELECT s.seq, s.field FROM sparse_terms s LEFT JOIN memories m ON m.seq = s.seq"
           " WHERE m.seq IS NULL OR m.is_deleted = 1 OR m.superseded_at IS NOT NULL LIMIT ?")
    return [(r[0], r[1]) for r in conn.execute(sql, (limit,))]


def stale(conn: sqlite3.Connection, field: str, model: str,
          limit: int = 1000) -> list[int]:
    """Live memories whose stored `field` expansion no longer matches their text or model."""
    sql = (f"SELECT src.seq FROM ({_SOURCES[field]} WHERE {_LIVE}) src"
           " JOIN sparse_terms s ON s.seq = src.seq AND s.field = ?"
           " WHERE s.model != ? OR s.text_hash != src.h LIMIT ?")
    return [r[0] for r in conn.execute(sql, (field, model, limit))]


def delete(conn: sqlite3.Connection, rows: list[tuple[int, str]]) -> None:
    conn.executemany("DELETE FROM sparse_terms WHERE seq = ? AND field = ?", rows)


def current(conn: sqlite3.Connection, field: str,
            model: str) -> Iterator[tuple[int, str | None, np.ndarray, np.ndarray]]:
    """(seq, project, terms, weights) of every current expansion of `field` (index load)."""
    sql = (f"SELECT src.seq, src.project, s.terms, s.weights FROM ({_SOURCES[field]}"
           f" WHERE {_LIVE}) src JOIN sparse_terms s ON s.seq = src.seq AND s.field = ?"
           " WHERE s.model = ? AND s.text_hash = src.h")
    for seq, project, t, w in conn.execute(sql, (field, model)):
        terms, weights = from_blobs(t, w)
        yield seq, project, terms, weights


def counts(conn: sqlite3.Connection, model: str) -> dict[str, int]:
    """Current rows per field (status, diagnostics)."""
    rows = conn.execute("SELECT field, COUNT(*) FROM sparse_terms WHERE model = ?"
                        " GROUP BY field", (model,)).fetchall()
    return {f: 0 for f in FIELDS} | {r[0]: r[1] for r in rows}
