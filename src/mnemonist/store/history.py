"""memory_history: the audit trail. Always written inside the mutation's own transaction."""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import Any

from mnemonist.model.memory import HistoryEvent, utcnow
from mnemonist.text.scrub import scrub_deep, scrub_optional


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
    """One event. Its content comes from rows already scrubbed; reason, actor and metadata are
    scrubbed here, whichever path wrote them (the pipeline's audit holds LLM output)."""
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
            scrub_optional(changed_by),
            scrub_optional(reason),
            json.dumps(scrub_deep(metadata or {}), sort_keys=True),
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
