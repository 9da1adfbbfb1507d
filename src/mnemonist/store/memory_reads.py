"""Reads of the memories table that the service and the pipeline make beside the rows
themselves (store/memories.py): pages of seqs for a listing or a selection, the neighbours of
a memory in its source, look-ups of one memory's seq or state, and the live copy of a text.
`where` is a condition built by store/filters.py over `memories m`; `visible` is the scopes'
rule (store/filters.visibility_clause) with its arguments."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.backend import is_postgres

#: a memory's neighbours on each side in its source: (condition, order), the condition's
#: arguments the memory's occurred_at twice and its seq
_SIDE = {
    "before": ("(m.occurred_at < ? OR (m.occurred_at = ? AND m.seq < ?))",
               "m.occurred_at DESC, m.seq DESC"),
    "after": ("(m.occurred_at > ? OR (m.occurred_at = ? AND m.seq > ?))",
              "m.occurred_at ASC, m.seq ASC"),
}
SIDES = tuple(_SIDE)


def probe(conn: sqlite3.Connection) -> None:
    """One cheap read: raises when the store cannot answer (and opens a read snapshot)."""
    conn.execute("SELECT 1 FROM memories LIMIT 1").fetchall()


# -- pages of seqs ---------------------------------------------------------------------------


def listing(conn: sqlite3.Connection, where: str, args: list[Any], order: str, limit: int,
            offset: int) -> tuple[int, list[int]]:
    """(how many pass `where`, the seqs of one page of them): newest first by the column
    `order` ("importance", "created_at", …), then by seq."""
    total = conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {where}", args).fetchone()[0]
    by = "m.importance DESC" if order == "importance" else f"m.{order} DESC"
    rows = conn.execute(
        f"SELECT m.seq FROM memories m WHERE {where} ORDER BY {by}, m.seq DESC"
        " LIMIT ? OFFSET ?",
        [*args, limit, offset],
    ).fetchall()
    return total, [r[0] for r in rows]


def oldest_matching(conn: sqlite3.Connection, where: str, args: list[Any],
                    ids: list[str] | None, limit: int) -> list[int]:
    """Seqs of the memories passing `where` (and among `ids`, when given), the first stored
    first, at most `limit`."""
    if ids:
        where += f" AND m.id IN ({','.join('?' * len(ids))})"
        args = [*args, *ids]
    rows = conn.execute(
        f"SELECT m.seq FROM memories m WHERE {where} ORDER BY m.created_at LIMIT ?",
        [*args, limit],
    ).fetchall()
    return [r[0] for r in rows]


def unembedded_in_scope(conn: sqlite3.Connection, where: str, args: list[Any],
                        limit: int) -> list[int]:
    """Seqs of the live memories passing `where` without a vector yet, the newest first, at
    most `limit` (SQLite: migration 19's partial index, only the rows waiting are read)."""
    hint = "" if is_postgres(conn) else " INDEXED BY memories_unembedded"
    return [r[0] for r in conn.execute(
        f"SELECT m.seq FROM memories m{hint} WHERE m.embedding_model IS NULL"
        f" AND m.is_deleted = 0 AND {where} ORDER BY m.seq DESC LIMIT ?",
        [*args, limit],
    )]


def neighbour_seqs(conn: sqlite3.Connection, side: str, source_id: str, project: str | None,
                   occurred_at: str, seq: int, visible: str, args: list[Any],
                   n: int) -> list[int]:
    """Up to n live memories of the source (same project) on one `side` ("before" or
    "after") of the memory at (occurred_at, seq), the nearest first; only those `visible`."""
    cond, order = _SIDE[side]
    rows = conn.execute(
        f"SELECT m.seq FROM memories m WHERE m.source_id = ?"
        f" AND COALESCE(m.project, '') = ? AND m.is_deleted = 0 AND {cond}"
        f" AND {visible} ORDER BY {order} LIMIT ?",
        (source_id, project or "", occurred_at, occurred_at, seq, *args, n),
    ).fetchall()
    return [r[0] for r in rows]


# -- one memory ------------------------------------------------------------------------------


def seqs_of(conn: sqlite3.Connection, memory_ids: list[str]) -> list[int]:
    marks = ",".join("?" * len(memory_ids))
    return [r[0] for r in conn.execute(
        f"SELECT seq FROM memories WHERE id IN ({marks})", memory_ids)]


def seq_of(conn: sqlite3.Connection, memory_id: str) -> int | None:
    row = conn.execute("SELECT seq FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return None if row is None else int(row[0])


def position(conn: sqlite3.Connection, memory_id: str) -> sqlite3.Row | None:
    """(seq, project, source_id, occurred_at): where the memory sits in its source."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT seq, project, source_id, occurred_at FROM memories"
        " WHERE id = ?", (memory_id,)).fetchone()
    return row


def is_gone(conn: sqlite3.Connection, memory_id: str) -> bool:
    """True when the memory is deleted or no longer there."""
    row = conn.execute("SELECT is_deleted FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return row is None or bool(row[0])


def has_entity_attributes(conn: sqlite3.Connection, memory_id: str) -> bool:
    """Whether the memory states attributes of its entities (what an LLM files of it)."""
    return conn.execute(
        "SELECT 1 FROM entity_attributes WHERE memory_id = ? LIMIT 1",
        (memory_id,)).fetchone() is not None


# -- the live copy of a text -----------------------------------------------------------------


def live_copy_for_owner(conn: sqlite3.Connection, content_hash: str, project: str | None,
                        agent_id: str | None, user_id: str | None) -> str | None:
    """The id of the first live, current memory of this text with the same project, agent
    and user (a private memory's copy is its owner's alone)."""
    row = conn.execute(
        "SELECT id FROM memories WHERE content_hash = ? AND COALESCE(project, '') = ?"
        " AND COALESCE(agent_id, '') = ? AND COALESCE(user_id, '') = ?"
        " AND is_deleted = 0 AND superseded_at IS NULL ORDER BY seq LIMIT 1",
        (content_hash, project or "", agent_id or "", user_id or ""),
    ).fetchone()
    return row[0] if row else None


def live_copy_in_project(conn: sqlite3.Connection, content_hash: str,
                         project: str | None) -> str | None:
    """The id of a live, current memory of this text in the project (the one a UNIQUE
    conflict met)."""
    row = conn.execute(
        "SELECT id FROM memories WHERE content_hash = ? AND is_deleted = 0"
        " AND superseded_at IS NULL AND COALESCE(project, '') = ? LIMIT 1",
        (content_hash, project or ""),
    ).fetchone()
    return row[0] if row else None
