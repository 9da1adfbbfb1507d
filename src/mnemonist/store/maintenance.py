"""What the maintenance worker's diagnostics read and its FTS repairs run
(pipeline/repair.py): table and index sizes, tombstone counts, FTS5's integrity check and
rebuild. `fts` is an FTS5 index's name and `table` a table's, never user text."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store import expiry


def table_exists(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = ? AND type = 'table'", (name,)
    ).fetchone() is not None


def index_size(conn: sqlite3.Connection, fts: str) -> int:
    """The documents an external-content FTS5 index holds: its `_docsize` shadow table's rows
    (its own COUNT(*) would answer from the content table)."""
    count: int = conn.execute(f"SELECT COUNT(*) FROM {fts}_docsize").fetchone()[0]
    return count


def table_rows(conn: sqlite3.Connection, table: str) -> int:
    count: int = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    return count


def live_memories(conn: sqlite3.Connection) -> int:
    """Memories not deleted (superseded ones included)."""
    count: int = conn.execute(
        "SELECT COUNT(*) FROM memories WHERE is_deleted = 0").fetchone()[0]
    return count


def tombstone_counts(conn: sqlite3.Connection) -> tuple[Any, Any, Any]:
    """(memories, deleted ones, events the expiry archived: store.expiry) — the archived are
    among the deleted, and no sweep purges them."""
    row = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(is_deleted = 1), 0),"
        f" COALESCE(SUM(CASE WHEN {expiry.ARCHIVED} THEN 1 ELSE 0 END), 0) FROM memories"
    ).fetchone()
    return row[0], row[1], row[2]


def integrity_check(conn: sqlite3.Connection, fts: str) -> None:
    """FTS5's own check of the index against its content table (in the write transaction);
    raises sqlite3.DatabaseError when they disagree."""
    conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")


def rebuild(conn: sqlite3.Connection, fts: str) -> None:
    """FTS5's 'rebuild' of the index from its content table (in the write transaction)."""
    conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")
