"""Which store a daemon opens: the SQLite file in its home (the default, no server), or the
PostgreSQL database `storage.url` names (a team's shared memory, docs/postgres.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mnemonist.model.config import Config
from mnemonist.store.db import Database


class StorageNotReady(RuntimeError):
    """The store cannot be opened as it is (the PostgreSQL server is unreachable, too old,
    lacks pgvector, or the role lacks a privilege): one line naming the problem and its fix.
    `mnemonist serve` and `migrate` print it and exit 1; nothing was written."""


def is_postgres(conn: Any) -> bool:
    """True for a PostgreSQL connection or database (SQLite's have no `dialect`)."""
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def open_database(sqlite_path: Path, config: Config) -> Any:
    url = config.storage.url
    if url:
        from mnemonist.store.postgres.database import PostgresDatabase

        return PostgresDatabase(url, pool_max=config.storage.pool_size)
    return Database(sqlite_path, durability=config.memory.durability)


def serialize(conn: Any, *parts: str) -> None:
    """Hold writers of the same `parts` one after the other until this transaction ends.

    SQLite has one writer at a time already: nothing to do. On PostgreSQL several daemons
    write at once; a read-then-write that must see the others' writes (the live memories of
    a key, before superseding them) takes a transaction-scoped advisory lock on `parts`, and a
    second writer of the same parts waits for the first to commit, then reads its row."""
    if is_postgres(conn):
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
                     ("\x1f".join(parts),))
