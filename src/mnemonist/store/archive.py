"""Supersession and the cold archive (migration 2).

Full-mode UPDATE never overwrites a memory: the old row is copied whole into `memory_archive`,
then marked `superseded_by` / `superseded_at`. A superseded row stays in `memories` (so links
and history keep pointing at something) but no recall, list or graph read returns it unless
asked. `restore_superseded` undoes the mark; the archive row stays as the audit copy.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import Any

from mnemonist.model.memory import Memory, utcnow
from mnemonist.text.scrub import scrub_optional


def archive_row(
    conn: sqlite3.Connection,
    memory_id: str,
    *,
    reason: str,
    by: str,
    superseded_by: str | None = None,
    at: str | None = None,
) -> str | None:
    """Copy the full current row of `memory_id` into memory_archive; its id, or None."""
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is None:
        return None
    archive_id = str(uuid.uuid4())
    data = dict(zip(row.keys(), tuple(row), strict=True))
    conn.execute(
        "INSERT INTO memory_archive (id, memory_id, content, row_json, reason, superseded_by,"
        " archived_by, archived_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (archive_id, memory_id, row["content"], json.dumps(data, sort_keys=True),
         scrub_optional(reason), superseded_by, scrub_optional(by), at or utcnow()),
    )
    return archive_id


def end_of_validity(old: Memory, successor_from: str) -> str:
    """The old row's valid_to when a successor valid from `successor_from` replaces it: that
    time, never before the old row's own start, never after an end it already had."""
    start = old.valid_from or old.occurred_at
    end = max(successor_from, start)
    return min(end, old.valid_to) if old.valid_to else end


def supersede(
    conn: sqlite3.Connection, old: Memory, new_id: str, successor_from: str, *, at: str,
    by: str,
) -> str:
    """Mark `old` superseded by `new_id` (its validity ends where the successor's begins) and
    record `supersedes` on the new row; the old row's valid_to. The caller's transaction."""
    valid_to = end_of_validity(old, successor_from)
    mark_superseded(conn, old.id, new_id, at=at, by=by, valid_to=valid_to)
    conn.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (old.id, new_id))
    return valid_to


def mark_superseded(
    conn: sqlite3.Connection, memory_id: str, superseded_by: str, *, at: str, by: str,
    valid_to: str | None = None,
) -> None:
    conn.execute(
        "UPDATE memories SET superseded_by = ?, superseded_at = ?, valid_to = ?,"
        " version = version + 1, updated_at = ?, updated_by = ? WHERE id = ?",
        (superseded_by, at, valid_to or at, at, scrub_optional(by), memory_id),
    )


def set_supersedes(conn: sqlite3.Connection, newer_id: str, older_id: str) -> None:
    """The newer memory records the one it supersedes (when a merge keeps an existing memory,
    which had none)."""
    conn.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (older_id, newer_id))


def clear_superseded(conn: sqlite3.Connection, memory_id: str, *, at: str, by: str) -> None:
    """Current again: no successor, valid until further notice."""
    conn.execute(
        "UPDATE memories SET superseded_by = NULL, superseded_at = NULL, valid_to = NULL,"
        " version = version + 1, updated_at = ?, updated_by = ? WHERE id = ?",
        (at, scrub_optional(by), memory_id),
    )


def archived_versions(conn: sqlite3.Connection, memory_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT * FROM memory_archive WHERE memory_id = ? ORDER BY archived_at, rowid",
        (memory_id,),
    ).fetchall()
    return [
        {
            "id": r["id"],
            "memory_id": r["memory_id"],
            "content": r["content"],
            "row": json.loads(r["row_json"]),
            "reason": r["reason"],
            "superseded_by": r["superseded_by"],
            "archived_by": r["archived_by"],
            "archived_at": r["archived_at"],
        }
        for r in rows
    ]


def superseded_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute(
        "SELECT COUNT(*) FROM memories WHERE superseded_at IS NOT NULL AND is_deleted = 0"
    ).fetchone()[0])
