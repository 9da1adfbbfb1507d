"""Memory files: `memory_files` (one row per indexed file), `file_chunks` (the chunk memories
of each file and their line ranges) and `file_roots` (project roots learnt from hooks).

Only SQL here; the sync that decides what to write is `service.files`."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields
from typing import Any

from mnemonist.model.memory import utcnow


@dataclass(frozen=True)
class FileRow:
    path: str
    root: str
    project: str | None
    content_hash: str | None
    chunking: str | None
    mtime_ns: int | None
    size: int | None
    chunk_count: int
    error: str | None
    indexed_at: str
    checked_at: str

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> FileRow:
        # its own columns only: PostgreSQL's tables carry a `rowid` column too (SELECT *)
        return cls(**{f.name: row[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class ChunkRow:
    """A chunk of a file joined with its memory (None fields when the memory row is gone)."""

    memory_id: str
    chunk_index: int
    start_line: int
    end_line: int
    text_hash: str
    seq: int | None
    content: str | None
    content_hash: str | None
    project: str | None
    is_deleted: bool | None


# -- memory_files -----------------------------------------------------------------------------
def get_file(conn: sqlite3.Connection, path: str) -> FileRow | None:
    row = conn.execute("SELECT * FROM memory_files WHERE path = ?", (path,)).fetchone()
    return FileRow.from_row(row) if row else None


def all_files(conn: sqlite3.Connection, root: str | None = None) -> dict[str, FileRow]:
    sql, args = "SELECT * FROM memory_files", []
    if root is not None:
        sql, args = sql + " WHERE root = ?", [root]
    return {r["path"]: FileRow.from_row(r) for r in conn.execute(sql + " ORDER BY path", args)}


def upsert_file(
    conn: sqlite3.Connection, *, path: str, root: str, project: str | None,
    content_hash: str | None, chunking: str | None, mtime_ns: int | None, size: int | None,
    chunk_count: int, error: str | None, at: str,
) -> None:
    conn.execute(
        "INSERT INTO memory_files (path, root, project, content_hash, chunking, mtime_ns,"
        " size, chunk_count, error, indexed_at, checked_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(path) DO UPDATE SET root = excluded.root, project = excluded.project,"
        " content_hash = excluded.content_hash, chunking = excluded.chunking,"
        " mtime_ns = excluded.mtime_ns, size = excluded.size,"
        " chunk_count = excluded.chunk_count, error = excluded.error,"
        " indexed_at = excluded.indexed_at, checked_at = excluded.checked_at",
        (path, root, project, content_hash, chunking, mtime_ns, size, chunk_count, error, at,
         at),
    )


def touch_file(conn: sqlite3.Connection, path: str, *, mtime_ns: int, size: int) -> None:
    """Same bytes, new modification time (a `touch`, a save without change)."""
    conn.execute(
        "UPDATE memory_files SET mtime_ns = ?, size = ?, checked_at = ? WHERE path = ?",
        (mtime_ns, size, utcnow(), path),
    )


def delete_file(conn: sqlite3.Connection, path: str) -> None:
    conn.execute("DELETE FROM file_chunks WHERE path = ?", (path,))
    conn.execute("DELETE FROM memory_files WHERE path = ?", (path,))


def totals(conn: sqlite3.Connection) -> dict[str, int]:
    row = conn.execute(
        "SELECT COUNT(*) AS files, COALESCE(SUM(chunk_count), 0) AS chunks,"
        " COALESCE(SUM(error IS NOT NULL), 0) AS skipped FROM memory_files"
    ).fetchone()
    return {"files": row["files"], "chunks": row["chunks"], "skipped": row["skipped"]}


# -- file_chunks ------------------------------------------------------------------------------
def chunks_of(conn: sqlite3.Connection, path: str) -> list[ChunkRow]:
    rows = conn.execute(
        "SELECT c.memory_id, c.chunk_index, c.start_line, c.end_line, c.text_hash, m.seq,"
        " m.content, m.content_hash, m.project, m.is_deleted FROM file_chunks c"
        " LEFT JOIN memories m ON m.id = c.memory_id WHERE c.path = ? ORDER BY c.chunk_index",
        (path,),
    ).fetchall()
    return [
        ChunkRow(r["memory_id"], r["chunk_index"], r["start_line"], r["end_line"],
                 r["text_hash"], r["seq"], r["content"], r["content_hash"], r["project"],
                 None if r["is_deleted"] is None else bool(r["is_deleted"]))
        for r in rows
    ]


def add_chunk(
    conn: sqlite3.Connection, memory_id: str, path: str, index: int, start: int, end: int,
    text_hash: str,
) -> None:
    conn.execute(
        "INSERT INTO file_chunks (memory_id, path, chunk_index, start_line, end_line, text_hash)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (memory_id, path, index, start, end, text_hash),
    )


def move_chunk(
    conn: sqlite3.Connection, memory_id: str, index: int, start: int, end: int, text_hash: str
) -> None:
    conn.execute(
        "UPDATE file_chunks SET chunk_index = ?, start_line = ?, end_line = ?, text_hash = ?"
        " WHERE memory_id = ?",
        (index, start, end, text_hash, memory_id),
    )


def drop_chunk(conn: sqlite3.Connection, memory_id: str) -> None:
    conn.execute("DELETE FROM file_chunks WHERE memory_id = ?", (memory_id,))


def lines_of(conn: sqlite3.Connection, memory_ids: list[str]) -> dict[str, dict[str, Any]]:
    """{memory id: {path, start_line, end_line}} for those of `memory_ids` that are file
    chunks (one query per 500 ids)."""
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(memory_ids), 500):
        part = memory_ids[start : start + 500]
        rows = conn.execute(
            f"SELECT memory_id, path, start_line, end_line FROM file_chunks"
            f" WHERE memory_id IN ({','.join('?' * len(part))})",
            part,
        )
        for r in rows:
            out[r[0]] = {"path": r[1], "start_line": r[2], "end_line": r[3]}
    return out


# -- file_roots -------------------------------------------------------------------------------
def learnt_roots(conn: sqlite3.Connection) -> list[tuple[str, str | None]]:
    return [(r[0], r[1]) for r in conn.execute(
        "SELECT root, project FROM file_roots ORDER BY first_seen, root")]


def has_root(conn: sqlite3.Connection, root: str) -> bool:
    return conn.execute("SELECT 1 FROM file_roots WHERE root = ?", (root,)).fetchone() is not None


def add_root(conn: sqlite3.Connection, root: str, project: str | None) -> None:
    now = utcnow()
    conn.execute(
        "INSERT INTO file_roots (root, project, first_seen, last_seen) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(root) DO UPDATE SET last_seen = excluded.last_seen",
        (root, project, now, now),
    )


def session_cwds(conn: sqlite3.Connection) -> list[str]:
    """Every working folder a hook reported (`session_state.cwd`)."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT cwd FROM session_state WHERE cwd IS NOT NULL AND cwd != ''")]
