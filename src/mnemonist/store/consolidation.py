"""What the consolidation engine keeps (migration 23): its cursor and counts
(`consolidation_progress`), and the pairs it settled or could not settle, as rows of the
review queue `duplicate_candidates` with their `kind`:

- `restated` / `replaced`: settled on its own, status `resolved`, `kept` the newer memory (the
  older one is superseded by it). Undoing the supersession dismisses the row, so the engine
  never settles that pair again.
- `contradiction`: two statements of one thing that disagree, nothing saying which is
  current; status `open`, for a person (`mnemonist duplicates`, the dashboard, MCP).

The near-duplicate sweep's own rows are kind `duplicate`.
"""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

from mnemonist.store import duplicates

KINDS = ("duplicate", "contradiction", "restated", "replaced")
SETTLED = ("restated", "replaced")
#: memory types the engine never merges or supersedes: a decision is a record of its time, an
#: event or a session turn happened, a summary and a file chunk are kept in step elsewhere
UNTOUCHED_TYPES = ("decision", "constraint", "event", "episodic", "summary", "document_chunk")


#: sources whose memories record what was said or written then (a conversation's turns, an
#: imported chat, a file): history, not standing facts
RECORD_SOURCES = ("session", "conversation", "file", "chatgpt", "claude", "session_summary",
                  "document")


def candidates_where(alias: str = "m") -> str:
    """SQL over `memories <alias>`: the live, curated statements the engine reads."""
    types = ", ".join(f"'{t}'" for t in UNTOUCHED_TYPES)
    sources = ", ".join(f"'{s}'" for s in RECORD_SOURCES)
    return (f"{duplicates.sweepable_where(alias)} AND {alias}.type NOT IN ({types})"
            f" AND COALESCE({alias}.source_type, '') NOT IN ({sources})")


def progress(conn: sqlite3.Connection) -> dict[str, Any]:
    row = conn.execute(
        "SELECT last_seq, runs, restated, replaced, flagged, updated_at"
        " FROM consolidation_progress WHERE id = 1").fetchone()
    if row is None:
        return {"last_seq": 0, "runs": 0, "restated": 0, "replaced": 0, "flagged": 0,
                "updated_at": None}
    return dict(zip(("last_seq", "runs", "restated", "replaced", "flagged", "updated_at"),
                    tuple(row), strict=True))


def advance(conn: sqlite3.Connection, last_seq: int, at: str, *, restated: int = 0,
            replaced: int = 0, flagged: int = 0) -> None:
    """Move the cursor to `last_seq` and add this batch's counts (the batch's transaction)."""
    conn.execute(
        "INSERT INTO consolidation_progress (id, last_seq, runs, restated, replaced, flagged,"
        " updated_at) VALUES (1, ?, 1, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
        " last_seq = excluded.last_seq, runs = consolidation_progress.runs + 1,"
        " restated = consolidation_progress.restated + excluded.restated,"
        " replaced = consolidation_progress.replaced + excluded.replaced,"
        " flagged = consolidation_progress.flagged + excluded.flagged,"
        " updated_at = excluded.updated_at",
        (last_seq, restated, replaced, flagged, at))


def pending(conn: sqlite3.Connection, after: int) -> int:
    return int(conn.execute(
        f"SELECT COUNT(*) FROM memories m WHERE m.seq > ? AND {candidates_where()}",
        (after,)).fetchone()[0])


def record(conn: sqlite3.Connection, first: str, second: str, *, kind: str, similarity: float,
           reason: str, at: str, kept: str | None = None) -> bool:
    """A pair (`first` the lower seq) of `kind`: settled ones `resolved` with `kept`,
    contradictions `open`. False when the pair is known already, in any status."""
    status = "resolved" if kind in SETTLED else "open"
    cur = conn.execute(
        "INSERT INTO duplicate_candidates (id, memory_a, memory_b, similarity, reason, status,"
        " kept, kind, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(memory_a, memory_b) DO NOTHING",
        (uuid.uuid4().hex, first, second, round(similarity, 4), reason, status, kept, kind,
         at, at))
    return cur.rowcount > 0


def dismiss_settled(conn: sqlite3.Connection, superseded_id: str, at: str) -> int:
    """A person undid a supersession the engine made: its pair is dismissed, never settled
    again."""
    kinds = ", ".join(f"'{k}'" for k in SETTLED)
    cur = conn.execute(
        "UPDATE duplicate_candidates SET status = 'dismissed', updated_at = ?"
        f" WHERE kind IN ({kinds}) AND status = 'resolved' AND kept IS NOT NULL"
        " AND kept <> ? AND (memory_a = ? OR memory_b = ?)",
        (at, superseded_id, superseded_id, superseded_id))
    return cur.rowcount


def candidate_seqs(conn: sqlite3.Connection, after: int, size: int) -> list[int]:
    """The next `size` seqs after `after` of the memories the engine reads."""
    return [r[0] for r in conn.execute(
        f"SELECT m.seq FROM memories m WHERE m.seq > ? AND {candidates_where()}"
        " ORDER BY m.seq LIMIT ?", (after, size))]


def open_contradictions(conn: sqlite3.Connection) -> int:
    """Contradictions waiting for a person whose two memories are both live and current."""
    return int(conn.execute(
        "SELECT COUNT(*) FROM duplicate_candidates d JOIN memories a ON a.id = d.memory_a"
        " JOIN memories b ON b.id = d.memory_b WHERE d.kind = 'contradiction'"
        " AND d.status = 'open' AND a.is_deleted = 0 AND a.superseded_at IS NULL"
        " AND b.is_deleted = 0 AND b.superseded_at IS NULL").fetchone()[0])
