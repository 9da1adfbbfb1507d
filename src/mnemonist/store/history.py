"""memory_history: the audit trail. Always written inside the mutation's own transaction."""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import Any

from mnemonist.model.memory import HistoryEvent, utcnow


def append(
    conn: sqlite3.Connection,
    memory_id: str,
    event: str,
    *,
    old_content: str | None = None,
    new_content: str | None = None,
    changed_by: str | None = None,
    reason: str | None = None,
    metadata: dict[str, Any] | None = None,
    at: str | None = None,
) -> str:
    event_id = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO memory_history (id, memory_id, event, old_content, new_content,"
        " changed_by, reason, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            event_id,
            memory_id,
            event,
            old_content,
            new_content,
            changed_by,
            reason,
            json.dumps(metadata or {}, sort_keys=True),
            at or utcnow(),
        ),
    )
    return event_id


def for_memory(conn: sqlite3.Connection, memory_id: str, limit: int = 1000) -> list[HistoryEvent]:
    rows = conn.execute(
        "SELECT * FROM memory_history WHERE memory_id = ? ORDER BY created_at, rowid LIMIT ?",
        (memory_id, limit),
    ).fetchall()
    return [HistoryEvent.from_row(r) for r in rows]
