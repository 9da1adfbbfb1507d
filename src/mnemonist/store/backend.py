"""Which store a daemon opens: the SQLite file in its home (the default, no server), or the
PostgreSQL database `storage.url` names (a team's shared memory, docs/postgres.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mnemonist.model.config import Config
from mnemonist.store.db import Database


def is_postgres(conn: Any) -> bool:
    """True for a PostgreSQL connection or database (SQLite's have no `dialect`)."""
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def open_database(sqlite_path: Path, config: Config) -> Any:
    url = config.storage.url
    if url:
        from mnemonist.store.postgres.database import PostgresDatabase

        return PostgresDatabase(url, pool_max=config.storage.pool_size)
    return Database(sqlite_path, durability=config.memory.durability)
