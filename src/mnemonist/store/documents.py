"""documents and document_memories: ingested texts and URLs, and their chunk memories.

Writes happen inside the caller's write transaction; reads take any connection.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass
from typing import Any

from mnemonist.model.memory import utcnow
from mnemonist.text.scrub import scrub_all, scrub_optional

#: the order a document moves through while it is ingested
STATUSES = (
    "pending", "extracting", "chunking", "embedding", "indexing", "done", "failed", "deleted",
)  # fmt: skip


@dataclass
class Document:
    id: str
    source_type: str
    source_url: str | None
    title: str | None
    raw_content: str | None
    content_type: str | None
    status: str
    error: str | None
    chunk_count: int
    byte_length: int | None
    project: str | None
    tags: list[str]
    who: str | None
    created_at: str
    updated_at: str
    deleted_at: str | None = None
    delete_reason: str | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Document:
        return cls(
            id=row["id"],
            source_type=row["source_type"],
            source_url=row["source_url"],
            title=row["title"],
            raw_content=row["raw_content"],
            content_type=row["content_type"],
            status=row["status"],
            error=row["error"],
            chunk_count=row["chunk_count"],
            byte_length=row["byte_length"],
            project=row["project"],
            tags=json.loads(row["tags"] or "[]"),
            who=row["who"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            deleted_at=row["deleted_at"],
            delete_reason=row["delete_reason"],
        )

    def to_public(self, *, with_content: bool = False) -> dict[str, Any]:
        out = asdict(self)
        content = out.pop("raw_content")
        out["content_length"] = len(content) if content is not None else None
        if with_content:
            out["content"] = content
        return out


def insert(
    conn: sqlite3.Connection,
    *,
    doc_id: str,
    source_type: str,
    source_url: str | None,
    title: str | None,
    raw_content: str | None,
    byte_length: int | None,
    project: str | None,
    tags: list[str],
    who: str | None,
    content_type: str | None = None,
) -> None:
    now = utcnow()
    conn.execute(
        "INSERT INTO documents (id, source_type, source_url, title, raw_content, content_type,"
        " status, byte_length, project, tags, who, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?)",
        (doc_id, source_type, source_url, scrub_optional(title), scrub_optional(raw_content),
         content_type, byte_length, project, json.dumps(scrub_all(tags)), scrub_optional(who),
         now, now),
    )


def get(conn: sqlite3.Connection, doc_id: str) -> Document | None:
    row = conn.execute("SELECT * FROM documents WHERE id = ?", (doc_id,)).fetchone()
    return Document.from_row(row) if row else None


_FREE_TEXT = {"error", "title", "raw_content", "delete_reason"}  # scrubbed on the way in
_UPDATABLE = {"status", "error", "title", "raw_content", "content_type", "byte_length",
              "chunk_count", "deleted_at", "delete_reason"}


def update(conn: sqlite3.Connection, doc_id: str, **fields: Any) -> None:
    """Set columns of one document (and updated_at)."""
    unknown = set(fields) - _UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    values = {k: scrub_optional(v) if k in _FREE_TEXT else v for k, v in fields.items()}
    sets = "".join(f"{k} = ?, " for k in values)
    conn.execute(
        f"UPDATE documents SET {sets}updated_at = ? WHERE id = ?",
        [*values.values(), utcnow(), doc_id],
    )


def listing(
    conn: sqlite3.Connection,
    *,
    limit: int,
    offset: int,
    status: str | None = None,
    project: str | None = None,
    include_deleted: bool = False,
) -> tuple[list[Document], int]:
    """A page of documents, newest first, and how many match in all."""
    where, args = ["1 = 1"], []
    if status:
        where.append("status = ?")
        args.append(status)
    elif not include_deleted:
        where.append("status != 'deleted'")
    if project is not None:
        where.append("project = ?")
        args.append(project)
    clause = " AND ".join(where)
    total = conn.execute(f"SELECT COUNT(*) FROM documents WHERE {clause}", args).fetchone()[0]
    rows = conn.execute(
        f"SELECT * FROM documents WHERE {clause} ORDER BY created_at DESC, rowid DESC"
        " LIMIT ? OFFSET ?",
        [*args, limit, offset],
    ).fetchall()
    return [Document.from_row(r) for r in rows], total


def link_chunk(conn: sqlite3.Connection, doc_id: str, chunk_index: int, memory_id: str) -> None:
    """Record that chunk `chunk_index` of the document is this memory (a retry re-links)."""
    conn.execute(
        "INSERT INTO document_memories (document_id, memory_id, chunk_index, created_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT(document_id, chunk_index)"
        " DO UPDATE SET memory_id = excluded.memory_id",
        (doc_id, memory_id, chunk_index, utcnow()),
    )


def chunk_links(conn: sqlite3.Connection, doc_id: str) -> list[tuple[int, str]]:
    """(chunk_index, memory_id) in chunk order."""
    return [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT chunk_index, memory_id FROM document_memories WHERE document_id = ?"
            " ORDER BY chunk_index",
            (doc_id,),
        )
    ]


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {r[0]: r[1] for r in conn.execute(
        "SELECT status, COUNT(*) FROM documents GROUP BY status")}


def status_of(conn: sqlite3.Connection, doc_id: str) -> str | None:
    """The document's status; None when there is no such document."""
    row = conn.execute("SELECT status FROM documents WHERE id = ?", (doc_id,)).fetchone()
    return None if row is None else str(row[0])
