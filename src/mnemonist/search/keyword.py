"""The keyword leg: FTS5 BM25 over `memories_fts` (or the context or hints index), user text
always treated as data."""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from mnemonist.model.requests import IDENTITY_FIELDS, RecallFilters
from mnemonist.search.filters import where_clause
from mnemonist.search.keyword_mirror import KeywordMirror
from mnemonist.search.keyword_pruning import phrase_pruned_top, pruned_top
from mnemonist.store import fts
from mnemonist.store.backend import is_postgres
from mnemonist.store.postgres import fts as pg_fts
from mnemonist.text.tokens import (
    MAX_QUERY_TERMS,
    content_tokens,
    fts_match_query,
    fts_phrase_query,
    query_phrases,
    quote_fts_term,
    tokenize,
)

MAX_HINTS_PER_MEMORY = 20  # the upper bound of memory.pipelineV2.hints.max
FILTER_PAGE = 250  # ranked matches checked against the filters per query
#: a filter allowing at most this many memories: the mirror ranks among them; past it, the
#: mirror's best rows are checked against the filter a page at a time (most pass)
MIRROR_AMONG = 20_000
#: a filter that may be broad (`may_be_broad`), ranked by the mirror: k more than this many
#: pages of checks away at the rate seen so far, and it is taken as narrow (the memories it
#: allows are read instead)
BROAD_PAGES = 4
INDEXES = {"content": "memories_fts", "context": "memories_ctx_fts", "hints": "memory_hints_fts"}


def keyword_search(
    conn: sqlite3.Connection,
    query: str,
    filters: RecallFilters | None,
    k: int,
    *,
    operator: str = "OR",
    index: str = "content",
    mirror: KeywordMirror | None = None,
) -> list[tuple[int, float]]:
    """Top-k (seq, raw bm25) for live memories; raw BM25 is negative, lower is better.

    `index` is "content" (the memory's own text), "context" (the memory with its neighbours
    in its source, see store.context) or "hints" (the questions it answers, store.hints).
    `mirror`: the in-memory copy of the context index, caught up (search/keyword_mirror.py),
    which ranks the same rows with the same scores without FTS5's walk over every match."""
    if is_postgres(conn):
        terms = query_terms(query)
        if mirror is not None and index == "context" and operator.upper() == "OR" and terms:
            found = _mirrored(conn, mirror, terms, *where_clause(filters), k, filters)
            if found is not None:
                return found
        return pg_fts.keyword_search(conn, terms, filters, k, operator=operator, index=index)
    match = fts_match_query(query, operator=operator)
    if match is None:
        return []
    or_terms = query_terms(query) if operator.upper() == "OR" else None
    return _search(conn, match, filters, k, index, or_terms, mirror=mirror)


def phrase_search(
    conn: sqlite3.Connection, query: str, filters: RecallFilters | None, k: int,
    *, index: str = "content", mirror: KeywordMirror | None = None,
) -> list[tuple[int, float]]:
    """Top-k (seq, raw bm25) of memories holding one of the query's two-word phrases."""
    if is_postgres(conn):
        phrases = query_phrases(query)
        if mirror is not None and index == "context" and phrases:
            found = _mirrored(conn, mirror, phrases, *where_clause(filters), k, filters)
            if found is not None:
                return found
        return pg_fts.phrase_search(conn, phrases, filters, k, index=index)
    match = fts_phrase_query(query)
    if match is None:
        return []
    return _search(conn, match, filters, k, index, query_phrases(query), phrases=True,
                   mirror=mirror)


