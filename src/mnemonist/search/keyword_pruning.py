"""The exact BM25 top k of a large FTS5 index without scoring every match (MaxScore).

FTS5 ranks an OR query by computing bm25() for every row that matches any term: at 100,000
memories a typical query matches about 20,000 rows and the scoring, not the reading of the
term lists, is the cost (counting the matches takes a tenth of the time). Most of those rows
match only common words, whose share of a score is small. BM25 bounds each term's share:
below `(k1 + 1) × idf(term)` whatever the row. So:

1. Score exactly (FTS5's own bm25 over the whole query) only the rows that match the rarest
   terms, as many terms as fit `RARE_ROWS` matches: the k-th best of those is a floor θ that
   the true k-th best reaches or beats.
2. The common terms whose bounds add up to less than θ cannot lift a row into the top k on
   their own: every row of the top k matches one of the other, "essential", terms. When those
   were all in step 1, its top k is the answer; when their rows are few enough
   (`ESSENTIAL_ROWS`), they are scored exactly in a second pass; otherwise the caller ranks
   every match as before.

Either way the answer is the same rows with the same scores as ranking every match (only the
order among equal scores may differ). Small indexes never get here: when all the query's
matches fit `RARE_ROWS`, one ranked query over them is as cheap.
"""

from __future__ import annotations

import math
import sqlite3

from mnemonist.text.tokens import quote_fts_term

K1 = 1.2  # FTS5's bm25() constant; the bound is (K1 + 1) × idf
RARE_ROWS = 8000  # matches scored exactly to find the floor
ESSENTIAL_ROWS = 4 * RARE_ROWS  # matches of the essential terms scored in a second pass


def pruned_top(
    conn: sqlite3.Connection, table: str, terms: list[str], k: int
) -> list[tuple[int, float]] | None:
    """The best k (rowid, bm25) of the OR of `terms` over `table`, best first, or None when
    the shortcut does not apply (few matches, or the bound does not prune enough)."""
    hits = {t: _count(conn, table, t) for t in dict.fromkeys(terms)}
    terms = [t for t, n in hits.items() if n > 0]
    if not terms or sum(hits[t] for t in terms) <= RARE_ROWS:
        return None
    everything = _or(terms)
    rare: list[str] = []
    total = 0
    for term in sorted(terms, key=lambda t: hits[t]):
        if rare and total + hits[term] > RARE_ROWS:
            break
        rare.append(term)
        total += hits[term]
    first = _scored_among(conn, table, everything, _or(rare), k)
    if len(first) < k:
        return None
    floor = -first[k - 1][1]  # bm25() is negative: lower is better
    rows = _upper_rows(conn, table)
    bound = {t: (K1 + 1) * _idf(rows, hits[t]) for t in terms}
    essential: list[str] = []
    below = 0.0
    for term in sorted(terms, key=lambda t: bound[t]):
        if below + bound[term] < floor:
            below += bound[term]
        else:
            essential.append(term)
    if set(essential) <= set(rare):
        return first
    if sum(hits[t] for t in essential) > ESSENTIAL_ROWS:
        return None
    return _scored_among(conn, table, everything, _or(essential), k)


def _or(terms: list[str]) -> str:
    return " OR ".join(quote_fts_term(t) for t in terms)


def _count(conn: sqlite3.Connection, table: str, term: str) -> int:
    return conn.execute(
        f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (quote_fts_term(term),)
    ).fetchone()[0]


def _scored_among(
    conn: sqlite3.Connection, table: str, everything: str, among: str, k: int
) -> list[tuple[int, float]]:
    """bm25 of the whole query, computed only for the rows matching `among` (`+rowid` keeps
    SQLite from handing the IN to FTS5, which would re-run the query once per row)."""
    rows = conn.execute(
        f"SELECT rowid, bm25({table}) AS score FROM {table} WHERE {table} MATCH ?"
        f" AND +rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
        " ORDER BY score LIMIT ?",
        (everything, among, k),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def _upper_rows(conn: sqlite3.Connection, table: str) -> int:
    """At least the index's row count (FTS5's N): the largest rowid. A larger N only raises
    idf, so the bounds stay bounds."""
    row = conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid DESC LIMIT 1").fetchone()
    return int(row[0]) if row else 0


def _idf(rows: int, hits: int) -> float:
    """FTS5's idf: log((N - n + 0.5) / (n + 0.5)), at least 1e-6."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > hits else 0.0
    return max(value, 1e-6)
