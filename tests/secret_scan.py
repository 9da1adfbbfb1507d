"""Where does a string survive? Every column of every table (FTS5 shadow tables included, their
blobs as bytes) and the raw bytes of the database, its WAL and its shared-memory file."""

from __future__ import annotations

import sqlite3
from pathlib import Path


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