def _search(
    conn: sqlite3.Connection, match: str, filters: RecallFilters | None, k: int, index: str,
    terms: list[str] | None = None, *, phrases: bool = False,
    mirror: KeywordMirror | None = None,
) -> list[tuple[int, float]]:
    """`terms`: the words (or two-word `phrases`) OR-ed in `match`, when the exact shortcut
    of keyword_pruning or the mirror may answer (they need them one by one)."""
    table = INDEXES[index]
    where, args = where_clause(filters)
    if index == "hints":
        return _hint_search(conn, match, where, args, k)
    if terms and mirror is not None and index == "context":
        found = _mirrored(conn, mirror, terms, where, args, k, filters)
        if found is not None:
            return found
    if selective(filters):
        return _joined(conn, table, match, where, args, k)
    if terms:
        top = (phrase_pruned_top if phrases else pruned_top)(conn, table, terms, k)
        if top is not None:
            out: list[tuple[int, float]] = []
            _keep_passing(conn, top, where, args, k, out)
            if len(out) >= k:  # else a filter rejected some: rank every match below
                return out
    return _ranked_then_filtered(conn, table, match, where, args, k)


def _mirrored(
    conn: sqlite3.Connection, mirror: KeywordMirror, terms: list[str], where: str,
    args: list[Any], k: int, filters: RecallFilters | None,
) -> list[tuple[int, float]] | None:
    """The mirror's best rows that pass the filters, asking it for more while a filter
    rejects some; None when the mirror cannot rank these terms (FTS5 then does).

    A filter that selects may allow few memories (a time window, a session) or most of them
    (a project, a scope): the mirror's best rows are checked first when it may be broad, and
    while they pass at a rate that finds k within `BROAD_PAGES` more pages. Otherwise the
    memories it allows, when at most `MIRROR_AMONG`, are read and the mirror ranks among
    those alone: the time-candidate pass of a query that names a date took 200 ms through
    FTS5's joined query at a million memories, and reading the 20,000 memories of a large
    project took the prompt hook 400 ms on PostgreSQL at 100,000."""
    keys = mirror.keys(terms)
    if keys is None:
        return None
    want = max(FILTER_PAGE, 2 * k)
    verdict: dict[int, bool] = {}  # rows checked against the filter, whatever the round
    broad = not selective(filters) or may_be_broad(filters)
    while broad:
        ranked = mirror.top(keys, want)
        out = _passing(conn, ranked, where, args, k, verdict)
        if len(out) >= k or len(ranked) < want:
            return out
        rate = len(out) / len(verdict)
        if selective(filters) and (k - len(out)) > rate * BROAD_PAGES * FILTER_PAGE:
            break  # a narrow filter after all: k lies more pages away than that
        want *= 4
    allowed = np.fromiter(fts.filtered_seqs(conn, where, args, MIRROR_AMONG + 1),
                          dtype=np.int64)
    if allowed.size <= MIRROR_AMONG:
        return mirror.top(keys, k, among=allowed)
    while True:  # allows too many to read: its best rows, page by page
        ranked = mirror.top(keys, want)
        out = _passing(conn, ranked, where, args, k, verdict)
        if len(out) >= k or len(ranked) < want:
            return out
        want *= 4


def _passing(conn: sqlite3.Connection, ranked: list[tuple[int, float]], where: str,
             args: list[Any], k: int, verdict: dict[int, bool]) -> list[tuple[int, float]]:
    """The first k of the ranked (rowid, score) rows whose memory passes, in rank order.
    Rows are checked a page at a time; `verdict` keeps each row's answer, so that a longer
    ranking of the same query asks only about the rows it adds."""
    out: list[tuple[int, float]] = []
    for i, (seq, score) in enumerate(ranked):
        if seq not in verdict:
            page = [r[0] for r in ranked[i:] if r[0] not in verdict][:FILTER_PAGE]
            passing = fts.passing_seqs(conn, page, where, args)
            verdict.update((p, p in passing) for p in page)
        if verdict[seq]:
            out.append((seq, score))
            if len(out) >= k:
                break
    return out


def selective(filters: RecallFilters | None) -> bool:
    """True when the filters may reject most matches (anything beyond the default "live and
    current"): the filter then runs inside the FTS5 query, so that only the rows that pass
    are scored."""
    return filters is not None and not filters.is_empty()


#: filters that select by where a memory belongs or what it is: a project, a scope (the
#: hooks' own: the project and memories of no project), a type. One project often holds most
#: of a store, and every prompt of an agent's session recalls within it
BROAD_KINDS = frozenset({"project", "scope", "type", "source_type"})


