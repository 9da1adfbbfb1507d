"""Where does a string survive? Every column of every table (FTS5 shadow tables included, their
blobs as bytes) and the raw bytes of the database, its WAL and its shared-memory file."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from conftest import current_store


def file_hits(db_path: Path, needles: list[str]) -> list[str]:
    """'<file>: <needle>' for each file of the database whose bytes hold a needle."""
    hits = []
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = Path(f"{db_path}{suffix}")
        if not path.exists():
            continue
        data = path.read_bytes()
        for needle in needles:
            for form in {needle.encode(), needle.lower().encode(), needle.upper().encode()}:
                if form in data:
                    hits.append(f"{path.name}: {needle}")
    return sorted(set(hits))


def table_hits(db_path: Path, needles: list[str]) -> list[str]:
    """'<table>.<column>: <needle>' for every stored value that holds a needle (any case)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    hits: set[str] = set()
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            cur = conn.execute(f'SELECT * FROM "{table}"')
            names = [d[0] for d in cur.description]
            for row in cur:
                for name, value in zip(names, row, strict=True):
                    if value is None:
                        continue
                    raw = value if isinstance(value, bytes) else str(value).encode()
                    for needle in needles:
                        if needle.lower().encode() in raw.lower():
                            hits.add(f"{table}.{name}: {needle}")
    finally:
        conn.close()
    return sorted(hits)


def everywhere(db_path: Path, needles: list[str]) -> list[str]:
    """Both scans (the files first: opening a connection must not change what they hold)."""
    return file_hits(db_path, needles) + table_hits(db_path, needles)


def pg_table_hits(live: Any, needles: list[str]) -> list[str]:
    """`table_hits` on PostgreSQL: every column of every table of the daemon's database, read
    through its own store (the tsvectors as their lexemes)."""
    hits: set[str] = set()
    tables = [r[0] for r in live.query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        " AND table_type = 'BASE TABLE'")]
    for table in tables:
        for row in live.query(f'SELECT * FROM "{table}"'):
            names = row.keys()
            for name, value in zip(names, row, strict=False):
                if value is None:
                    continue
                raw = value if isinstance(value, bytes) else str(value).encode()
                for needle in needles:
                    if needle.lower().encode() in raw.lower():
                        hits.add(f"{table}.{name}: {needle}")
    return sorted(hits)


def stored_hits(live: Any, needles: list[str]) -> list[str]:
    """Every table of the daemon's store, on either store."""
    if current_store() == "postgresql":
        return pg_table_hits(live, needles)
    return table_hits(live.daemon.paths.database, needles)


def store_everywhere(live: Any, needles: list[str]) -> list[str]:
    """`everywhere` on SQLite (tables and the files' bytes); on PostgreSQL every table (its
    files are the server's: a deleted row's bytes stay in them until VACUUM reuses the space)."""
    if current_store() == "postgresql":
        return pg_table_hits(live, needles)
    return everywhere(live.daemon.paths.database, needles)
