"""memory_jobs: the persistent job queue (this issue only enqueues; workers lease)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import Any

from mnemonist.model.memory import utcnow


def enqueue(
    conn: sqlite3.Connection,
    job_type: str,
    *,
    memory_id: str | None = None,
    document_id: str | None = None,
    payload: dict[str, Any] | None = None,
    max_attempts: int = 3,
    check_existing: bool = True,
) -> str | None:
    """Insert a pending job unless one for the same target is already pending or leased.

    Returns the new job id, or None when the enqueue was deduplicated.
    """
    target_col, target = ("memory_id", memory_id) if memory_id else ("document_id", document_id)
    existing = check_existing and conn.execute(
        f"SELECT id FROM memory_jobs WHERE {target_col} = ? AND job_type = ?"
        " AND status IN ('pending', 'leased') LIMIT 1",
        (target, job_type),
    ).fetchone()
    if existing:
        return None
    job_id = str(uuid.uuid4())
    now = utcnow()
    conn.execute(
        "INSERT INTO memory_jobs (id, memory_id, document_id, job_type, status, payload,"
        " max_attempts, created_at, updated_at) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)",
        (
            job_id,
            memory_id,
            document_id,
            job_type,
            json.dumps(payload) if payload else None,
            max_attempts,
            now,
            now,
        ),
    )
    return job_id


def counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """{job_type: {status: n}}."""
    out: dict[str, dict[str, int]] = {}
    for row in conn.execute(
        "SELECT job_type, status, COUNT(*) FROM memory_jobs GROUP BY job_type, status"
    ):
        out.setdefault(row[0], {})[row[1]] = row[2]
    return out
