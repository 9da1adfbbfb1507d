"""What the significance gate reads of a session before its summary (service/gates.py): its
project, its turns and their vectors, the project's earlier sessions, and the names the
project's other memories share with it. A session's turns are memories of source type
`session` (store/session_turns.py) whose `source_id` is the session key."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.session_turns import SOURCE_TYPE


def ingest_project(conn: sqlite3.Connection, session_key: str) -> str | None:
    """The project of the session's ingest row (None without one)."""
    row = conn.execute(
        "SELECT project FROM session_ingest WHERE session_key = ?",
        (session_key,)).fetchone()
    return row[0] if row else None


def known_entity_names(conn: sqlite3.Connection, session_key: str, project: str | None,
                       canonical_names: list[str]) -> list[str]:
    """Names, most mentioned first, of the project's global-scope entities among these
    canonical names that a live memory other than the session's own turns mentions."""
    marks = ", ".join("?" * len(canonical_names))
    rows = conn.execute(
        f"SELECT e.name FROM entities e WHERE e.project = ? AND e.agent_id = ''"
        f" AND e.user_id = '' AND e.canonical_name IN ({marks}) AND EXISTS ("
        f"SELECT 1 FROM memory_entity_mentions x JOIN memories m ON m.id = x.memory_id"
        f" WHERE x.entity_id = e.id AND m.is_deleted = 0"
        f" AND NOT (COALESCE(m.source_type, '') = ? AND COALESCE(m.source_id, '') = ?))"
        f" ORDER BY e.mentions DESC, e.name",
        [project or "", *canonical_names, SOURCE_TYPE, session_key])
    return [r[0] for r in rows]


def unembedded_turns(conn: sqlite3.Connection, session_key: str, limit: int) -> list[int]:
    """Seqs of the session's first live turns without a vector yet."""
    return [r[0] for r in conn.execute(
        "SELECT seq FROM memories WHERE source_type = ? AND source_id = ?"
        " AND embedding_model IS NULL AND is_deleted = 0 ORDER BY seq LIMIT ?",
        (SOURCE_TYPE, session_key, limit))]


def earlier_sessions(conn: sqlite3.Connection, session_key: str, project: str | None,
                     before: str, limit: int) -> list[str]:
    """The project's most recent indexed sessions (other than this one) created at or
    before `before`."""
    return [r[0] for r in conn.execute(
        "SELECT session_key FROM session_ingest WHERE status = 'indexed'"
        " AND session_key != ? AND COALESCE(project, '') = ? AND created_at <= ?"
        " ORDER BY created_at DESC, session_key LIMIT ?",
        (session_key, project or "", before, limit))]


def turn_count(conn: sqlite3.Connection, session_key: str) -> int:
    """The session's live turns."""
    count: int = conn.execute("SELECT COUNT(*) FROM memories WHERE source_type = ? AND"
                              " source_id = ? AND is_deleted = 0",
                              (SOURCE_TYPE, session_key)).fetchone()[0]
    return count


def turn_vectors(conn: sqlite3.Connection, session_key: str, model: str) -> list[Any]:
    """(content, vector, dimensions) of the session's live turns embedded with `model`."""
    return conn.execute(
        "SELECT m.content, e.vector, e.dimensions FROM memories m JOIN embeddings e"
        " ON e.content_hash = m.content_hash AND e.model = ?"
        " WHERE m.source_type = ? AND m.source_id = ? AND m.is_deleted = 0",
        (model, SOURCE_TYPE, session_key)).fetchall()
