"""Migration 26: the learned ranker's training pairs — what was asked, which memory, whether it
helped, and how the ranker saw that memory for that query (`store/predictor_pairs.py`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.migrations import _script, migration

# One row per label. `features` is the JSON list of the ranker's features for the memory as
# recall ranked it for `query` (search/relevance_features.py), `feature_set` names that list
# (a hash of the feature names): pairs of another feature set are not fitted on. `query` is
# scrubbed like every stored text; `query_vector` (float32) lets a later query find the pairs
# of a query asked in other words. `held_out` is fixed at insert from the query's key: the
# pairs the home's adapted ranker is judged on and never fitted on. The scope columns are the
# memory's, so that a pair is read and removed with it. `predictor_state` holds the home's
# adapted ranker and its last check (name 'local'), in the database so that every daemon of a
# PostgreSQL store uses the same one.
_TABLE = """
CREATE TABLE predictor_pairs (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    query TEXT NOT NULL,
    query_key TEXT NOT NULL,
    label REAL NOT NULL CHECK (label >= 0 AND label <= 1),
    source TEXT NOT NULL CHECK (source IN ('explicit', 'opened', 'used', 'ignored')),
    features TEXT NOT NULL,
    feature_set TEXT NOT NULL,
    query_vector {blob},
    held_out INTEGER NOT NULL DEFAULT 0,
    project TEXT,
    user_id TEXT,
    agent_id TEXT,
    session_key TEXT{rowid}
);
CREATE INDEX predictor_pairs_memory ON predictor_pairs(memory_id);
CREATE INDEX predictor_pairs_created ON predictor_pairs(created_at);
CREATE TABLE predictor_state (
    name TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    updated_at TEXT NOT NULL{rowid}
);
"""

#: PostgreSQL: every table has the `rowid` the project's SQL may order by (as in baseline.sql)
_PG_ROWID = ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY"


def _postgres_pairs(conn: Any) -> None:
    for statement in _TABLE.format(blob="BYTEA", rowid=_PG_ROWID).split(";"):
        if statement.strip():
            conn.raw.execute(statement)


@migration(26, "predictor pairs: the learned ranker's training pairs from feedback and use",
           postgres=_postgres_pairs)
def _pairs(conn: sqlite3.Connection) -> None:
    _script(conn, _TABLE.format(blob="BLOB", rowid=""))
