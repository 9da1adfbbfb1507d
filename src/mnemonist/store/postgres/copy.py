"""Copy a SQLite home's database into an empty PostgreSQL database, row for row.

Every table of the SQLite schema (FTS5's own tables aside: PostgreSQL's full-text columns are
computed from the copied text) is copied with all its columns and its keys unchanged (memory
seqs, hint ids), parents before children (foreign keys), in one PostgreSQL transaction: a
failure leaves the target as empty as it was. Identity sequences then continue after the
largest copied key, and every embedding gets its pgvector column from its blob. The copy
counts the rows on both sides and refuses to commit when they differ.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from mnemonist.store.postgres.vectors import literal

BATCH = 500
#: PostgreSQL-only columns, computed there (baseline.sql)
GENERATED = {"rowid", "fts", "embedding"}


class CopyRefused(RuntimeError):
    """The target is not empty, or the copied counts differ."""


def _tables(src: sqlite3.Connection) -> list[str]:
    """The SQLite tables to copy, each after the tables its foreign keys point to."""
    names = [r[0] for r in src.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        " AND name NOT LIKE '%\\_fts\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        " AND name != 'schema_migrations' ORDER BY name")]
    deps = {n: {r[2] for r in src.execute(f"PRAGMA foreign_key_list({n})")} - {n}
            for n in names}
    ordered: list[str] = []
    while len(ordered) < len(names):
        ready = [n for n in names if n not in ordered and deps[n] <= set(ordered)]
        if not ready:
            raise CopyRefused(f"foreign keys form a cycle among {set(names) - set(ordered)}")
        ordered.extend(ready)
    return ordered


def refuse_used(raw: Any) -> None:
    """CopyRefused unless the database is empty: no table at all, or mnemonist's schema
    with no row outside `schema_migrations`. A daemon that started on it once has written
    rows (its settings in `meta`) even without a memory, and the copy's keys would collide
    with them; tables of another application are not ours to add to."""
    tables = [r[0] for r in raw.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema ="
        " current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name").fetchall()]
    if not tables:
        return
    if "schema_migrations" not in tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        raise CopyRefused(f"the PostgreSQL database holds tables that are not mnemonist's"
                          f" ({shown}): copy into a new, empty database")
    held = [t for t in tables if t != "schema_migrations"
            and raw.execute(f'SELECT EXISTS (SELECT 1 FROM "{t}")').fetchone()[0]]
    if held:
        memories = raw.execute("SELECT count(*) FROM memories").fetchone()[0] if (
            "memories" in held) else 0
        what = f"memories ({memories})" if memories else "mnemonist data"
        shown = ", ".join(held[:5]) + (", ..." if len(held) > 5 else "")
        raise CopyRefused(
            f"the PostgreSQL database already holds {what}, rows in {shown}: nothing was"
            f" copied; copy into a new, empty database, before any daemon starts on it")


def copy_database(src: sqlite3.Connection, target: Any) -> dict[str, int]:
    """Copy every row of `src` (a SQLite connection) into `target` (a migrated, empty
    PostgresDatabase). Returns rows copied per table."""
    counts: dict[str, int] = {}
    with target.write_tx() as conn:
        raw = conn.raw
        refuse_used(raw)
        pg_columns: dict[str, list[str]] = {}
        for table, column in raw.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() ORDER BY ordinal_position"
        ).fetchall():
            pg_columns.setdefault(table, []).append(column)
        for table in _tables(src):
            if table not in pg_columns:
                raise CopyRefused(f"table {table} has no PostgreSQL counterpart")
            mine = [r[1] for r in src.execute(f"PRAGMA table_info({table})")]
            missing = [c for c in mine if c not in pg_columns[table]]
            if missing:
                raise CopyRefused(f"{table}: columns {missing} have no PostgreSQL counterpart")
            cols = ", ".join(mine)
            marks = ", ".join(["%s"] * len(mine))
            insert = f"INSERT INTO {table} ({cols}) OVERRIDING SYSTEM VALUE VALUES ({marks})"
            n = 0
            cursor = src.execute(f"SELECT {cols} FROM {table} ORDER BY rowid")
            while rows := cursor.fetchmany(BATCH):
                with raw.cursor() as cur:
                    cur.executemany(insert, [tuple(r) for r in rows])
                n += len(rows)
            counts[table] = n
        for table, columns in pg_columns.items():
            for column in columns:
                seq = raw.execute("SELECT pg_get_serial_sequence(%s, %s)",
                                  (table, column)).fetchone()[0]
                if seq and column != "rowid":
                    raw.execute(f"SELECT setval(%s, COALESCE((SELECT max({column}) FROM"
                                f" {table}), 0) + 1, false)", (seq,))
        for content_hash, blob, dims in raw.execute(
            "SELECT content_hash, vector, dimensions FROM embeddings").fetchall():
            vec = np.frombuffer(bytes(blob), dtype="<f4")
            if vec.shape[0] == dims:
                raw.execute("UPDATE embeddings SET embedding = %s::vector"
                            " WHERE content_hash = %s", (literal(vec), content_hash))
        for table, n in counts.items():
            have = raw.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            if have != n:
                raise CopyRefused(f"{table}: {n} rows read, {have} in PostgreSQL")
    return counts
