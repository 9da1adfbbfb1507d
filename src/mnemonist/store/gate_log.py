"""gate_decisions (migration 22): what the write gate and the significance gate decided.

Rows are written in the caller's write transaction. The log keeps at most `KEEP` rows: older
ones go as new ones come (every `PRUNE_EVERY`th insert), except a session the significance gate
skipped that was not backfilled yet — that row is the record a backfill reads.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from mnemonist.model.memory import utcnow
from mnemonist.store.row_ids import time_ordered_id

GATES = ("write", "significance")
#: write gate: `write` (stored), `drop` (not stored, mode on), `would_drop` (shadow);
#: significance gate: `extract`, `skip` (mode on), `would_skip` (shadow)
DECISIONS = ("write", "drop", "would_drop", "extract", "skip", "would_skip")
KEEP = 20_000
PRUNE_EVERY = 200
CONTENT_CHARS = 500

_inserted = 0


def record(conn: sqlite3.Connection, *, gate: str, mode: str, decision: str,
           subject: str | None, reasons: list[str], content: str | None = None,
           project: str | None = None, agent_id: str | None = None,
           user_id: str | None = None, neighbour_id: str | None = None,
           cosine: float | None = None, at: str | None = None) -> str:
    global _inserted
    row_id = time_ordered_id()
    conn.execute(
        "INSERT INTO gate_decisions (id, gate, mode, decision, subject, content, project,"
        " agent_id, user_id, neighbour_id, cosine, reasons, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (row_id, gate, mode, decision, subject,
         content[:CONTENT_CHARS] if content else None, project, agent_id, user_id,
         neighbour_id, None if cosine is None else round(float(cosine), 4),
         json.dumps(reasons), at or utcnow()),
    )
    _inserted += 1
    if _inserted % PRUNE_EVERY == 0:
        prune(conn, KEEP)
    return row_id


def prune(conn: sqlite3.Connection, keep: int) -> int:
    """Delete all but the newest `keep` rows (a skip still to backfill stays)."""
    cur = conn.execute(
        "DELETE FROM gate_decisions WHERE id IN (SELECT id FROM gate_decisions"
        " ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?) AND NOT (decision = 'skip'"
        " AND backfilled_at IS NULL)", (keep,))
    return cur.rowcount


def _public(row: Any) -> dict[str, Any]:
    out = dict(zip(row.keys(), tuple(row), strict=True))
    out["reasons"] = json.loads(out.get("reasons") or "[]")
    return out


def listing(conn: sqlite3.Connection, visible: tuple[str, list[Any]], *,
            gate: str | None = None, decision: str | None = None, limit: int = 50,
            offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """Newest first; `visible`: a visibility clause over the alias `m` (agent_id, user_id)."""
    where, args = visible
    parts = [where]
    if gate:
        parts.append("m.gate = ?")
        args = [*args, gate]
    if decision:
        parts.append("m.decision = ?")
        args = [*args, decision]
    clause = " AND ".join(parts)
    total = conn.execute(f"SELECT COUNT(*) FROM gate_decisions m WHERE {clause}",
                         args).fetchone()[0]
    rows = conn.execute(f"SELECT m.* FROM gate_decisions m WHERE {clause}"
                        " ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?",
                        [*args, limit, offset])
    return [_public(r) for r in rows], int(total)


def counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """{gate: {decision: rows}} over the whole log."""
    out: dict[str, dict[str, int]] = {g: {} for g in GATES}
    for gate, decision, n in conn.execute(
            "SELECT gate, decision, COUNT(*) FROM gate_decisions GROUP BY gate, decision"):
        out.setdefault(gate, {})[decision] = int(n)
    return out


def skipped_sessions(conn: sqlite3.Connection, limit: int) -> list[dict[str, Any]]:
    """Sessions the significance gate skipped (mode on) whose summary was not queued since,
    oldest first; a session skipped twice counts once (its newest row)."""
    rows = conn.execute(
        "SELECT m.* FROM gate_decisions m WHERE m.gate = 'significance' AND m.decision = 'skip'"
        " AND m.backfilled_at IS NULL ORDER BY m.created_at, m.id LIMIT ?", (limit,))
    seen: dict[str, dict[str, Any]] = {}
    for r in rows:
        seen[r["subject"]] = _public(r)
    return list(seen.values())


def mark_backfilled(conn: sqlite3.Connection, session_key: str, at: str) -> int:
    return conn.execute(
        "UPDATE gate_decisions SET backfilled_at = ? WHERE gate = 'significance'"
        " AND decision = 'skip' AND subject = ? AND backfilled_at IS NULL",
        (at, session_key)).rowcount


def to_backfill(conn: sqlite3.Connection) -> int:
    """Sessions the significance gate skipped whose summary was not queued since."""
    count: int = conn.execute(
        "SELECT COUNT(DISTINCT subject) FROM gate_decisions WHERE gate = 'significance'"
        " AND decision = 'skip' AND backfilled_at IS NULL").fetchone()[0]
    return count
