"""The keyword leg on PostgreSQL: tsvector columns with GIN indexes, ranked by BM25.

The same surface as `search.keyword` (which calls here on a PostgreSQL connection): top-k
(seq, score) with the score negative and lower better like FTS5's bm25, so that the fusion's
per-query normalisation treats both stores alike. The GIN index finds the rows holding any
of the query's lexemes (all of them for AND); each is scored by BM25 as FTS5 scores it (k1
1.2, b 0.75, FTS5's idf), from the term frequencies its tsvector keeps. PostgreSQL's own
`ts_rank_cd` was measured first and lost 0.09 of BM25-only Recall@10 on LoCoMo
(docs/postgres.md). Document length is the tsvector's count of distinct lexemes (FTS5 counts
tokens); N and the mean length are re-read at most once a minute. User text is always data:
the query's words reach PostgreSQL as parameters only (stemmed there by `to_tsvector`).
Two-word phrases are ranked by `ts_rank_cd` (a phrase is one cover).

Indexes (baseline.sql): `memories.fts` (the memory's text), `memory_context.fts` (the memory
with its neighbours, store.context), `memory_hints.fts` (the questions it answers).
Stemming is PostgreSQL's `english` configuration (Snowball), which also drops stop words: a
query made only of stop words finds nothing here, where FTS5 would match them.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from mnemonist.model.requests import RecallFilters
from mnemonist.search.filters import where_clause

CONFIG = "english"
#: phrases are ranked by cover density (the phrase is one cover), normalised by length
PHRASE_RANK = "ts_rank_cd({col}, q.q, 1)"
#: BM25's parameters, FTS5's defaults
K1, B = 1.2, 0.75
_STATS_TTL_S = 60.0
_stats: dict[tuple[str, str], tuple[float, int, float]] = {}
_stats_lock = threading.Lock()

#: index → (rows it ranks, their tsvector column, the table the statistics count)
_SOURCES = {
    "content": ("memories m", "m.fts", "memories"),
    "context": ("memory_context c JOIN memories m ON m.seq = c.seq", "c.fts", "memory_context"),
    "hints": ("memory_hints h JOIN memories m ON m.id = h.memory_id", "h.fts", "memory_hints"),
}


def _corpus(conn: Any, table: str) -> tuple[int, float]:
    """(rows, mean distinct lexemes a row) of an index, read at most once a minute: BM25's N
    and average length move slowly, and counting them is a scan."""
    key = (getattr(conn, "store_key", ""), table)
    now = time.monotonic()
    with _stats_lock:
        hit = _stats.get(key)
    if hit is not None and now - hit[0] < _STATS_TTL_S:
        return hit[1], hit[2]
    n, avg = conn.execute(f"SELECT count(*), COALESCE(avg(length(fts)), 0) FROM {table}"
                          ).fetchone()
    with _stats_lock:
        _stats[key] = (now, int(n), float(avg))
    return int(n), float(avg)


def _lexemes(conn: Any, terms: list[str], table: str) -> tuple[list[str], list[float]]:
    """The stemmed lexemes of the query's terms and each one's BM25 idf over `table`, as
    FTS5 computes it: log((N - n + 0.5) / (n + 0.5)), at least 1e-6."""
    rows = conn.execute(
        f"SELECT l, (SELECT count(*) FROM {table} WHERE fts @@ CAST(quote_literal(l) AS tsquery))"
        f" FROM (SELECT DISTINCT lexeme AS l FROM unnest(to_tsvector('{CONFIG}', ?))) x"
        " ORDER BY l", [" ".join(terms)]).fetchall()
    n, _avg = _corpus(conn, table)
    lexemes, idfs = [], []
    for lexeme, df in rows:
        lexemes.append(lexeme)
        ratio = (max(n, df) - df + 0.5) / (df + 0.5)  # N may lag the index by a minute
        idfs.append(max(math.log(ratio), 1e-6))
    return lexemes, idfs


def _bm25(conn: Any, terms: list[str], filters: RecallFilters | None, k: int, index: str,
          operator: str) -> list[tuple[int, float]]:
    source, column, table = _SOURCES[index]
    lexemes, idfs = _lexemes(conn, terms, table)
    if not lexemes:
        return []
    _n, avgdl = _corpus(conn, table)
    joiner = " & " if operator == "AND" else " | "
    where, args = where_clause(filters)
    row_key = "h.id" if index == "hints" else "m.seq"
    score = (f"-SUM(t.idf * u.tf * {K1 + 1} / (u.tf + {K1} * ({1 - B} + {B} * length({column})"
             f" / {max(avgdl, 1e-9)})))")
    inner = (
        f"SELECT m.seq AS seq, {score} AS score FROM {source}"
        f" CROSS JOIN LATERAL (SELECT lexeme, array_length(positions, 1) AS tf"
        f" FROM unnest({column})) u"
        " JOIN (SELECT unnest(CAST(? AS text[])) AS lexeme, unnest(CAST(? AS float8[])) AS idf)"
        " t ON t.lexeme = u.lexeme"
        f" WHERE {column} @@ (SELECT CAST(string_agg(quote_literal(l), '{joiner}') AS tsquery)"
        " FROM unnest(CAST(? AS text[])) l)"
        f" AND {where} GROUP BY m.seq, {row_key}")
    # a memory's hint score is its best hint's (never a sum over its hints)
    sql = (f"SELECT seq, MIN(score) AS score FROM ({inner}) x GROUP BY seq"
           " ORDER BY score, seq LIMIT ?")
    rows = conn.execute(sql, [lexemes, idfs, lexemes, *args, k]).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def _phrase_query(phrases: list[str]) -> tuple[str, list[str]]:
    sql = " || ".join(f"phraseto_tsquery('{CONFIG}', ?)" for _ in phrases)
    return sql, list(phrases)


def keyword_search(conn: Any, terms: list[str], filters: RecallFilters | None, k: int, *,
                   operator: str = "OR", index: str = "content") -> list[tuple[int, float]]:
    """Top-k (seq, -BM25) of live memories matching the terms (any, or all for AND)."""
    if not terms:
        return []
    return _bm25(conn, terms, filters, k, index, operator.upper())


def phrase_search(conn: Any, phrases: list[str], filters: RecallFilters | None, k: int, *,
                  index: str = "content") -> list[tuple[int, float]]:
    """Top-k (seq, -ts_rank_cd) of memories holding one of the two-word phrases."""
    if not phrases:
        return []
    tsquery, qargs = _phrase_query(phrases)
    source, column, _table = _SOURCES[index]
    where, args = where_clause(filters)
    rank = PHRASE_RANK.format(col=column)
    sql = (f"SELECT m.seq, MIN(-{rank}) AS score FROM {source}, (SELECT {tsquery} AS q) q"
           f" WHERE {column} @@ q.q AND {where} GROUP BY m.seq ORDER BY score, m.seq LIMIT ?")
    rows = conn.execute(sql, [*qargs, *args, k]).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


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
