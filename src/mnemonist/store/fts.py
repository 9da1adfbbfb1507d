"""The SQLite keyword leg's reads of its FTS5 indexes (`memories_fts`, `memories_ctx_fts`,
`memory_hints_fts`). search/keyword.py decides which to run and search/keyword_pruning.py
which rows to score; PostgreSQL's keyword leg is store/postgres/fts.py. A MATCH expression is
always a bound parameter (user text is data); `table` is one of the index names above and
`where` a condition built by store/filters.py over `memories m`.

Also the throwaway in-memory FTS5 table through which search/fts_words.py learns how the
indexes' tokenizer ('porter unicode61') folds and stems a word.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

#: a lookup of known seqs goes by the primary key: without it the planner may prefer an index
#: that leads with `is_deleted` (memories_occurred) for the filters' `m.is_deleted = 0` and read
#: every live row (measured 27 ms a page at 100,000 memories)
BY_SEQ = "NOT INDEXED"


# -- the memories a filter allows ------------------------------------------------------------


def filtered_seqs(conn: sqlite3.Connection, where: str, args: list[Any],
                  limit: int) -> Iterator[int]:
    """The seqs of the memories passing `where`, at most `limit`, read as they are iterated
    (the query runs at once)."""
    return (r[0] for r in conn.execute(
        f"SELECT m.seq FROM memories m WHERE {where} LIMIT ?", [*args, limit]))


def passing_seqs(conn: sqlite3.Connection, seqs: list[int], where: str,
                 args: list[Any]) -> set[int]:
    """Those of `seqs` whose memory passes `where` (read by the primary key: `BY_SEQ`)."""
    marks = ",".join("?" * len(seqs))
    return {r[0] for r in conn.execute(
        f"SELECT m.seq FROM memories m {BY_SEQ} WHERE m.seq IN ({marks}) AND {where}",
        [*seqs, *args],
    )}


# -- ranking ---------------------------------------------------------------------------------


def joined(
    conn: sqlite3.Connection, table: str, match: str, where: str, args: list[Any], k: int
) -> list[tuple[int, float]]:
    """Top-k (seq, bm25) of the matches passing `where`, the filter inside the FTS5 query."""
    rows = conn.execute(
        f"SELECT m.seq, bm25({table}) AS score FROM {table}"
        f" JOIN memories m ON m.seq = {table}.rowid"
        f" WHERE {table} MATCH ? AND {where} ORDER BY score LIMIT ?",
        [match, *args, k],
    ).fetchall()
    return [(row[0], row[1]) for row in rows]


def ranked(conn: sqlite3.Connection, table: str, match: str, limit: int) -> list[Any]:
    """The best `limit` (rowid, rank) rows of the index alone, best first."""
    return conn.execute(
        f"SELECT rowid, rank FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?",
        [match, limit],
    ).fetchall()


def ranked_after(conn: sqlite3.Connection, table: str, match: str,
                 offset: int) -> sqlite3.Cursor:
    """Every (rowid, rank) row of the index past the first `offset`, best first: an open
    cursor, read a page at a time (the caller closes it)."""
    return conn.execute(
        f"SELECT rowid, rank FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT -1 OFFSET ?",
        [match, offset],
    )


def hint_scores(
    conn: sqlite3.Connection, match: str, where: str, args: list[Any], limit: int
) -> sqlite3.Cursor:
    """(seq, bm25) of each matching hint whose memory passes `where`, best first, at most
    `limit`: a memory appears once per matching hint."""
    return conn.execute(
        "SELECT m.seq, bm25(memory_hints_fts) AS score FROM memory_hints_fts"
        " JOIN memory_hints h ON h.id = memory_hints_fts.rowid"
        f" JOIN memories m ON m.id = h.memory_id WHERE memory_hints_fts MATCH ? AND {where}"
        " ORDER BY score LIMIT ?",
        [match, *args, limit],
    )


def content_matches(conn: sqlite3.Connection, match: str, seqs: list[int]) -> list[int]:
    """Those of `seqs` whose own text (`memories_fts`) matches."""
    marks = ",".join("?" * len(seqs))
    return [r[0] for r in conn.execute(
        f"SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN ({marks})",
        [match, *seqs],
    )]


# -- the pruned top k (search/keyword_pruning.py) --------------------------------------------


def match_count(conn: sqlite3.Connection, table: str, match: str) -> int:
    return int(conn.execute(
        f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (match,)
    ).fetchone()[0])


def scored_among(
    conn: sqlite3.Connection, table: str, everything: str, among: str, k: int
) -> list[tuple[int, float]]:
    """bm25 of `everything` for the rows matching `among`, the best k (the `+rowid` guard of
    `scored`)."""
    rows = conn.execute(
        f"SELECT rowid, bm25({table}) AS score FROM {table} WHERE {table} MATCH ?"
        f" AND +rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
        " ORDER BY score LIMIT ?",
        (everything, among, k),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def row_ids_text(conn: sqlite3.Connection, table: str, match: str) -> str | None:
    """The rowids matching, comma-separated in one string, read without scoring."""
    text: str | None = conn.execute(
        f"SELECT group_concat(rowid) FROM {table} WHERE {table} MATCH ?", (match,)
    ).fetchone()[0]
    return text


def scored(
    conn: sqlite3.Connection, table: str, everything: str, seqs: list[int], k: int
) -> list[tuple[int, float]]:
    """bm25 of `everything`, computed only for the given rows, the best k (`+rowid` keeps
    SQLite from handing the IN to FTS5, which would re-run the query once per row)."""
    rows = conn.execute(
        f"SELECT rowid, bm25({table}) AS score FROM {table} WHERE {table} MATCH ?"
        " AND +rowid IN (SELECT value FROM json_each(?)) ORDER BY score LIMIT ?",
        (everything, json.dumps(seqs), k),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def largest_rowid(conn: sqlite3.Connection, table: str) -> int:
    """The index's largest rowid (0 when empty)."""
    row = conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid DESC LIMIT 1").fetchone()
    return int(row[0]) if row else 0


# -- the tokenizer (search/fts_words.py) -----------------------------------------------------


def tokenizer() -> sqlite3.Connection:
    """An in-memory database with an FTS5 table of the indexes' tokenizer and its
    `fts5vocab` instance table, for `tokens_of`."""
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE VIRTUAL TABLE w USING fts5(x, tokenize='porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE w_tokens USING fts5vocab(w, instance)")
    return db


def tokens_of(db: sqlite3.Connection, words: list[str]) -> dict[int, list[str]]:
    """{i: the tokens FTS5 makes of words[i - 1], in order}; a word FTS5 makes no token of
    is missing. The table is emptied again."""
    tokens: dict[int, list[str]] = defaultdict(list)
    db.executemany("INSERT INTO w(rowid, x) VALUES (?, ?)", enumerate(words, 1))
    for term, doc in db.execute(
        "SELECT term, doc FROM w_tokens ORDER BY doc, offset"
    ):
        tokens[doc].append(term)
    db.execute("DELETE FROM w")
    return tokens
