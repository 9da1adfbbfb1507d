"""Migration 27: named API tokens, one per person (or agent), shared by every daemon of a
store (`store/api_tokens.py`, `mnemonist token`).

Only the SHA-256 of a token is kept, never the token. A revoked token keeps its row (its name
stays in history and is never handed out again); `owner` marks a token that may read every
scope and act as anyone it names."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.migrations import _script, migration

_TABLE = """
CREATE TABLE api_tokens (
    name TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    user_id TEXT,
    agent_id TEXT,
    owner INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    revoked_at TEXT{rowid}
);
"""

#: PostgreSQL: every table has the `rowid` the project's SQL may order by (as in baseline.sql)
_PG_ROWID = ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY"


def _postgres_tokens(conn: Any) -> None:
    for statement in _TABLE.format(rowid=_PG_ROWID).split(";"):
        if statement.strip():
            conn.raw.execute(statement)


@migration(27, "api tokens: one named token per person, its hash and the identity it binds",
           postgres=_postgres_tokens)
def _tokens(conn: sqlite3.Connection) -> None:
    _script(conn, _TABLE.format(rowid=""))
