"""Migrations on PostgreSQL: the baseline script, then each later migration's PostgreSQL form.

Several daemons may start at once against one database: every migration transaction takes
one advisory lock first, so exactly one of them applies a version and the others see it done.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mnemonist.model.memory import utcnow
from mnemonist.store.postgres import notify

BASELINE = Path(__file__).with_name("baseline.sql")
LOCK_KEY = 0x6D6E656D  # "mnem": the advisory lock every migration transaction takes


class MissingPostgresForm(RuntimeError):
    """A migration after the baseline has no PostgreSQL form (see store/migrations/)."""


def _statements(script: str) -> list[str]:
    body = "\n".join(line for line in script.splitlines() if not line.startswith("--"))
    return [s.strip() for s in body.split(";") if s.strip()]


def _applied(raw: Any) -> set[int]:
    exists = raw.execute("SELECT to_regclass('schema_migrations')").fetchone()[0]
    if exists is None:
        return set()
    return {int(r[0]) for r in raw.execute("SELECT version FROM schema_migrations")}


def migrate_postgres(db: Any, migrations: list[Any], baseline: int) -> list[int]:
    """Apply the baseline (once) and every later migration not yet recorded."""
    from mnemonist.store.migrations import refuse_newer

    done: list[int] = []
    with db.write_tx() as conn:
        raw = conn.raw
        raw.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        refuse_newer(_applied(raw), migrations)  # migrated by a newer mnemonist: not opened
        raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
        if not _applied(raw):
            for statement in _statements(BASELINE.read_text(encoding="utf-8")):
                raw.execute(statement)
            now = utcnow()
            for m in migrations:
                if m.version <= baseline:
                    raw.execute(
                        "INSERT INTO schema_migrations (version, name, applied_at)"
                        " VALUES (%s, %s, %s)", (m.version, m.name, now))
                    done.append(m.version)
    db.refresh_keys()
    for m in migrations:
        if m.version <= baseline:
            continue
        with db.write_tx() as conn:
            conn.raw.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            if m.version in _applied(conn.raw):
                continue
            if m.postgres is None:
                raise MissingPostgresForm(
                    f"migration {m.version} ({m.name}) has no PostgreSQL form: register it"
                    " with @migration(..., postgres=fn) in store/migrations/")
            m.postgres(conn)
            conn.raw.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                (m.version, m.name, utcnow()))
        done.append(m.version)
        db.refresh_keys()
    with db.write_tx() as conn:  # what is not schema: the change notifications (notify.py)
        conn.raw.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        widen_integers(conn.raw)
        notify.install(conn.raw)
    return done


def widen_integers(raw: Any) -> list[str]:
    """SQLite's INTEGER holds 64 bits: a column that reached PostgreSQL as `integer` (32) is
    made `bigint` (the baseline's translator once missed a column whose line followed a
    comment: `memory_files.mtime_ns` (nanoseconds) and `file_chunks.end_line`). Once per
    database: afterwards no such column is left and this reads one catalogue query."""
    changed = []
    for table, column in raw.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND data_type = 'integer'"
        " ORDER BY table_name, column_name"
    ).fetchall():
        raw.execute(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" TYPE BIGINT')
        changed.append(f"{table}.{column}")
    return changed
