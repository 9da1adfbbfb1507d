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
Stemming is PostgreSQL's `english` configuration (Snowball), which also drops stop words, so
the indexes hold none. A query made only of stop words ("what is it": `search.keyword` then
searches all its words, as on SQLite) is matched and scored on the `simple` configuration of
the text itself, computed row by row: no index serves it, so it scans (such queries are rare,
and find what FTS5 finds), with the mean length of the `english` index as BM25's.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from mnemonist.model.requests import RecallFilters
from mnemonist.store.filters import where_clause

CONFIG = "english"
#: the configuration of a query made only of stop words (no stemming, no stop words)
ALL_WORDS = "simple"
#: phrases are ranked by cover density (the phrase is one cover), normalised by length
PHRASE_RANK = "ts_rank_cd({col}, q.q, 1)"
#: BM25's parameters, FTS5's defaults
K1, B = 1.2, 0.75
_STATS_TTL_S = 60.0
_stats: dict[tuple[str, str], tuple[float, int, float]] = {}
_stats_lock = threading.Lock()

#: index → (rows it ranks, their tsvector column, the table the statistics count, its text)
_SOURCES = {
    "content": ("memories m", "m.fts", "memories", "m.content"),
    "context": ("memory_context c JOIN memories m ON m.seq = c.seq", "c.fts", "memory_context",
                "c.text"),
    "hints": ("memory_hints h JOIN memories m ON m.id = h.memory_id", "h.fts", "memory_hints",
              "h.hint"),
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


def _lexemes(conn: Any, terms: list[str], table: str, *, vector: str = "fts",
             config: str = CONFIG) -> tuple[list[str], list[float]]:
    """The stemmed lexemes of the query's terms and each one's BM25 idf over `table`, as
    FTS5 computes it: log((N - n + 0.5) / (n + 0.5)), at least 1e-6. `vector` is the rows'
    tsvector (the indexed column, or computed in `config`)."""
    rows = conn.execute(
        f"SELECT l, (SELECT count(*) FROM {table}"
        f" WHERE {vector} @@ CAST(quote_literal(l) AS tsquery))"
        f" FROM (SELECT DISTINCT lexeme AS l FROM unnest(to_tsvector('{config}', ?))) x"
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
    source, column, table, text = _SOURCES[index]
    lexemes, idfs = _lexemes(conn, terms, table)
    if not lexemes:  # stop words only: every word counts, on the text itself (no index)
        column = f"to_tsvector('{ALL_WORDS}', {text})"
        own_text = text.split(".", 1)[1]
        lexemes, idfs = _lexemes(conn, terms, table, config=ALL_WORDS,
                                 vector=f"to_tsvector('{ALL_WORDS}', {own_text})")
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
    source, column, _table, _text = _SOURCES[index]
    where, args = where_clause(filters)
    rank = PHRASE_RANK.format(col=column)
    sql = (f"SELECT m.seq, MIN(-{rank}) AS score FROM {source}, (SELECT {tsquery} AS q) q"
           f" WHERE {column} @@ q.q AND {where} GROUP BY m.seq ORDER BY score, m.seq LIMIT ?")
    rows = conn.execute(sql, [*qargs, *args, k]).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def terms_in(conn: Any, terms: list[str], seqs: list[int]) -> dict[int, list[str]]:
    """For each memory, the terms its own text holds (stemmed, as the index matches them; a
    stop word, which the index lacks, as a word of the text)."""
    found: dict[int, list[str]] = {seq: [] for seq in seqs}
    holds = (f"CASE WHEN numnode(plainto_tsquery('{CONFIG}', ?)) = 0"
             f" THEN to_tsvector('{ALL_WORDS}', content) @@ plainto_tsquery('{ALL_WORDS}', ?)"
             f" ELSE fts @@ plainto_tsquery('{CONFIG}', ?) END")
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for term in terms:
            for (seq,) in conn.execute(
                f"SELECT seq FROM memories WHERE seq IN ({marks}) AND {holds}",
                [*chunk, term, term, term],
            ):
                found[int(seq)].append(term)
    return found
