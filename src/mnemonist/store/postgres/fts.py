"""The keyword leg on PostgreSQL: tsvector columns with GIN indexes, ranked by `ts_rank_cd`.

The same surface as `search.keyword` (which calls here on a PostgreSQL connection): top-k
(seq, score) with the score negative and lower better like FTS5's bm25, so that the fusion's
per-query normalisation treats both stores alike. User text is always data: each query term
goes through `plainto_tsquery` as a parameter, never into the SQL; OR queries join the terms'
tsqueries with `||`, AND queries use `websearch_to_tsquery` over the terms.

Indexes (baseline.sql): `memories.fts` (the memory's text), `memory_context.fts` (the memory
with its neighbours, store.context), `memory_hints.fts` (the questions it answers).
Stemming is PostgreSQL's `english` configuration (Snowball), which also drops stop words: a
query made only of stop words finds nothing here, where FTS5 would match them.
"""

from __future__ import annotations

from typing import Any

from mnemonist.model.requests import RecallFilters
from mnemonist.search.filters import where_clause

CONFIG = "english"
#: ts_rank_cd normalisation 1: divide by 1 + log(document length), as BM25 favours short texts
RANK = "ts_rank_cd({col}, q.q, 1)"

_SOURCES = {
    "content": ("memories m", "m.fts"),
    "context": ("memory_context c JOIN memories m ON m.seq = c.seq", "c.fts"),
    "hints": ("memory_hints h JOIN memories m ON m.id = h.memory_id", "h.fts"),
}


def _or_query(terms: list[str]) -> tuple[str, list[str]]:
    sql = " || ".join(f"plainto_tsquery('{CONFIG}', ?)" for _ in terms)
    return sql, list(terms)


def _phrase_query(phrases: list[str]) -> tuple[str, list[str]]:
    sql = " || ".join(f"phraseto_tsquery('{CONFIG}', ?)" for _ in phrases)
    return sql, list(phrases)


def _ranked(conn: Any, tsquery: str, qargs: list[Any], filters: RecallFilters | None, k: int,
            index: str) -> list[tuple[int, float]]:
    source, column = _SOURCES[index]
    where, args = where_clause(filters)
    rank = RANK.format(col=column)
    if index == "hints":  # a memory's hint score is its best hint's (never a sum)
        sql = (f"SELECT m.seq, MIN(-{rank}) AS score FROM {source}, (SELECT {tsquery} AS q) q"
               f" WHERE {column} @@ q.q AND {where} GROUP BY m.seq ORDER BY score, m.seq"
               " LIMIT ?")
    else:
        sql = (f"SELECT m.seq, -{rank} AS score FROM {source}, (SELECT {tsquery} AS q) q"
               f" WHERE {column} @@ q.q AND {where} ORDER BY score, m.seq LIMIT ?")
    rows = conn.execute(sql, [*qargs, *args, k]).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def keyword_search(conn: Any, terms: list[str], filters: RecallFilters | None, k: int, *,
                   operator: str = "OR", index: str = "content") -> list[tuple[int, float]]:
    """Top-k (seq, -ts_rank_cd) of live memories matching the terms (any, or all for AND)."""
    if not terms:
        return []
    if operator.upper() == "AND":
        tsquery, qargs = f"websearch_to_tsquery('{CONFIG}', ?)", [" ".join(terms)]
    else:
        tsquery, qargs = _or_query(terms)
    return _ranked(conn, tsquery, qargs, filters, k, index)


def phrase_search(conn: Any, phrases: list[str], filters: RecallFilters | None, k: int, *,
                  index: str = "content") -> list[tuple[int, float]]:
    """Top-k (seq, -ts_rank_cd) of memories holding one of the two-word phrases."""
    if not phrases:
        return []
    tsquery, qargs = _phrase_query(phrases)
    return _ranked(conn, tsquery, qargs, filters, k, index)


def terms_in(conn: Any, terms: list[str], seqs: list[int]) -> dict[int, list[str]]:
    """For each memory, the terms its own text holds (stemmed, as the index matches them)."""
    found: dict[int, list[str]] = {seq: [] for seq in seqs}
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for term in terms:
            for (seq,) in conn.execute(
                f"SELECT seq FROM memories WHERE fts @@ plainto_tsquery('{CONFIG}', ?)"
                f" AND seq IN ({marks})", [term, *chunk],
            ):
                found[int(seq)].append(term)
    return found
