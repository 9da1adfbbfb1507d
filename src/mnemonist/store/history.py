"""memory_history: the audit trail. Always written inside the mutation's own transaction."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from mnemonist.model.memory import HistoryEvent, utcnow
from mnemonist.store.row_ids import time_ordered_id
from mnemonist.text.scrub import scrub_deep, scrub_optional

_INSERT = (
    "INSERT INTO memory_history (id, memory_id, event, old_content, new_content,"
    " changed_by, reason, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def event_row(
    memory_id: str,
    event: str,
    *,
    old_content: str | None = None,
    new_content: str | None = None,
    changed_by: str | None = None,
    reason: str | None = None,
    metadata: dict[str, Any] | None = None,
    at: str | None = None,
) -> tuple[Any, ...]:
    """One event's row, its id first. Its content comes from rows already scrubbed; reason,
    actor and metadata are scrubbed here, whichever path wrote them (the pipeline's audit
    holds LLM output)."""
    return (
        time_ordered_id(),
        memory_id,
        event,
        old_content,
        new_content,
        scrub_optional(changed_by),
        scrub_optional(reason),
        json.dumps(scrub_deep(metadata or {}), sort_keys=True),
        at or utcnow(),
    )


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
    """One event (see `event_row`); returns its id."""
    row = event_row(memory_id, event, old_content=old_content, new_content=new_content,
                    changed_by=changed_by, reason=reason, metadata=metadata, at=at)
    conn.execute(_INSERT, row)
    return row[0]


def append_rows(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Events built by `event_row`, in order, in one statement (bulk import)."""
    if rows:
        conn.executemany(_INSERT, rows)


def for_memory(conn: sqlite3.Connection, memory_id: str, limit: int = 1000) -> list[HistoryEvent]:
    rows = conn.execute(
        "SELECT * FROM memory_history WHERE memory_id = ? ORDER BY created_at, rowid LIMIT ?",
        (memory_id, limit),
    ).fetchall()
    return [HistoryEvent.from_row(r) for r in rows]


def has_any(conn: sqlite3.Connection, memory_id: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM memory_history WHERE memory_id = ? LIMIT 1", (memory_id,)
    ).fetchone() is not None
