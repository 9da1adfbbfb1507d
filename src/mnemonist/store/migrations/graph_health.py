"""Migration 21: entity health — the aliases of folded entities and the log of what the
entity-health pass changed (`graph/entity_health.py`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.migrations import _script, migration

# An alias is a name folded into another entity of the same scope ("ttls" into "ttl"): the
# inline linker resolves it to the entity that kept its id, so the name never makes a second
# entity again. The log keeps one row per action of the pass (a fold, a junk entity removed)
# with the name and scope it concerned, for the diagnostics and the dashboard.
_TABLES = """
CREATE TABLE entity_aliases (
    project TEXT NOT NULL DEFAULT '',
    agent_id TEXT NOT NULL DEFAULT '',
    user_id TEXT NOT NULL DEFAULT '',
    canonical_name TEXT NOT NULL,
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (project, agent_id, user_id, canonical_name){rowid}
);
CREATE INDEX entity_aliases_entity ON entity_aliases(entity_id);
CREATE TABLE entity_health_log (
    id TEXT PRIMARY KEY,
    action TEXT NOT NULL CHECK (action IN ('fold', 'junk')),
    entity_id TEXT NOT NULL,
    name TEXT NOT NULL,
    kept_id TEXT,
    kept_name TEXT,
    project TEXT NOT NULL DEFAULT '',
    agent_id TEXT NOT NULL DEFAULT '',
    user_id TEXT NOT NULL DEFAULT '',
    mentions {int} NOT NULL DEFAULT 0,
    detail TEXT,
    created_at TEXT NOT NULL{rowid}
);
CREATE INDEX entity_health_log_action ON entity_health_log(action, created_at);
"""


#: PostgreSQL: every table has the `rowid` the project's SQL may order by (as in baseline.sql)
_PG_ROWID = ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY"


def _postgres_entity_health(conn: Any) -> None:
    for statement in _TABLES.format(int="BIGINT", rowid=_PG_ROWID).split(";"):
        if statement.strip():
            conn.raw.execute(statement)


@migration(21, "entity health: aliases of folded entities, the log of folds and junk removed",
           postgres=_postgres_entity_health)
def _entity_health(conn: sqlite3.Connection) -> None:
    _script(conn, _TABLES.format(int="INTEGER", rowid=""))
