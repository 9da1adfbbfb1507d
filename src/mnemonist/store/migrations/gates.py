"""Migration 22: the log of the write gate and the significance gate (docs/gates.md)."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.migrations import _script, migration

# One row per decision worth reading: a remember the write gate compared with a stored memory
# (dropped, would have been dropped in shadow mode, or kept by a guard: `reasons` say which),
# and every session the significance gate judged. `subject` is the memory (the new one, or
# with `decision` 'drop' in mode 'on' none: `neighbour_id` holds it) or the session key.
# `agent_id` / `user_id` are the owners of what was judged: the log shows a row only to a
# reader who may see those memories. `backfilled_at`: a skipped session's summary was queued
# since. DOUBLE PRECISION reads as REAL in SQLite and is a float8 in PostgreSQL.
_GATE_LOG = """
CREATE TABLE IF NOT EXISTS gate_decisions (
    id TEXT PRIMARY KEY,
    gate TEXT NOT NULL,
    mode TEXT NOT NULL,
    decision TEXT NOT NULL,
    subject TEXT,
    content TEXT,
    project TEXT,
    agent_id TEXT,
    user_id TEXT,
    neighbour_id TEXT,
    cosine DOUBLE PRECISION,
    reasons TEXT NOT NULL DEFAULT '[]',
    backfilled_at TEXT,
    created_at TEXT NOT NULL{rowid}
);
CREATE INDEX IF NOT EXISTS gate_decisions_gate ON gate_decisions(gate, decision, created_at);
CREATE INDEX IF NOT EXISTS gate_decisions_subject ON gate_decisions(subject);
CREATE INDEX IF NOT EXISTS gate_decisions_created ON gate_decisions(created_at);
"""


#: PostgreSQL: every table has the `rowid` the project's SQL may order by (as in baseline.sql)
_PG_ROWID = ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY"


def _postgres_gate_log(conn: Any) -> None:
    for statement in _GATE_LOG.format(rowid=_PG_ROWID).split(";"):
        if statement.strip():
            conn.execute(statement)


@migration(22, "the gates' log: what the write gate and the significance gate decided",
           postgres=_postgres_gate_log)
def _gate_log(conn: sqlite3.Connection) -> None:
    _script(conn, _GATE_LOG.format(rowid=""))
