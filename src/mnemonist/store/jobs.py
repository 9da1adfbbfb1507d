"""memory_jobs: the persistent job queue. Leases, completions and failures each happen inside
the caller's write transaction, so no two workers can hold the same job."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from mnemonist.model.memory import format_ts, utcnow
from mnemonist.store.backend import is_postgres, serialize
from mnemonist.store.row_ids import time_ordered_id
from mnemonist.text.scrub import scrub_credentials, scrub_deep


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
    if check_existing:  # several daemons on one PostgreSQL: one enqueuer of a target at a time
        serialize(conn, "job", job_type, target_col, str(target))
    existing = check_existing and conn.execute(
        f"SELECT id FROM memory_jobs WHERE {target_col} = ? AND job_type = ?"
        " AND status IN ('pending', 'leased') LIMIT 1",
        (target, job_type),
    ).fetchone()
    if existing:
        return None
    row = pending_row(job_type, memory_id=memory_id, document_id=document_id, payload=payload,
                      max_attempts=max_attempts)
    conn.execute(_INSERT, row)
    return row[0]


_INSERT = (
    "INSERT INTO memory_jobs (id, memory_id, document_id, job_type, status, payload,"
    " max_attempts, created_at, updated_at) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)"
)


def pending_row(
    job_type: str,
    *,
    memory_id: str | None = None,
    document_id: str | None = None,
    payload: dict[str, Any] | None = None,
    max_attempts: int = 3,
) -> tuple[Any, ...]:
    """A new pending job's row, its id first (`enqueue` without the check for one pending)."""
    now = utcnow()
    return (time_ordered_id(), memory_id, document_id, job_type,
            json.dumps(payload) if payload else None, max_attempts, now, now)


