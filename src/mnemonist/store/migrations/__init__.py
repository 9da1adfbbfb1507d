"""Numbered schema migrations, applied in order at start, each in its own transaction.

A migration is registered once and never edited after it ships: a change is a new number.
`schema_migrations` records what ran, so applying is idempotent. This module holds the registry
and the runner; the migrations live in one module per group of versions (`core`,
`sessions_context`, `lifecycles_scopes`, `graph_scale_sparse`), imported at the end of this
one. A new migration goes at the end of the last group, or in a new module imported there.

PostgreSQL (`storage.url: postgresql://…`) shares this registry. Versions 1..`PG_BASELINE`
are one script there, `store/postgres/baseline.sql` (the SQLite schema at that version,
translated; FTS5 tables become tsvector columns with GIN indexes). **Rule for every later
migration:** register its PostgreSQL form beside it, `@migration(N, "name", postgres=fn)`,
where `fn(conn)` gets a connection whose `.execute` takes this module's SQLite-dialect SQL for
the common subset (see `store/postgres/dialect.py`) and `conn.raw` (psycopg) for what only
PostgreSQL says (types, GIN/HNSW indexes, tsvector). A migration without one stops a
PostgreSQL database from starting, with a message naming it: nothing is skipped silently.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mnemonist.model.memory import utcnow
from mnemonist.store.db import WriterHooks


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]
    #: the PostgreSQL form (None for versions inside the PostgreSQL baseline)
    postgres: Callable[[Any], None] | None = None


MIGRATIONS: list[Migration] = []
#: versions 1..PG_BASELINE are store/postgres/baseline.sql on PostgreSQL
PG_BASELINE = 17


Apply = Callable[[sqlite3.Connection], None]


def migration(version: int, name: str, *, postgres: Callable[[Any], None] | None = None
              ) -> Callable[[Apply], Apply]:
    def register(fn: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
        if any(m.version == version for m in MIGRATIONS):
            raise RuntimeError(f"migration {version} registered twice")
        MIGRATIONS.append(Migration(version, name, fn, postgres))
        MIGRATIONS.sort(key=lambda m: m.version)
        return fn

    return register


def _script(conn: sqlite3.Connection, sql: str) -> None:
    for statement in _split(sql):
        conn.execute(statement)


def _split(sql: str) -> list[str]:
    """Split on semicolons that end a statement (trigger bodies hold their own)."""
    out, buf = [], []
    depth = 0
    for line in sql.splitlines():
        stripped = line.strip().upper()
        if stripped.startswith("CREATE TRIGGER"):
            depth = 1
        buf.append(line)
        if depth and stripped.startswith("END;"):
            depth = 0
            out.append("\n".join(buf))
            buf = []
        elif not depth and line.rstrip().endswith(";"):
            out.append("\n".join(buf))
            buf = []
    if "".join(buf).strip():
        out.append("\n".join(buf))
    return [s for s in out if s.strip()]


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer mnemonist than this one: this code does not know
    what those migrations changed, so it does not open it (nothing is written)."""


def refuse_newer(have: set[int], migrations: list[Migration]) -> None:
    known = max(m.version for m in migrations)
    if have and max(have) > known:
        raise SchemaTooNew(
            f"the database is at schema {max(have)}, newer than this mnemonist ({known}): a"
            " newer version has opened it. Run that version, or restore the backup taken"
            " before upgrading (docs/upgrading.md)")


def migrate(db: WriterHooks) -> list[int]:
    """Apply every pending migration; returns the versions applied now. A database at a
    schema newer than this code knows is refused (SchemaTooNew) before anything is written."""
    if getattr(db, "dialect", "sqlite") == "postgresql":
        from mnemonist.store.postgres.schema import migrate_postgres

        return migrate_postgres(db, MIGRATIONS, PG_BASELINE)
    done: list[int] = []
    with db.write_tx() as conn:
        have = applied_versions(conn)
    refuse_newer(have, MIGRATIONS)
    for m in MIGRATIONS:
        if m.version in have:
            continue
        with db.write_tx() as conn:
            if m.version in applied_versions(conn):
                continue
            m.apply(conn)
            conn.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (m.version, m.name, utcnow()),
            )
        done.append(m.version)
    return done


# The migrations themselves, one module per group of versions; importing them registers them.
from mnemonist.store.migrations import (  # noqa: E402, F401
    co_use,
    consolidation,
    core,
    gates,
    graph_health,
    graph_scale_sparse,
    lifecycles_scopes,
    predictor,
    principles,
    prose_graph,
    sessions_context,
    tokens,
)
