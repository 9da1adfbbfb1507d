"""Unused events expire into the archive (the retention worker's first step).

An `event` records something that happened; most are read soon or never. One expires when it
is live (not deleted, not superseded), not pinned, never accessed (`access_count` 0 and no
`last_accessed`: no recall, injection or read by a hook ever returned it), of importance at or
below `memory.retention.eventTtlMaxImportance` (medium or low: an explicit save is 0.8, high),
and when it happened, was stored and was last changed more than `eventTtlDays` ago (so an
event imported today that happened years ago still gets its days to be used, and one edited,
pinned and unpinned, or recovered starts them again).

Expiring one, in the caller's write transaction: its row as it was goes to `memory_archive`,
the memory is soft-deleted (`delete_reason` 'expired: unused event older than N days',
`updated_by` 'retention') and a `deleted` history event records it. Recall, list and the graph
stop returning it, as for any deleted memory.

An expired event is archive, not trash: the tombstone purge leaves it alone (`ARCHIVED`), so it
stays listed with the deleted memories and `recover` brings it back at any time, not only within
the tombstone window. A purge by hand (`DELETE` with `purge`) removes it like any memory.
"""

from __future__ import annotations

import sqlite3

from mnemonist.model.memory import Memory
from mnemonist.store import archive, history, memories
from mnemonist.store.backend import serialize

BY = "retention"
REASON_PREFIX = "expired: unused event"

#: SQL over `memories` (unqualified columns): a memory the expiry archived and nothing has
#: recovered since. Both marks must hold: what the retention worker wrote, with its reason.
ARCHIVED = (f"(is_deleted = 1 AND COALESCE(updated_by, '') = '{BY}'"
            f" AND substr(COALESCE(delete_reason, ''), 1, {len(REASON_PREFIX)})"
            f" = '{REASON_PREFIX}')")

#: an event that may expire; parameters: the bar of importance, then the cutoff three times
_EXPIRABLE = (
    "type = 'event' AND is_deleted = 0 AND superseded_at IS NULL AND pinned = 0"
    " AND access_count = 0 AND last_accessed IS NULL AND importance <= ?"
    " AND created_at < ? AND occurred_at < ? AND updated_at < ?"
)


def is_archived(m: Memory) -> bool:
    """`ARCHIVED` for a row in hand."""
    return bool(m.is_deleted) and m.updated_by == BY and (
        m.delete_reason or "").startswith(REASON_PREFIX)


def reason(days: int) -> str:
    return f"{REASON_PREFIX} older than {days} days"


def candidates(conn: sqlite3.Connection, cutoff: str, max_importance: float,
               limit: int) -> list[str]:
    """Ids of the events that may expire, oldest stored first (read without the write lock;
    `expire` checks each again)."""
    return [r[0] for r in conn.execute(
        f"SELECT id FROM memories WHERE {_EXPIRABLE} ORDER BY created_at, seq LIMIT ?",
        (max_importance, cutoff, cutoff, cutoff, limit),
    )]


def expire(conn: sqlite3.Connection, ids: list[str], *, cutoff: str, max_importance: float,
           days: int, at: str) -> list[int]:
    """Retire those of `ids` that still may expire (inside write_tx); their seqs, for the
    in-memory indexes to drop after the commit."""
    # several daemons on one PostgreSQL: the second waits, then finds the rows retired
    serialize(conn, "event-expiry")
    why = reason(days)
    done: list[int] = []
    for memory_id in ids:
        row = conn.execute(
            f"SELECT seq, content, version FROM memories WHERE id = ? AND {_EXPIRABLE}",
            (memory_id, max_importance, cutoff, cutoff, cutoff),
        ).fetchone()
        if row is None:  # used, changed, pinned or deleted since it was read
            continue
        archive.archive_row(conn, memory_id, reason=why, by=BY, at=at)
        memories.soft_delete(conn, memory_id, reason=why, at=at, by=BY)
        history.append(conn, memory_id, "deleted", old_content=row["content"], changed_by=BY,
                       reason=why, metadata={"version": row["version"] + 1, "archived": True},
                       at=at)
        done.append(int(row["seq"]))
    return done
