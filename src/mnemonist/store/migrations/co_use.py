"""Migration 29: what sessions used together (`store/graph_co_use.py`, `graph/co_use.py`).

`entity_use` counts, per entity, the sessions whose used memories named it; `entity_co_use`
counts, per pair of entities of one scope (the smaller id first), the sessions that used
memories naming both. The number of sessions counted per scope is kept in `graph_state`
(key `co_use`). From these the graph learns an edge between two entities used together more
often than chance (NPMI) in several sessions: a desire path. Both tables follow their
entities (ON DELETE CASCADE)."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.migrations import _script, migration

_TABLES = """
CREATE TABLE entity_use (
    entity_id TEXT PRIMARY KEY REFERENCES entities(id) ON DELETE CASCADE,
    sessions INTEGER NOT NULL DEFAULT 0,
    last_at TEXT NOT NULL{rowid}
);
CREATE TABLE entity_co_use (
    entity_a TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    entity_b TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    sessions INTEGER NOT NULL DEFAULT 0,
    last_at TEXT NOT NULL,
    PRIMARY KEY (entity_a, entity_b){rowid}
);
CREATE INDEX entity_co_use_b ON entity_co_use(entity_b);
"""

#: PostgreSQL: every table has the `rowid` the project's SQL may order by (as in baseline.sql)
_PG_ROWID = ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY"


def _postgres(conn: Any) -> None:
    for statement in _TABLES.format(rowid=_PG_ROWID).split(";"):
        if statement.strip():
            conn.raw.execute(statement)


@migration(29, "co-use: the entities sessions used, alone and together", postgres=_postgres)
def _co_use(conn: sqlite3.Connection) -> None:
    _script(conn, _TABLES.format(rowid=""))
