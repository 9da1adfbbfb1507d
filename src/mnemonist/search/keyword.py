"""The keyword leg: FTS5 BM25 over `memories_fts`, user text always treated as data."""

from __future__ import annotations

import sqlite3

from mnemonist.model.requests import RecallFilters
from mnemonist.search.filters import where_clause
from mnemonist.text.tokens import fts_match_query


def keyword_search(
    conn: sqlite3.Connection,
    query: str,
    filters: RecallFilters | None,
    k: int,
    *,
    operator: str = "OR",
) -> list[tuple[int, float]]:
    """Top-k (seq, raw bm25) for live memories; raw BM25 is negative, lower is better."""
    match = fts_match_query(query, operator=operator)
    if match is None:
        return []
    where, args = where_clause(filters)
    rows = conn.execute(
        "SELECT m.seq, bm25(memories_fts) AS score FROM memories_fts"
        " JOIN memories m ON m.seq = memories_fts.rowid"
        f" WHERE memories_fts MATCH ? AND {where} ORDER BY score LIMIT ?",
        [match, *args, k],
    ).fetchall()
    return [(row[0], row[1]) for row in rows]
