"""Session tables: checkpoints, session_memories (what each session received), session_state
(the hooks' view of a live session) and the transcript upsert. SQL only; callers hold the
transaction."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from mnemonist.model.memory import Memory, format_ts, utcnow

CHECKPOINT_COLUMNS = (
    "id", "session_key", "harness", "project", "project_normalized", "trigger", "digest",
    "prompt_count", "memory_queries", "recent_remembers", "created_at",
)  # fmt: skip
STATE_JSON = ("recent_prompts", "memory_queries")


# --- checkpoints --------------------------------------------------------------------------


def insert_checkpoint(conn: sqlite3.Connection, values: dict[str, Any]) -> str:
    row = {c: values.get(c) for c in CHECKPOINT_COLUMNS}
    row["id"] = row["id"] or str(uuid.uuid4())
    row["created_at"] = row["created_at"] or utcnow()
    row["prompt_count"] = int(row["prompt_count"] or 0)
    for key in ("memory_queries", "recent_remembers"):
        row[key] = json.dumps(list(row[key] or []), ensure_ascii=False)
    conn.execute(
        f"INSERT INTO session_checkpoints ({', '.join(CHECKPOINT_COLUMNS)})"
        f" VALUES ({', '.join('?' * len(CHECKPOINT_COLUMNS))})",
        [row[c] for c in CHECKPOINT_COLUMNS],
    )
    return str(row["id"])


def enforce_cap(conn: sqlite3.Connection, session_key: str, cap: int) -> int:
    """Delete the session's oldest checkpoints beyond `cap`."""
    return conn.execute(
        "DELETE FROM session_checkpoints WHERE id IN (SELECT id FROM session_checkpoints"
        " WHERE session_key = ? ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)",
        (session_key, cap),
    ).rowcount


def prune_checkpoints(conn: sqlite3.Connection, retention_days: int, now: datetime) -> int:
    """Hard-delete every checkpoint older than the retention window."""
    cutoff = format_ts(now - timedelta(days=retention_days))
    return conn.execute(
        "DELETE FROM session_checkpoints WHERE created_at < ?", (cutoff,)
    ).rowcount


def prune_sessions(conn: sqlite3.Connection, retention_days: int, now: datetime) -> int:
    """Session state (and what those sessions received) idle past the retention window."""
    cutoff = format_ts(now - timedelta(days=retention_days))
    keys = [r[0] for r in conn.execute(
        "SELECT session_key FROM session_state WHERE updated_at < ?", (cutoff,)
    )]
    for key in keys:
        conn.execute("DELETE FROM session_memories WHERE session_key = ?", (key,))
        conn.execute("DELETE FROM session_state WHERE session_key = ?", (key,))
    return len(keys)


def checkpoint_of(row: sqlite3.Row) -> dict[str, Any]:
    out = {c: row[c] for c in CHECKPOINT_COLUMNS}
    for key in ("memory_queries", "recent_remembers"):
        out[key] = json.loads(out[key] or "[]")
    return out