def insert_rows(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Jobs built by `pending_row`, in one statement (bulk import: each target is new)."""
    if rows:
        conn.executemany(_INSERT, rows)


def counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """{job_type: {status: n}}."""
    out: dict[str, dict[str, int]] = {}
    for row in conn.execute(
        "SELECT job_type, status, COUNT(*) FROM memory_jobs GROUP BY job_type, status"
    ):
        out.setdefault(row[0], {})[row[1]] = row[2]
    return out


@dataclass
class Job:
    id: str
    job_type: str
    memory_id: str | None
    document_id: str | None
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    status: str = "leased"

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Job:
        return cls(
            id=row["id"],
            job_type=row["job_type"],
            memory_id=row["memory_id"],
            document_id=row["document_id"],
            payload=json.loads(row["payload"]) if row["payload"] else {},
            attempts=row["attempts"],
            max_attempts=row["max_attempts"],
            status=row["status"],
        )


def _later(seconds: float) -> str:
    return format_ts(datetime.now(UTC) + timedelta(seconds=seconds))


def lease(conn: sqlite3.Connection, job_type: str) -> Job | None:
    """Take the oldest runnable pending job: status leased, attempts + 1 (call in write_tx).

    On PostgreSQL several daemons lease from one table: the row is locked `FOR UPDATE SKIP
    LOCKED`, so a job another daemon is taking is passed over, never taken twice (SQLite has
    one writer at a time: its transaction alone is enough)."""
    now = utcnow()
    row = conn.execute(
        "SELECT id FROM memory_jobs WHERE job_type = ? AND status = 'pending'"
        " AND attempts < max_attempts AND (run_after IS NULL OR run_after <= ?)"
        " ORDER BY COALESCE(run_after, created_at), rowid LIMIT 1"  # retried ones queue again
        + (" FOR UPDATE SKIP LOCKED" if is_postgres(conn) else ""),
        (job_type, now),
    ).fetchone()
    if row is None:
        return None
    conn.execute(
        "UPDATE memory_jobs SET status = 'leased', leased_at = ?, attempts = attempts + 1,"
        " updated_at = ? WHERE id = ?",
        (now, now, row["id"]),
    )
    leased = conn.execute("SELECT * FROM memory_jobs WHERE id = ?", (row["id"],)).fetchone()
    return Job.from_row(leased)


def complete(conn: sqlite3.Connection, job_id: str, result: dict[str, Any] | None) -> None:
    now = utcnow()
    conn.execute(
        "UPDATE memory_jobs SET status = 'completed', completed_at = ?, updated_at = ?,"
        " result = ?, error = NULL WHERE id = ?",
        (now, now, json.dumps(scrub_deep(result)) if result is not None else None, job_id),
    )


def fail(conn: sqlite3.Connection, job_id: str, error: str, retry_in_s: float) -> str:
    """Back to pending (after `retry_in_s`), or dead once attempts are used up."""
    now = utcnow()
    row = conn.execute(
        "SELECT attempts, max_attempts FROM memory_jobs WHERE id = ?", (job_id,)
    ).fetchone()
    if row is None:
        return "missing"
    if row["attempts"] >= row["max_attempts"]:
        conn.execute(
            "UPDATE memory_jobs SET status = 'dead', failed_at = ?, updated_at = ?, error = ?"
            " WHERE id = ?",
            (now, now, scrub_credentials(error[:2000]).text, job_id),
        )
        return "dead"
    conn.execute(
        "UPDATE memory_jobs SET status = 'pending', run_after = ?, updated_at = ?, error = ?,"
        " leased_at = NULL WHERE id = ?",
        (_later(retry_in_s), now, scrub_credentials(error[:2000]).text, job_id),
    )
    return "pending"


def defer(conn: sqlite3.Connection, job_id: str, reason: str, retry_in_s: float) -> None:
    """Back to pending without burning the attempt (the provider was unavailable)."""
    now = utcnow()
    conn.execute(
        "UPDATE memory_jobs SET status = 'pending', attempts = MAX(0, attempts - 1),"
        " run_after = ?, updated_at = ?, error = ?, leased_at = NULL WHERE id = ?",
        (_later(retry_in_s), now, scrub_credentials(reason[:2000]).text, job_id),
    )


def reap_stale(conn: sqlite3.Connection, lease_timeout_ms: int,
               job_type: str | None = None) -> int:
    """Leases older than the timeout (a crashed worker) go back to pending, or dead when
    their attempts are used up. A worker passes its own `job_type`: each kind of job has its
    own lease timeout, and one worker must not reap (or count) another's jobs."""
    now = datetime.now(UTC)
    cutoff = format_ts(now - timedelta(milliseconds=lease_timeout_ms))
    stamp = format_ts(now)
    of_type = " AND job_type = ?" if job_type else ""
    extra: tuple[Any, ...] = (job_type,) if job_type else ()
    dead = conn.execute(
        "UPDATE memory_jobs SET status = 'dead', failed_at = ?, updated_at = ?,"
        " error = 'lease expired after the last attempt' WHERE status = 'leased'"
        f" AND leased_at < ? AND attempts >= max_attempts{of_type}",
        (stamp, stamp, cutoff, *extra),
    ).rowcount
    back = conn.execute(
        "UPDATE memory_jobs SET status = 'pending', leased_at = NULL, updated_at = ?,"
        f" error = 'lease expired' WHERE status = 'leased' AND leased_at < ?{of_type}",
        (stamp, cutoff, *extra),
    ).rowcount
    return dead + back


def requeue_dead(conn: sqlite3.Connection, job_type: str | None = None, limit: int = 100) -> int:
    """Give dead jobs a fresh set of attempts (a repair action)."""
    where = "status = 'dead'" + (" AND job_type = ?" if job_type else "")
    args: list[Any] = [job_type] if job_type else []
    now = utcnow()
    return conn.execute(
        f"UPDATE memory_jobs SET status = 'pending', attempts = 0, run_after = NULL,"
        f" failed_at = NULL, updated_at = ? WHERE id IN (SELECT id FROM memory_jobs"
        f" WHERE {where} LIMIT ?)",
        [now, *args, limit],
    ).rowcount


def stale_leases(conn: sqlite3.Connection, cutoff: str) -> int:
    """Jobs leased before `cutoff`, still leased (a crashed worker's, past its timeout)."""
    count: int = conn.execute(
        "SELECT COUNT(*) FROM memory_jobs WHERE status = 'leased' AND leased_at < ?", (cutoff,)
    ).fetchone()[0]
    return count


def active_ids(conn: sqlite3.Connection, job_type: str) -> list[str]:
    """Ids of the jobs of `job_type` pending or leased."""
    return [r[0] for r in conn.execute(
        "SELECT id FROM memory_jobs WHERE job_type = ? AND status IN"
        " ('pending', 'leased')", (job_type,)).fetchall()]


def status_and_result(conn: sqlite3.Connection, job_id: str) -> sqlite3.Row | None:
    """The job's (status, result), None when there is no such job."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT status, result FROM memory_jobs WHERE id = ?", (job_id,)).fetchone()
    return row


def recent_errors(conn: sqlite3.Connection, limit: int) -> list[dict[str, Any]]:
    """The last `limit` jobs that recorded an error, the last changed first."""
    return [
        dict(r) for r in conn.execute(
            "SELECT id, job_type, memory_id, status, attempts, error, updated_at"
            " FROM memory_jobs WHERE error IS NOT NULL ORDER BY updated_at DESC LIMIT ?",
            (limit,),
        )
    ]


def latest_for_document(conn: sqlite3.Connection, document_id: str,
                        job_type: str) -> dict[str, Any] | None:
    """The document's last job of `job_type` (id, status, attempts, max_attempts, error,
    run_after)."""
    row = conn.execute(
        "SELECT id, status, attempts, max_attempts, error, run_after FROM memory_jobs"
        " WHERE document_id = ? AND job_type = ? ORDER BY created_at DESC, rowid DESC"
        " LIMIT 1", (document_id, job_type),
    ).fetchone()
    return dict(row) if row else None
