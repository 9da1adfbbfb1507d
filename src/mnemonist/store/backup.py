"""The SQLite file read through connections of their own, beside the daemon's (service/
export.py): a read-only snapshot for an export, a page-by-page copy for a backup, and a look at
a file that may be a backup. PostgreSQL has neither (its snapshot is `PostgresDatabase
.snapshot`; its backup is pg_dump's)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def snapshot(path: str) -> Iterator[sqlite3.Connection]:
    """A connection of its own inside one read-only transaction that has already read: every
    later statement sees the state of that first read (WAL snapshot isolation)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA query_only=ON")
        conn.execute("BEGIN")
        conn.execute("SELECT 1 FROM memories LIMIT 1").fetchall()  # the snapshot starts
        yield conn
    finally:
        conn.close()


def copy_file(source: str, target: str) -> tuple[int, int]:
    """Copy the database at `source` into the file `target` with SQLite's online backup, all
    pages in one step (one consistent state), as one self-contained file (no WAL); returns
    (pages, memories) of the copy."""
    src = sqlite3.connect(source, timeout=30.0)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)  # pages=-1: all of it in one step, one consistent state
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        pages: int = dst.execute("PRAGMA page_count").fetchone()[0]
        memories: int = dst.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    finally:
        dst.close()
        src.close()
    return pages, memories


def table_names(path: str) -> set[str]:
    """The tables of the SQLite file at `path`, opened read-only; raises sqlite3.Error when it
    is not one."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()
