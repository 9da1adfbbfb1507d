"""Reads of the memories table that recall's helpers make beside the ranking itself
(search/): the seqs a filter allows, the texts of the best candidates, the sessions of
candidates and their turns, and who wrote memories. `where` is a condition built by
store/filters.py over `memories m`."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.fts import BY_SEQ

#: without it the planner prefers an index that leads with `is_deleted` for the filters'
#: `m.is_deleted = 0` and reads every live row (PostgreSQL's dialect drops the clause)
BY_SOURCE = "INDEXED BY memories_source"


def allowed_seqs(conn: sqlite3.Connection, where: str, args: list[Any]) -> set[int]:
    """Every memory's seq that passes `where`."""
    sql = f"SELECT m.seq FROM memories m WHERE {where}"
    return {r[0] for r in conn.execute(sql, args)}


def contents(conn: sqlite3.Connection, seqs: list[int]) -> list[Any]:
    """(seq, content) of these memories (by the primary key)."""
    marks = ",".join("?" * len(seqs))
    return conn.execute(
        f"SELECT m.seq, m.content FROM memories m {BY_SEQ} WHERE m.seq IN ({marks})",
        seqs,
    ).fetchall()


def sources_of(conn: sqlite3.Connection, seqs: list[int]) -> list[Any]:
    """(seq, project, source_id) of those of these memories that have a source (by the
    primary key)."""
    marks = ",".join("?" * len(seqs))
    return conn.execute(
        f"SELECT m.seq, m.project, m.source_id FROM memories m {BY_SEQ}"
        f" WHERE m.seq IN ({marks}) AND m.source_id IS NOT NULL",
        seqs,
    ).fetchall()


def source_members(conn: sqlite3.Connection, sources: list[str], where: str,
                   args: list[Any]) -> list[Any]:
    """(seq, project, source_id) of the memories of these sources that pass `where`."""
    marks = ",".join("?" * len(sources))
    return conn.execute(
        f"SELECT m.seq, m.project, m.source_id FROM memories m {BY_SOURCE}"
        f" WHERE m.source_id IN ({marks}) AND {where}",
        [*sources, *args],
    ).fetchall()


def projects_and_sources(conn: sqlite3.Connection, seqs: list[int]) -> list[Any]:
    """(project, source_id) of those of these memories that have a source."""
    marks = ",".join("?" * len(seqs))
    return conn.execute(
        f"SELECT project, source_id FROM memories WHERE seq IN ({marks})"
        " AND source_id IS NOT NULL", seqs).fetchall()


def current_members(conn: sqlite3.Connection, sources: list[str]) -> list[Any]:
    """(seq, project, source_id) of the live, current memories of these sources."""
    marks = ",".join("?" * len(sources))
    return conn.execute(
        f"SELECT m.seq, m.project, m.source_id FROM memories m {BY_SOURCE}"
        f" WHERE m.source_id IN ({marks}) AND m.is_deleted = 0"
        " AND m.superseded_at IS NULL", sources).fetchall()


def authors_after(conn: sqlite3.Connection, last: int) -> list[Any]:
    """(who, its largest seq) of each author of a memory after seq `last`."""
    return conn.execute(
        "SELECT who, MAX(seq) FROM memories WHERE seq > ? AND who IS NOT NULL GROUP BY who",
        (last,),
    ).fetchall()


def authors(conn: sqlite3.Connection) -> list[Any]:
    """(who, its largest seq) of every author."""
    return conn.execute(
        "SELECT who, MAX(seq) FROM memories WHERE who IS NOT NULL GROUP BY who").fetchall()
