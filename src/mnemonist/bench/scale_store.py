"""Where a scale run's store lives and what it weighs: the SQLite files' sizes, or an
(empty) PostgreSQL database given with `--storage`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MIB = 1024 * 1024


def file_sizes(db_path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for suffix, key in (("", "db_mib"), ("-wal", "wal_mib"), ("-shm", "shm_mib")):
        p = db_path.with_name(db_path.name + suffix)
        out[key] = round(p.stat().st_size / MIB, 2) if p.exists() else 0.0
    out["total_mib"] = round(sum(out.values()), 2)
    return out


def storage_url(daemon: Any) -> str:
    """The daemon's PostgreSQL URL; empty on SQLite."""
    return daemon.config.storage.url or ""


def without_password(url: str) -> str:
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def _value(conn: Any, sql: str) -> Any:
    """The first value of a query that always answers one row (a psycopg connection)."""
    row = conn.execute(sql).fetchone()
    assert row is not None, sql
    return row[0]


def check_empty_postgres(url: str, sizes: list[int]) -> None:
    """`--storage` runs one size into one empty database: the benchmark never deletes."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise ValueError("storage must be a postgresql:// URL")
    if len(sizes) != 1:
        raise ValueError("with a PostgreSQL storage give one size (--n) per empty database")
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if _value(conn, "SELECT to_regclass('memories')") is not None and (
                _value(conn, "SELECT EXISTS (SELECT 1 FROM memories)")):
            raise ValueError("the PostgreSQL database already holds memories: give an empty"
                             " one")


def pg_size(url: str) -> dict[str, float]:
    """The PostgreSQL database's size (pg_database_size, its WAL is the server's), in the
    keys of the SQLite file sizes."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        n = _value(conn, "SELECT pg_database_size(current_database())")
    size = round(int(n) / MIB, 2)
    return {"db_mib": size, "wal_mib": 0.0, "shm_mib": 0.0, "total_mib": size}