def may_be_broad(filters: RecallFilters | None) -> bool:
    """The filter selects only by `BROAD_KINDS`: it may pass most matches, so the best rows
    of the unfiltered ranking are tried first. Any other filter (a time, a session, a key,
    tags, a person) is taken as narrow."""
    if filters is None:
        return True
    return all(getattr(filters, name) is None for name in type(filters).model_fields
               if name not in BROAD_KINDS and name != "include_superseded"
               and name not in IDENTITY_FIELDS)


def _joined(
    conn: sqlite3.Connection, table: str, match: str, where: str, args: list[Any], k: int
) -> list[tuple[int, float]]:
    return fts.joined(conn, table, match, where, args, k)


def _ranked_then_filtered(
    conn: sqlite3.Connection, table: str, match: str, where: str, args: list[Any], k: int
) -> list[tuple[int, float]]:
    """FTS5 ranks its matches alone (no join per match: at 100,000 memories the join cost
    more than the scoring), then the best are checked against the filters a page at a time
    until k pass. Nearly every match passes the default filters (live, not superseded), so
    one page usually answers; a bounded first query (`LIMIT`) keeps FTS5's sorter small, and
    only when too few of its rows pass does an unbounded one continue where it stopped."""
    first = max(FILTER_PAGE, 2 * k)
    out: list[tuple[int, float]] = []
    ranked = fts.ranked(conn, table, match, first)
    _keep_passing(conn, ranked, where, args, k, out)
    if len(out) >= k or len(ranked) < first:
        return out[:k]
    cursor = fts.ranked_after(conn, table, match, first)
    while len(out) < k:
        page = cursor.fetchmany(FILTER_PAGE)
        if not page:
            break
        _keep_passing(conn, page, where, args, k, out)
    cursor.close()
    return out[:k]


def _keep_passing(
    conn: sqlite3.Connection, ranked: list[Any], where: str, args: list[Any], k: int,
    out: list[tuple[int, float]],
) -> None:
    """Append to `out`, in rank order, the ranked (rowid, score) rows whose memory passes."""
    for start in range(0, len(ranked), FILTER_PAGE):
        if len(out) >= k:
            return
        page = ranked[start : start + FILTER_PAGE]
        passing = fts.passing_seqs(conn, [r[0] for r in page], where, args)
        out.extend((r[0], r[1]) for r in page if r[0] in passing)


def _hint_search(
    conn: sqlite3.Connection, match: str, where: str, args: list[Any], k: int
) -> list[tuple[int, float]]:
    """A memory's hint score is its best hint's BM25 (several hints never add up). Grouped
    here, not in SQL: FTS5 refuses bm25() under an aggregate. The best k × MAX_HINTS_PER_MEMORY
    rows hold at least k memories (the worker writes at most `hints.max` ≤ 20 per memory)."""
    best: dict[int, float] = {}
    for seq, score in fts.hint_scores(conn, match, where, args, k * MAX_HINTS_PER_MEMORY):
        if seq not in best:
            best[seq] = score
            if len(best) >= k:
                break
    return list(best.items())


def query_terms(query: str) -> list[str]:
    """The words of a query that count as evidence: its content words (all its words when
    every one is a stop word), as the keyword leg searches them."""
    return (content_tokens(query) or list(dict.fromkeys(tokenize(query))))[:MAX_QUERY_TERMS]


def terms_in(conn: sqlite3.Connection, terms: list[str], seqs: list[int]) -> dict[int, list[str]]:
    """For each memory (by seq), the terms its own text holds, as FTS5 matches them (porter
    stemming: "notes" matches "note"). Neighbours' words (the context index) do not count."""
    if is_postgres(conn):
        return pg_fts.terms_in(conn, terms, seqs)
    found: dict[int, list[str]] = {seq: [] for seq in seqs}
    if not seqs:
        return found
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        for term in terms:
            for seq in fts.content_matches(conn, quote_fts_term(term), chunk):
                found[seq].append(term)
    return found
