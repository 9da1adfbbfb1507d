"""The exact BM25 top k of a large FTS5 index without scoring every match (MaxScore).

FTS5 ranks an OR query by computing bm25() for every row that matches any term: at 100,000
memories a typical query matches about 20,000 rows of the context index (60,000 at the 95th
percentile), and the scoring, not the reading of the term lists, is the cost. Most of those
rows match only common words, whose share of a score is small. BM25 bounds each term's share:
below `(k1 + 1) × idf(term)` whatever the row; and a row's score is the sum of its terms'
shares (FTS5's bm25() adds one share per phrase of the query, each computed on its own). So:

1. Read the row ids of each term (`group_concat`, no scoring: a few milliseconds for tens of
   thousands of rows) and add up, per row, the bounds of the terms it holds: the row's
   *upper bound*.
2. Score exactly (FTS5's own bm25 over the whole query) the `PROBE` rows with the highest
   upper bounds: the k-th best of them is a floor θ that the true k-th best reaches or beats.
3. Only a row whose upper bound reaches θ can be in the top k: score exactly those not scored
   yet, if any (a few hundred to a few thousand of the tens of thousands that match), and
   keep the best k.

The answer is the same rows with the same scores as ranking every match (only the order among
equal scores may differ; a test compares them on every query of a small store with the budget
scaled down). Small result sets never get here: when all the query's matches fit
`RARE_ROWS`, one ranked query over them is as cheap.

Measured at 100,000 synthetic memories (docs/benchmarks.md): CPU time of the context keyword
search p95 0.60× the shortcut it replaced (which scored every row of the rarest terms, up to
8,000, for its floor, then up to 32,000 rows of the others), p50 0.96×.
"""

from __future__ import annotations

import math
import sqlite3

import numpy as np

from mnemonist.store import fts
from mnemonist.text.tokens import quote_fts_term

K1 = 1.2  # FTS5's bm25() constant; the bound is (K1 + 1) × idf
RARE_ROWS = 8000  # at most this many matches in all: rank them in one query instead
#: rows with the highest upper bounds scored first, for the floor. Each scoring query pays a
#: fixed cost (FTS5 walks every match of the query and counts each word's rows for its idf)
#: and little per row scored, so a probe large enough that the second query is rarely needed
#: measured best: 1,200–2,800 alike, 600 and 4,000 slower at 100,000 memories
PROBE = 2000
ESSENTIAL_ROWS = 4 * RARE_ROWS  # phrases: matches of the essential ones scored in a 2nd pass
#: slack on the floor: a bound computed here must never exclude a row that FTS5's own
#: arithmetic scores exactly at the floor
EPSILON = 1e-9


def pruned_top(
    conn: sqlite3.Connection, table: str, terms: list[str], k: int
) -> list[tuple[int, float]] | None:
    """The best k (rowid, bm25) of the OR of `terms` over `table`, best first, or None when
    the shortcut does not apply (few matches: rank them all)."""
    ids = {t: _row_ids(conn, table, t) for t in dict.fromkeys(terms)}
    terms = [t for t, rows in ids.items() if rows.size]
    if not terms or sum(ids[t].size for t in terms) <= RARE_ROWS:
        return None
    seqs, upper = upper_bounds(ids, _upper_rows(conn, table))
    if seqs.size <= k:
        return None
    everything = _or(terms)
    probe = np.argpartition(-upper, min(PROBE, seqs.size) - 1)[:PROBE]
    first = _scored(conn, table, everything, seqs[probe], k)
    if len(first) < k:
        return None
    floor = -first[k - 1][1]  # bm25() is negative: lower is better
    above = upper >= floor - EPSILON
    above[probe] = False  # scored already
    if not above.any():
        return first
    merged = first + _scored(conn, table, everything, seqs[above], k)
    merged.sort(key=lambda r: r[1])
    return merged[:k]


