"""Migration 25: discovered principles — the review state of each principle the principles pass
proposed (`graph/principles.py`): its entity, the entity group it was drawn from, its
evidence (memory ids) and whether a person confirmed or rejected it."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.migrations import _script, migration

# One row per proposal. `group_key` names the group of source entities (a hash of their sorted
# ids) and is unique: a rejected group is never proposed again, nor one the LLM saw no pattern
# in (status 'unstated', no statement and no entity). `entity_id` is the principle's
# entity while it has one (a rejected principle's entity is removed, the row stays).
# `sources` and `evidence` are JSON lists of entity ids and memory ids.
_TABLE = """
CREATE TABLE principles (
    id TEXT PRIMARY KEY,
    entity_id TEXT,
    group_key TEXT NOT NULL UNIQUE,
    statement TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'proposed'
        CHECK (status IN ('proposed', 'confirmed', 'rejected', 'unstated')),
    project TEXT NOT NULL DEFAULT '',
    sources TEXT NOT NULL,
    evidence TEXT NOT NULL,
    model TEXT,
    similarity REAL,
    created_at TEXT NOT NULL,
    reviewed_at TEXT,
    review_reason TEXT{rowid}
);
CREATE INDEX principles_status ON principles(status, created_at);
"""

#: PostgreSQL: every table has the `rowid` the project's SQL may order by (as in baseline.sql)
_PG_ROWID = ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY"


def _postgres_principles(conn: Any) -> None:
    for statement in _TABLE.format(rowid=_PG_ROWID).split(";"):
        if statement.strip():
            conn.raw.execute(statement)


@migration(25, "principles: proposed, confirmed and rejected principles with their evidence",
           postgres=_postgres_principles)
def _principles(conn: sqlite3.Connection) -> None:
    _script(conn, _TABLE.format(rowid=""))
