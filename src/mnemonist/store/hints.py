"""memory_hints: the questions a memory answers (prospective indexing).

Rows are kept in step with the FTS5 index `memory_hints_fts` by triggers (migration 6). Hints
are derived data: they follow their memory (replaced when it is re-indexed, deleted with its
row on hard delete and purge) and are never shown as memories themselves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from mnemonist.model.memory import utcnow
from mnemonist.store import jobs
from mnemonist.text.scrub import scrub_credentials

JOB_TYPE = "prospective_index"


def replace_hints(
    conn: sqlite3.Connection, memory_id: str, hints: Sequence[str], *, at: str | None = None
) -> dict[str, int]:
    """Make the memory's hints exactly `hints` (call in write_tx). Idempotent: hints already
    stored keep their row, so running it twice with the same list changes nothing."""
    wanted = list(dict.fromkeys(scrub_credentials(h).text for h in hints))
    have = dict(conn.execute(
        "SELECT hint, id FROM memory_hints WHERE memory_id = ?", (memory_id,)
    ).fetchall())
    keep = set(wanted)
    gone = [(row_id,) for hint, row_id in have.items() if hint not in keep]
    conn.executemany("DELETE FROM memory_hints WHERE id = ?", gone)
    now = at or utcnow()
    new = [(memory_id, h, now) for h in wanted if h not in have]
    conn.executemany(
        "INSERT OR IGNORE INTO memory_hints (memory_id, hint, created_at) VALUES (?, ?, ?)", new
    )
    return {"kept": len(wanted) - len(new), "added": len(new), "removed": len(gone)}


def hints_for(conn: sqlite3.Connection, memory_id: str) -> list[str]:
    """The memory's hints in the order they were written."""
    return [r[0] for r in conn.execute(
        "SELECT hint FROM memory_hints WHERE memory_id = ? ORDER BY id", (memory_id,)
    )]


def delete_for(conn: sqlite3.Connection, memory_ids: Iterable[str]) -> int:
    """Drop the hints of these memories (hard delete, purge, content change). Returns rows."""
    return sum(
        conn.execute("DELETE FROM memory_hints WHERE memory_id = ?", (mid,)).rowcount
        for mid in memory_ids
    )


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Hint rows, live memories that have hints, and prospective_index jobs by state."""
    row = conn.execute(
        "SELECT COUNT(*), COUNT(DISTINCT h.memory_id) FROM memory_hints h"
        " JOIN memories m ON m.id = h.memory_id WHERE m.is_deleted = 0"
    ).fetchone()
    total = conn.execute("SELECT COUNT(*) FROM memory_hints").fetchone()[0]
    jobs = dict(conn.execute(
        "SELECT status, COUNT(*) FROM memory_jobs WHERE job_type = ? GROUP BY status",
        (JOB_TYPE,),
    ).fetchall())
    return {
        "hints": total,
        "live_hints": row[0],
        "memories_with_hints": row[1],
        "pending_jobs": jobs.get("pending", 0),
        "leased_jobs": jobs.get("leased", 0),
        "dead_jobs": jobs.get("dead", 0),
        "completed_jobs": jobs.get("completed", 0),
    }


def unfinished_jobs(conn: sqlite3.Connection) -> int:
    """prospective_index jobs pending or leased."""
    return conn.execute(
        "SELECT COUNT(*) FROM memory_jobs WHERE status IN ('pending', 'leased')"
        " AND job_type = ?", (JOB_TYPE,),
    ).fetchone()[0]


def enqueue(
    conn: sqlite3.Connection, memory_id: str, *, max_attempts: int, fresh: bool = False
) -> str | None:
    """A prospective_index job for the memory, unless one is already *pending* (`fresh`: the
    memory was inserted in this transaction, so there is nothing to look for).

    A leased job does not count: it may be generating from content that has just changed,
    and it writes nothing when the content it read is no longer the memory's (see the hints
    worker), so the new content needs its own job."""
    pending = not fresh and conn.execute(
        "SELECT 1 FROM memory_jobs WHERE memory_id = ? AND job_type = ? AND status = 'pending'"
        " LIMIT 1", (memory_id, JOB_TYPE),
    ).fetchone()
    if pending:
        return None
    return jobs.enqueue(conn, JOB_TYPE, memory_id=memory_id, max_attempts=max_attempts,
                        check_existing=False)
