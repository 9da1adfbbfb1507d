"""The keyword leg: FTS5 BM25 over `memories_fts`, user text always treated as data."""

from __future__ import annotations

import sqlite3

from mnemonist.model.requests import RecallFilters
from mnemonist.search.filters import where_clause
from mnemonist.text.tokens import fts_match_query

INDEXES = {"content": "memories_fts", "context": "memories_ctx_fts"}


def keyword_search(
    conn: sqlite3.Connection,
    query: str,
    filters: RecallFilters | None,
    k: int,
    *,
    operator: str = "OR",
    index: str = "content",
) -> list[tuple[int, float]]:
    """Top-k (seq, raw bm25) for live memories; raw BM25 is negative, lower is better.

    `index` is "content" (the memory's own text) or "context" (the memory with its neighbours
    in its source, see store.context)."""
    match = fts_match_query(query, operator=operator)
    if match is None:
        return []
    table = INDEXES[index]
    where, args = where_clause(filters)
    rows = conn.execute(
        f"SELECT m.seq, bm25({table}) AS score FROM {table}"
        f" JOIN memories m ON m.seq = {table}.rowid"
        f" WHERE {table} MATCH ? AND {where} ORDER BY score LIMIT ?",
        [match, *args, k],
    ).fetchall()
    return [(row[0], row[1]) for row in rows]
