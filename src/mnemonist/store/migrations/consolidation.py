"""Migration 23: the consolidation engine's progress, and the kind of each reviewed pair."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.migrations import _script, migration

_SQL = """
    ALTER TABLE duplicate_candidates ADD COLUMN kind TEXT NOT NULL DEFAULT 'duplicate';
    CREATE TABLE consolidation_progress (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        last_seq {int} NOT NULL,
        runs {int} NOT NULL DEFAULT 0,
        restated {int} NOT NULL DEFAULT 0,
        replaced {int} NOT NULL DEFAULT 0,
        flagged {int} NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL{rowid}
    );
    CREATE INDEX duplicate_candidates_kind ON duplicate_candidates(kind, status);
"""
#: PostgreSQL: every table has the `rowid` the project's SQL may order by (as in baseline.sql)
_PG_ROWID = ",\n        rowid BIGINT GENERATED ALWAYS AS IDENTITY"


def _postgres(conn: Any) -> None:
    for statement in _SQL.format(int="BIGINT", rowid=_PG_ROWID).split(";"):
        if statement.strip():
            conn.raw.execute(statement)


@migration(23, "consolidation: its cursor and counts; duplicate candidates say their kind"
               " (duplicate, contradiction, restated, replaced)", postgres=_postgres)
def _consolidation(conn: sqlite3.Connection) -> None:
    # `kind`: 'duplicate' (the near-duplicate sweep flagged it for review), 'contradiction'
    # (consolidation found two statements of one thing that disagree and could not tell which
    # is current: for review), 'restated' / 'replaced' (consolidation settled it on its own:
    # the older memory is superseded by the newer; the row is 'resolved', and undoing the
    # supersession dismisses it, so the pair is never settled again).
    _script(conn, _SQL.format(int="INTEGER", rowid=""))
