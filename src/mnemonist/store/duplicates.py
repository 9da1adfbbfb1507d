"""The near-duplicate review queue (`duplicate_candidates`) and the sweep's cursor.

A pair is stored once, `memory_a` the older memory (lower seq), whatever side the sweep
found it from; a dismissed or resolved pair keeps its row, so a later sweep never flags it
again.
"""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

STATUSES = ("open", "dismissed", "resolved")

#: sources that keep their memories in step themselves (a file, a document, a transcript) or
#: hold raw conversation messages: near-duplicates there are not for a person to review
UNSWEPT_SOURCES = ("session", "session_summary", "file", "document", "chatgpt", "claude")
UNSWEPT_TYPES = ("document_chunk",)


def sweepable_where(alias: str = "m") -> str:
    """SQL over `memories <alias>`: live, current, curated memories the sweep compares."""
    sources = ", ".join(f"'{s}'" for s in UNSWEPT_SOURCES)
    types = ", ".join(f"'{t}'" for t in UNSWEPT_TYPES)
    return (f"{alias}.is_deleted = 0 AND {alias}.superseded_at IS NULL"
            f" AND COALESCE({alias}.source_type, '') NOT IN ({sources})"
            f" AND {alias}.type NOT IN ({types})")


def cursor(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT last_seq FROM dedup_progress WHERE id = 1").fetchone()
    return int(row[0]) if row else 0


def set_cursor(conn: sqlite3.Connection, last_seq: int, at: str) -> None:
    conn.execute(
        "INSERT INTO dedup_progress (id, last_seq, updated_at) VALUES (1, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET last_seq = excluded.last_seq,"
        " updated_at = excluded.updated_at",
        (last_seq, at),
    )


def flag(conn: sqlite3.Connection, older: str, newer: str, similarity: float, reason: str,
         at: str) -> bool:
    """Record a pair for review; False when the pair is known already (in any status)."""
    cur = conn.execute(
        "INSERT INTO duplicate_candidates (id, memory_a, memory_b, similarity, reason, status,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'open', ?, ?)"
        " ON CONFLICT(memory_a, memory_b) DO NOTHING",
        (uuid.uuid4().hex, older, newer, round(similarity, 4), reason, at, at),
    )
    return cur.rowcount > 0


def known(conn: sqlite3.Connection, older: str, newer: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM duplicate_candidates WHERE memory_a = ? AND memory_b = ?", (older, newer)
    ).fetchone() is not None


def _row(r: sqlite3.Row) -> dict[str, Any]:
    return dict(zip(r.keys(), tuple(r), strict=True))


def get(conn: sqlite3.Connection, candidate_id: str) -> dict[str, Any] | None:
    r = conn.execute("SELECT * FROM duplicate_candidates WHERE id = ?",
                     (candidate_id,)).fetchone()
    return _row(r) if r else None


def ids_with_prefix(conn: sqlite3.Connection, prefix: str, limit: int = 5) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT id FROM duplicate_candidates WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
        (prefix, prefix + "\U0010ffff", limit))]


def _live_both() -> str:
    live = "{0}.is_deleted = 0 AND {0}.superseded_at IS NULL"
    return f"{live.format('a')} AND {live.format('b')}"


def listing(conn: sqlite3.Connection, status: str, limit: int, offset: int,
            visible: tuple[str, list[Any]] = ("1", []),
            kind: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """Pairs in `status`, newest first. Open pairs whose memories are no longer both live
    (one was forgotten or superseded since) are left out: there is nothing left to review.
    `visible`: a condition over a memory aliased `m` (the reader's visibility); a pair is
    listed only when both its memories pass it. `kind`: only pairs of that kind
    (`store.consolidation.KINDS`)."""
    cond, cargs = visible
    where = "d.status = ?" + (f" AND {_live_both()}" if status == "open" else "")
    kinds = [kind] if kind else []
    if kind:
        where += " AND d.kind = ?"
    where += (f" AND EXISTS (SELECT 1 FROM memories m WHERE m.id = a.id AND {cond})"
              f" AND EXISTS (SELECT 1 FROM memories m WHERE m.id = b.id AND {cond})")
    base = (" FROM duplicate_candidates d JOIN memories a ON a.id = d.memory_a"
            " JOIN memories b ON b.id = d.memory_b WHERE " + where)
    args = [status, *kinds, *cargs, *cargs]
    total = conn.execute("SELECT COUNT(*)" + base, args).fetchone()[0]
    rows = conn.execute(
        "SELECT d.*, a.content AS content_a, a.type AS type_a, a.created_at AS created_a,"
        " b.content AS content_b, b.type AS type_b, b.created_at AS created_b"
        + base + " ORDER BY d.created_at DESC, d.id LIMIT ? OFFSET ?",
        (*args, limit, offset),
    ).fetchall()
    return [_row(r) for r in rows], int(total)


def open_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute(
        "SELECT COUNT(*) FROM duplicate_candidates d JOIN memories a ON a.id = d.memory_a"
        f" JOIN memories b ON b.id = d.memory_b WHERE d.status = 'open' AND {_live_both()}"
    ).fetchone()[0])


def set_status(conn: sqlite3.Connection, candidate_id: str, status: str, at: str,
               kept: str | None = None) -> None:
    conn.execute(
        "UPDATE duplicate_candidates SET status = ?, kept = ?, updated_at = ? WHERE id = ?",
        (status, kept, at, candidate_id),
    )


def sweepable_seqs(conn: sqlite3.Connection, after: int, size: int) -> list[int]:
    """The next `size` seqs after `after` of the memories the sweep reads."""
    return [r[0] for r in conn.execute(
        f"SELECT m.seq FROM memories m WHERE m.seq > ? AND {sweepable_where()}"
        " ORDER BY m.seq LIMIT ?", (after, size))]


def unswept(conn: sqlite3.Connection, after: int) -> int:
    """Memories the sweep reads that lie past its cursor `after`."""
    return int(conn.execute(f"SELECT COUNT(*) FROM memories m WHERE m.seq > ? AND"
                            f" {sweepable_where()}", (after,)).fetchone()[0])
