"""`session_ingest` (how far each session's transcript has been read into turn memories) and
the queries over turn memories (`source_type = 'session'`). SQL only; callers hold the
transaction for writes."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from mnemonist.model.memory import Memory, utcnow

SOURCE_TYPE = "session"
JOB_TYPE = "session_ingest"


def get(conn: sqlite3.Connection, session_key: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM session_ingest WHERE session_key = ?",
                       (session_key,)).fetchone()
    return dict(row) if row else None


def upsert(conn: sqlite3.Connection, session_key: str, **fields: Any) -> None:
    now = utcnow()
    values = {"updated_at": now, **fields}
    if get(conn, session_key) is None:
        values = {"created_at": now, **values, "session_key": session_key}
        cols = list(values)
        conn.execute(
            f"INSERT INTO session_ingest ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            [values[c] for c in cols],
        )
        return
    sets = ", ".join(f"{c} = ?" for c in values)
    conn.execute(f"UPDATE session_ingest SET {sets} WHERE session_key = ?",
                 [*values.values(), session_key])


def queued_job(conn: sqlite3.Connection, session_key: str) -> sqlite3.Row | None:
    """The session's ingest job that has not started yet, if any."""
    return conn.execute(
        "SELECT id, payload FROM memory_jobs WHERE job_type = ? AND status = 'pending'"
        " AND json_extract(payload, '$.session_key') = ? ORDER BY created_at LIMIT 1",
        (JOB_TYPE, session_key),
    ).fetchone()


def set_payload(conn: sqlite3.Connection, job_id: str, payload: dict[str, Any]) -> None:
    conn.execute("UPDATE memory_jobs SET payload = ?, updated_at = ? WHERE id = ?",
                 (json.dumps(payload), utcnow(), job_id))


def ingest_waiting(conn: sqlite3.Connection, session_key: str) -> bool:
    """Whether the session's transcript is still to be read: an ingest job pending or leased."""
    return conn.execute(
        "SELECT 1 FROM memory_jobs WHERE job_type = ? AND status IN ('pending', 'leased')"
        " AND json_extract(payload, '$.session_key') = ? LIMIT 1",
        (JOB_TYPE, session_key),
    ).fetchone() is not None


def drop_body(conn: sqlite3.Connection, job_id: str) -> None:
    """The transcript text carried in the job's payload, removed (it is in the transcript)."""
    conn.execute("UPDATE memory_jobs SET payload = json_remove(payload, '$.body')"
                 " WHERE id = ?", (job_id,))


def unfinished_jobs(conn: sqlite3.Connection) -> int:
    return conn.execute(
        "SELECT COUNT(*) FROM memory_jobs WHERE job_type = ? AND status IN ('pending', 'leased')"
        " AND attempts < max_attempts", (JOB_TYPE,),
    ).fetchone()[0]


def append_transcript(conn: sqlite3.Connection, session_key: str, text: str,
                      harness: str | None, project: str | None) -> None:
    """Add the flattened text of newly read lines to the session's lossless transcript."""
    conn.execute(
        "INSERT INTO session_transcripts (session_key, content, harness, project, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(session_key) DO UPDATE SET"
        " content = content || excluded.content, harness = COALESCE(harness, excluded.harness),"
        " project = COALESCE(project, excluded.project)",
        (session_key, text, harness, project, utcnow()),
    )


def turns(conn: sqlite3.Connection, session_key: str, *, limit: int = 200,
          offset: int = 0) -> tuple[list[Memory], int]:
    """A session's live turn memories in transcript order, and how many there are."""
    where = ("source_type = ? AND source_id = ? AND is_deleted = 0")
    args = (SOURCE_TYPE, session_key)
    total = conn.execute(f"SELECT COUNT(*) FROM memories WHERE {where}", args).fetchone()[0]
    rows = conn.execute(
        f"SELECT * FROM memories WHERE {where} ORDER BY occurred_at, seq LIMIT ? OFFSET ?",
        (*args, limit, offset),
    )
    return [Memory.from_row(r) for r in rows], total


def list_sessions(conn: sqlite3.Connection, *, project: str | None = None, limit: int = 50,
                  offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """Sessions the hooks saw, newest first, with what was kept of each."""
    where, args = "1", []
    if project:
        where = "(s.project = ? OR s.project_normalized = ?)"
        args = [project, project]
    total = conn.execute(f"SELECT COUNT(*) FROM session_state s WHERE {where}",
                         args).fetchone()[0]
    rows = conn.execute(
        "SELECT s.session_key, s.harness, s.project, s.cwd, s.started_at, s.updated_at,"
        " s.ended_at, s.prompt_count, s.compactions, i.status AS ingest_status, i.reason"
        " AS ingest_reason, i.turns, i.first_at, i.last_at,"
        " (SELECT COUNT(*) FROM session_checkpoints c WHERE c.session_key = s.session_key)"
        " AS checkpoints,"
        " (SELECT length(t.content) FROM session_transcripts t"
        "  WHERE t.session_key = s.session_key) AS transcript_chars"
        f" FROM session_state s LEFT JOIN session_ingest i ON i.session_key = s.session_key"
        f" WHERE {where} ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ? OFFSET ?",
        [*args, limit, offset],
    )
    return [dict(r) for r in rows], total


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    by_status = {r[0]: r[1] for r in conn.execute(
        "SELECT status, COUNT(*) FROM session_ingest GROUP BY status")}
    turn_count = conn.execute(
        "SELECT COUNT(*) FROM memories WHERE source_type = ? AND is_deleted = 0",
        (SOURCE_TYPE,)).fetchone()[0]
    return {"indexed": by_status.get("indexed", 0), "pending": by_status.get("pending", 0),
            "skipped": by_status.get("skipped", 0), "turns": turn_count}


def speakers(conn: sqlite3.Connection, session_key: str) -> set[str]:
    """Who spoke in the session's turn memories written so far."""
    return {r[0] for r in conn.execute(
        "SELECT DISTINCT who FROM memories WHERE source_type = ? AND source_id = ?"
        " AND who IS NOT NULL", (SOURCE_TYPE, session_key))}


def delete_transcript(conn: sqlite3.Connection, session_key: str) -> None:
    conn.execute("DELETE FROM session_transcripts WHERE session_key = ?", (session_key,))


def keep_first_transcript(conn: sqlite3.Connection, session_key: str, text: str,
                          harness: str | None, project: str | None) -> None:
    """The session's transcript, unless it has one already (first write wins)."""
    conn.execute(
        "INSERT OR IGNORE INTO session_transcripts (session_key, content, harness,"
        " project, created_at) VALUES (?, ?, ?, ?, ?)",
        (session_key, text, harness, project, utcnow()),
    )


def transcript(conn: sqlite3.Connection, session_key: str) -> str | None:
    row = conn.execute("SELECT content FROM session_transcripts WHERE session_key = ?",
                       (session_key,)).fetchone()
    return row[0] if row else None


def transcripts_of(conn: sqlite3.Connection, session_keys: list[str]) -> dict[str, str]:
    """{session key: its transcript} of those of the sessions that have one."""
    rows = conn.execute(
        f"SELECT session_key, content FROM session_transcripts"
        f" WHERE session_key IN ({','.join('?' * len(session_keys))})",
        session_keys,
    )
    return {r[0]: r[1] for r in rows}