def phrase_pruned_top(
    conn: sqlite3.Connection, table: str, phrases: list[str], k: int
) -> list[tuple[int, float]] | None:
    """`pruned_top` for two-word phrases, whose rows cost a position check to find: reading
    them all for the bounds measured slower (1.1× at the 95th percentile) than the floor from
    the rows of the rarest phrases, the shortcut kept for them. The floor is the k-th best of
    every row matching the rarest phrases (as many as fit `RARE_ROWS` rows); the phrases whose
    bounds add up to less cannot lift a row on their own, so the rows of the others (the
    essential ones) are scored when they were not already, up to `ESSENTIAL_ROWS`."""
    hits = {t: _count(conn, table, t) for t in dict.fromkeys(phrases)}
    phrases = [t for t, n in hits.items() if n > 0]
    if not phrases or sum(hits[t] for t in phrases) <= RARE_ROWS:
        return None
    everything = _or(phrases)
    rare: list[str] = []
    total = 0
    for phrase in sorted(phrases, key=lambda t: hits[t]):
        if rare and total + hits[phrase] > RARE_ROWS:
            break
        rare.append(phrase)
        total += hits[phrase]
    first = _scored_among(conn, table, everything, _or(rare), k)
    if len(first) < k:
        return None
    floor = -first[k - 1][1]
    rows = _upper_rows(conn, table)
    bound = {t: (K1 + 1) * _idf(rows, hits[t]) for t in phrases}
    essential: list[str] = []
    below = 0.0
    for phrase in sorted(phrases, key=lambda t: bound[t]):
        if below + bound[phrase] < floor:
            below += bound[phrase]
        else:
            essential.append(phrase)
    if set(essential) <= set(rare):
        return first
    if sum(hits[t] for t in essential) > ESSENTIAL_ROWS:
        return None
    return _scored_among(conn, table, everything, _or(essential), k)


def _or(terms: list[str]) -> str:
    return " OR ".join(quote_fts_term(t) for t in terms)


def _count(conn: sqlite3.Connection, table: str, term: str) -> int:
    return fts.match_count(conn, table, quote_fts_term(term))


def _scored_among(
    conn: sqlite3.Connection, table: str, everything: str, among: str, k: int
) -> list[tuple[int, float]]:
    """bm25 of the whole query for the rows matching `among` (the `+rowid` guard of
    `_scored`)."""
    return fts.scored_among(conn, table, everything, among, k)


def upper_bounds(ids: dict[str, np.ndarray], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Every row matching a term, and the sum of the bounds of the terms it holds."""
    matched = np.concatenate(list(ids.values()))
    shares = np.concatenate([np.full(r.size, (K1 + 1) * _idf(rows, r.size))
                             for r in ids.values()])
    # dense over the rowids (they are below the largest one): a counting pass, no sort
    dense = np.bincount(matched, weights=shares)
    seqs = np.flatnonzero(dense)
    return seqs, dense[seqs]


def _row_ids(conn: sqlite3.Connection, table: str, term: str) -> np.ndarray:
    """The rowids matching one term, read without scoring (one string, parsed in C)."""
    text = fts.row_ids_text(conn, table, quote_fts_term(term))
    return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, np.int64)


def _scored(
    conn: sqlite3.Connection, table: str, everything: str, seqs: np.ndarray, k: int
) -> list[tuple[int, float]]:
    """bm25 of the whole query, computed only for the given rows (`+rowid` keeps SQLite
    from handing the IN to FTS5, which would re-run the query once per row)."""
    return fts.scored(conn, table, everything, seqs.tolist(), k)


def _upper_rows(conn: sqlite3.Connection, table: str) -> int:
    """At least the index's row count (FTS5's N): the largest rowid. A larger N only raises
    idf, so the bounds stay bounds."""
    return fts.largest_rowid(conn, table)


def _idf(rows: int, hits: int) -> float:
    """FTS5's idf: log((N - n + 0.5) / (n + 0.5)), at least 1e-6."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > hits else 0.0
    return max(value, 1e-6)