def list_checkpoints(
    conn: sqlite3.Connection,
    *,
    session_key: str | None = None,
    project: str | None = None,
    trigger: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    where, args = ["1"], []
    if session_key:
        where.append("session_key = ?")
        args.append(session_key)
    if project:
        where.append("(project = ? OR project_normalized = ?)")
        args += [project, project]
    if trigger:
        where.append("trigger = ?")
        args.append(trigger)
    cond = " AND ".join(where)
    total = conn.execute(f"SELECT COUNT(*) FROM session_checkpoints WHERE {cond}",
                         args).fetchone()[0]
    rows = conn.execute(
        f"SELECT * FROM session_checkpoints WHERE {cond}"
        " ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
        [*args, limit, offset],
    ).fetchall()
    return [checkpoint_of(r) for r in rows], total


def get_checkpoint(conn: sqlite3.Connection, checkpoint_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM session_checkpoints WHERE id = ?",
                       (checkpoint_id,)).fetchone()
    return checkpoint_of(row) if row else None


def latest_checkpoint(
    conn: sqlite3.Connection, session_key: str | None = None, project: str | None = None
) -> dict[str, Any] | None:
    items, _ = list_checkpoints(conn, session_key=session_key, project=project, limit=1)
    return items[0] if items else None


# --- session state ------------------------------------------------------------------------


def get_state(conn: sqlite3.Connection, session_key: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM session_state WHERE session_key = ?",
                       (session_key,)).fetchone()
    if row is None:
        return None
    out = dict(row)
    for key in STATE_JSON:
        out[key] = json.loads(out[key] or "[]")
    return out


def create_state(conn: sqlite3.Connection, session_key: str, **fields: Any) -> None:
    now = utcnow()
    values = {"started_at": now, "updated_at": now, **fields, "session_key": session_key}
    for key in STATE_JSON:
        if key in values:
            values[key] = json.dumps(values[key], ensure_ascii=False)
    cols = list(values)
    conn.execute(
        f"INSERT OR IGNORE INTO session_state ({', '.join(cols)})"
        f" VALUES ({', '.join('?' * len(cols))})",
        [values[c] for c in cols],
    )


def update_state(conn: sqlite3.Connection, session_key: str, **fields: Any) -> None:
    values = {"updated_at": utcnow(), **fields}
    for key in STATE_JSON:
        if key in values:
            values[key] = json.dumps(values[key], ensure_ascii=False)
    sets = ", ".join(f"{c} = ?" for c in values)
    conn.execute(f"UPDATE session_state SET {sets} WHERE session_key = ?",
                 [*values.values(), session_key])


# --- session_memories ---------------------------------------------------------------------


def injected_ids(conn: sqlite3.Connection, session_key: str, since: str | None) -> set[str]:
    """Memories this session received (since its context was last reset, when given)."""
    sql = "SELECT memory_id FROM session_memories WHERE session_key = ? AND was_injected = 1"
    args: list[Any] = [session_key]
    if since:
        sql += " AND injected_at >= ?"
        args.append(since)
    return {r[0] for r in conn.execute(sql, args)}


def record_hits(conn: sqlite3.Connection, session_key: str, memory_ids: Iterable[str]) -> None:
    """Count each memory a recall of this session found (injected or not). One statement for
    all (a prompt's recall finds about twenty: each a round trip on PostgreSQL)."""
    rows = [(session_key, memory_id) for memory_id in dict.fromkeys(memory_ids)]
    if rows:
        conn.executemany(
            "INSERT INTO session_memories (session_key, memory_id, fts_hit_count)"
            " VALUES (?, ?, 1) ON CONFLICT(session_key, memory_id)"
            " DO UPDATE SET fts_hit_count = fts_hit_count + 1", rows)


def record_injected(
    conn: sqlite3.Connection, session_key: str, memory_ids: list[str], at: str | None = None
) -> None:
    """Mark memories as given to the session, ranked after everything it received before."""
    at = at or utcnow()
    base = conn.execute(
        "SELECT COALESCE(MAX(rank), 0) FROM session_memories WHERE session_key = ?",
        (session_key,),
    ).fetchone()[0]
    rows = [(session_key, memory_id, base + offset, at)
            for offset, memory_id in enumerate(memory_ids, start=1)]
    if rows:
        conn.executemany(
            "INSERT INTO session_memories (session_key, memory_id, rank, was_injected,"
            " injected_at) VALUES (?, ?, ?, 1, ?) ON CONFLICT(session_key, memory_id)"
            " DO UPDATE SET rank = excluded.rank, was_injected = 1,"
            " injected_at = excluded.injected_at", rows)


def session_memories(conn: sqlite3.Connection, session_key: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT * FROM session_memories WHERE session_key = ? ORDER BY was_injected DESC,"
        " rank, memory_id", (session_key,),
    )
    return [dict(r) for r in rows]


# --- memories a session context draws on -------------------------------------------------

#: session turns and memory-file chunks are lines the daemon indexes from transcripts and
#: files: found by search, never taken wholesale as "the project's best memories"
NOT_INDEXED_LINES = "COALESCE(m.source_type, '') NOT IN ('session', 'file')"


def _project_clause(projects: list[str]) -> tuple[str, list[Any]]:
    """This project's memories or memories of no project (global preferences and rules)."""
    if not projects:
        return "m.project IS NULL", []
    marks = ", ".join("?" * len(projects))
    return (f"(m.project IS NULL OR lower(m.project) IN ({marks}))",
            [p.lower() for p in projects])


def context_memories(
    conn: sqlite3.Connection,
    projects: list[str],
    *,
    pinned: bool | None = None,
    types: tuple[str, ...] = (),
    only_project: bool = False,
    order: str = "importance",
    limit: int = 10,
    visible: tuple[str, list[Any]] = ("m.agent_id IS NULL AND m.user_id IS NULL", []),
) -> list[Memory]:
    """`visible`: the reader's scope as an SQL condition (the search layer's
    `visibility_clause`); by default global memories only."""
    if only_project:
        if not projects:
            return []
        cond = f"lower(m.project) IN ({', '.join('?' * len(projects))})"
        args: list[Any] = [p.lower() for p in projects]
    else:
        cond, args = _project_clause(projects)
    where = ["m.is_deleted = 0", "m.superseded_at IS NULL", NOT_INDEXED_LINES, cond,
             visible[0]]
    args = [*args, *visible[1]]
    if pinned is not None:
        where.append("m.pinned = ?")
        args.append(int(pinned))
    if types:
        where.append(f"m.type IN ({', '.join('?' * len(types))})")
        args += list(types)
    by = ("m.created_at DESC" if order == "recent"
          else "m.pinned DESC, m.importance DESC, m.access_count DESC, m.created_at DESC")
    rows = conn.execute(
        f"SELECT * FROM memories m WHERE {' AND '.join(where)} ORDER BY {by} LIMIT ?",
        [*args, limit],
    )
    return [Memory.from_row(r) for r in rows]


def session_remembers(
    conn: sqlite3.Connection, session_key: str, projects: list[str], since: str, limit: int = 10
) -> list[str]:
    """What was remembered during the session: its own source id, or its project since start
    (of those, only global memories: a checkpoint is no way into another agent's private
    ones)."""
    cond, args = _project_clause(projects)
    rows = conn.execute(
        f"SELECT m.content FROM memories m WHERE m.is_deleted = 0 AND {NOT_INDEXED_LINES}"
        f" AND (m.source_id = ?"
        f" OR (m.created_at >= ? AND {cond} AND m.project IS NOT NULL"
        f" AND m.agent_id IS NULL AND m.user_id IS NULL))"
        f" ORDER BY m.created_at DESC LIMIT ?",
        [session_key, since, *args, limit],
    )
    return [r[0] for r in rows][::-1]


# --- what a recap of the project's last sessions reads ------------------------------------


def recent_sessions(conn: sqlite3.Connection, project_normalized: str, exclude: str,
                    limit: int = 2) -> list[dict[str, Any]]:
    """The project's latest sessions other than `exclude` (the running one), newest activity
    first: only those with something to recap (a prompt, or a checkpoint)."""
    rows = conn.execute(
        "SELECT * FROM session_state s WHERE s.project_normalized = ? AND s.session_key <> ?"
        " AND (s.prompt_count > 0 OR EXISTS (SELECT 1 FROM session_checkpoints c"
        " WHERE c.session_key = s.session_key))"
        " ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?",
        (project_normalized, exclude, limit),
    ).fetchall()
    out = []
    for row in rows:
        item = dict(row)
        for key in STATE_JSON:
            item[key] = json.loads(item[key] or "[]")
        out.append(item)
    return out


def session_decisions(
    conn: sqlite3.Connection, session_key: str, projects: list[str], since: str, until: str,
    visible: tuple[str, list[Any]], types: tuple[str, ...], limit: int = 5,
) -> list[Memory]:
    """Decisions, constraints and rules stored during a session and visible to the reader:
    those whose source is the session, or the project's written between its start and its
    last activity; live and current only, newest first."""
    cond, args = _project_clause(projects)
    rows = conn.execute(
        f"SELECT * FROM memories m WHERE m.is_deleted = 0 AND m.superseded_at IS NULL"
        f" AND {NOT_INDEXED_LINES} AND m.type IN ({', '.join('?' * len(types))})"
        f" AND {visible[0]} AND (m.source_id = ? OR (m.created_at >= ? AND m.created_at <= ?"
        f" AND m.project IS NOT NULL AND {cond}))"
        f" ORDER BY m.created_at DESC LIMIT ?",
        [*types, *visible[1], session_key, since, until, *args, limit],
    )
    return [Memory.from_row(r) for r in rows]


def last_turns(conn: sqlite3.Connection, session_key: str, visible: tuple[str, list[Any]],
               limit: int = 200) -> list[Memory]:
    """A session's latest turn memories visible to the reader, in transcript order."""
    rows = conn.execute(
        f"SELECT * FROM memories m WHERE m.source_type = 'session' AND m.source_id = ?"
        f" AND m.is_deleted = 0 AND {visible[0]}"
        f" ORDER BY m.occurred_at DESC, m.seq DESC LIMIT ?",
        [session_key, *visible[1], limit],
    )
    return [Memory.from_row(r) for r in rows][::-1]


# --- transcripts and jobs -----------------------------------------------------------------


def upsert_transcript(
    conn: sqlite3.Connection, session_key: str, content: str, harness: str | None,
    project: str | None,
) -> str:
    """Store a session's transcript: 'created', 'updated' (a longer one replaces a shorter:
    a resumed session's file holds all of it) or 'kept'."""
    row = conn.execute("SELECT length(content) FROM session_transcripts WHERE session_key = ?",
                       (session_key,)).fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO session_transcripts (session_key, content, harness, project,"
            " created_at) VALUES (?, ?, ?, ?, ?)",
            (session_key, content, harness, project, utcnow()),
        )
        return "created"
    if len(content) > row[0]:
        conn.execute(
            "UPDATE session_transcripts SET content = ?, harness = COALESCE(?, harness),"
            " project = COALESCE(?, project) WHERE session_key = ?",
            (content, harness, project, session_key),
        )
        return "updated"
    return "kept"


def pending_summary_job(conn: sqlite3.Connection, session_key: str) -> str | None:
    row = conn.execute(
        "SELECT id FROM memory_jobs WHERE job_type = 'summary' AND status IN"
        " ('pending', 'leased') AND json_extract(payload, '$.session_key') = ? LIMIT 1",
        (session_key,),
    ).fetchone()
    return row[0] if row else None


# --- counts and continuity ---------------------------------------------------------------


def tracking_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Sessions tracked, checkpoints kept and transcripts kept."""
    return {
        "tracked": conn.execute("SELECT COUNT(*) FROM session_state").fetchone()[0],
        "checkpoints": conn.execute(
            "SELECT COUNT(*) FROM session_checkpoints").fetchone()[0],
        "transcripts": conn.execute(
            "SELECT COUNT(*) FROM session_transcripts").fetchone()[0],
    }


def state_origin(conn: sqlite3.Connection, session_key: str) -> dict[str, Any]:
    """The session's project, harness and start ({} when no state row)."""
    row = conn.execute(
        "SELECT project, harness, started_at FROM session_state WHERE session_key = ?",
        (session_key,)).fetchone()
    return dict(row) if row else {}


def injected_contents(conn: sqlite3.Connection, session_key: str, limit: int) -> list[Any]:
    """(memory_id, content) of the memories injected into the session, in rank order."""
    return conn.execute(
        "SELECT sm.memory_id, m.content FROM session_memories sm JOIN memories m"
        " ON m.id = sm.memory_id WHERE sm.session_key = ? AND sm.was_injected = 1"
        " ORDER BY sm.rank, sm.memory_id LIMIT ?", (session_key, limit)).fetchall()


def set_relevance(conn: sqlite3.Connection, session_key: str, memory_id: str,
                  score: float) -> None:
    """How relevant an injected memory turned out to the session (continuity scoring)."""
    conn.execute("UPDATE session_memories SET relevance_score = ? WHERE session_key = ?"
                 " AND memory_id = ?", (score, session_key, memory_id))


def record_score(conn: sqlite3.Connection, session_key: str, score: float, injected: int,
                 scored_by: str, at: str) -> None:
    """The session's continuity score; a session scored again keeps its first counts."""
    conn.execute(
        "INSERT INTO session_scores (session_key, score, injected, used, scored_by,"
        " created_at) VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT(session_key) DO UPDATE"
        " SET score = excluded.score, scored_by = excluded.scored_by",
        (session_key, score, injected, scored_by, at))
