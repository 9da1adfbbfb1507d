"""Purge: remove a memory's text from every table that holds it, leaving a tombstone event.

A soft delete keeps everything (it can be recovered); a purge is for text that must go, such
as a secret the scrubber did not recognise. In the caller's write transaction `purge_memory`:

- deletes the row (its keyword and context index entries, hints and entity links follow, see
  `memories.hard_delete`), its archived copies, its jobs, its document and session links, and
  the vectors of every content it ever had that no other memory uses;
- empties its history: old and new content become NULL, metadata keeps only codes, ids and
  numbers (`SAFE_METADATA`), reasons lose any copy of the text; a `purged` event records who
  and when;
- replaces the text with `[purged]` where it was copied by provenance: history and jobs of the
  memories the pipeline derived from it or wrote over it, the checkpoints of its session or
  project, its session's transcript; a document it was a chunk of loses its stored source text.

`compact` then rewrites the FTS5 indexes (a delete only adds a tombstone to an FTS segment; the
old segment keeps the terms until a merge). With `PRAGMA secure_delete` on (store.db), freed
cells and pages are zeroed, and a WAL checkpoint (`Database.checkpoint`) moves the zeroed pages
into the database file and empties the WAL.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from mnemonist.store import embeddings, history, memories
from mnemonist.store.memories import hash_in_use
from mnemonist.text.normalize import normalize_and_hash

MARK = "[purged]"
CLIP_MIN = 24  # a clipped copy (text cut with "…") counts when it keeps this much of the text
FTS_INDEXES = ("memories_fts", "memories_ctx_fts", "memory_hints_fts")

#: history metadata that survives a purge: codes, flags, numbers and ids, never free text
SAFE_METADATA = frozenset({
    "version", "fields", "hard", "force", "forget", "type", "pinned", "scrubbed", "source_type",
    "proposedAction", "outcome", "mode", "shadow", "jobId", "sourceMemoryId", "targetMemoryId",
    "createdMemoryId", "supersededMemoryId", "deletedMemoryId", "dedupedMemoryId",
    "supersededBy", "supersedes", "confidence", "decisionConfidence", "factConfidence",
    "contradictionRisk", "reviewNeeded", "semanticContradiction", "blockedReason",
    "skippedReason", "extractionModel", "factCount", "entityCount", "archived", "restored",
    "document_id", "chunk_index", "candidateIds", "purged",
})  # fmt: skip


@dataclass
class PurgeReport:
    memory_id: str
    found: bool = False  # the row, or at least its history, existed
    was_deleted: bool = False  # it was a tombstone (soft-deleted) before the purge
    history_rows: int = 0
    archive_rows: int = 0
    embeddings: int = 0
    entities: int = 0
    jobs: int = 0
    links: int = 0
    copies: int = 0  # rows elsewhere where a copy of the text was replaced or dropped

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("memory_id")
        return out


def safe_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k in SAFE_METADATA}


def variants(texts: Iterable[str]) -> list[str]:
    """The spellings a text is stored under elsewhere: as written, whitespace collapsed, and
    both inside JSON strings. Longest first, so a longer copy is replaced whole."""
    out: set[str] = set()
    for text in texts:
        for t in (text, " ".join(text.split())):
            if t.strip():
                out.update((t, json.dumps(t)[1:-1], json.dumps(t, ensure_ascii=False)[1:-1]))
    return sorted(out, key=len, reverse=True)


_CLIPPED = re.compile(r"[^\n\"]{" + str(CLIP_MIN) + r",}…")


def redact(value: str | None, spellings: list[str]) -> str | None:
    """`value` with every spelling replaced by `[purged]`, and every copy cut short with an
    ellipsis (a checkpoint's "- Remembered: <first 200 characters>…") whose kept part begins
    one of them."""
    if value is None:
        return None
    for s in spellings:
        if s in value:  # whole words only: "ok" purged leaves "book" alone
            value = re.sub(rf"(?<![^\W_]){re.escape(s)}(?![^\W_])" if _wordy(s)
                           else re.escape(s), MARK, value)
    if "…" in value:
        value = _CLIPPED.sub(lambda m: _unclip(m.group(0), spellings), value)
    return value


def _wordy(s: str) -> bool:
    """Whether a spelling starts and ends with a word character (then it is replaced only as
    a whole word)."""
    return bool(s) and s[0].isalnum() and s[-1].isalnum()


def _unclip(segment: str, spellings: list[str]) -> str:
    kept = segment[:-1].rstrip()
    for s in spellings:
        i = kept.find(s[:CLIP_MIN])
        if len(s) >= CLIP_MIN and i >= 0 and s.startswith(kept[i:]):
            return kept[:i] + MARK
    return segment


def texts_of(conn: sqlite3.Connection, memory_id: str) -> list[str]:
    """Every text the memory held: its content now, every version in its history and archive."""
    texts: list[str] = []
    row = conn.execute("SELECT content FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is not None:
        texts.append(row[0])
    for event, old, new in conn.execute(
        "SELECT event, old_content, new_content FROM memory_history WHERE memory_id = ?",
        (memory_id,),
    ):  # a superseded event's new content is its successor's text, not this memory's
        texts += [t for t in (old, None if event == "superseded" else new) if t]
    texts += [r[0] for r in conn.execute(
        "SELECT content FROM memory_archive WHERE memory_id = ?", (memory_id,))]
    return list(dict.fromkeys(texts))


def _redact_rows(
    conn: sqlite3.Connection, table: str, key: str, columns: tuple[str, ...], where: str,
    args: list[Any], spellings: list[str],
) -> int:
    changed = 0
    rows = conn.execute(f"SELECT {key}, {', '.join(columns)} FROM {table} WHERE {where}", args)
    for row in rows.fetchall():
        new = [redact(row[c], spellings) for c in columns]
        if new != [row[c] for c in columns]:
            sets = ", ".join(f"{c} = ?" for c in columns)
            conn.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", [*new, row[key]])
            changed += 1
    return changed


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone() is not None


def _empty_history(conn: sqlite3.Connection, memory_id: str, spellings: list[str]) -> int:
    rows = conn.execute(
        "SELECT id, reason, metadata FROM memory_history WHERE memory_id = ?", (memory_id,)
    ).fetchall()
    for row in rows:
        meta = safe_metadata(json.loads(row["metadata"] or "{}"))
        conn.execute(
            "UPDATE memory_history SET old_content = NULL, new_content = NULL, reason = ?,"
            " metadata = ? WHERE id = ?",
            (redact(row["reason"], spellings), json.dumps(meta, sort_keys=True), row["id"]),
        )
    return len(rows)


def _drop_vectors(conn: sqlite3.Connection, texts: list[str], current: str | None) -> int:
    """Vectors of the memory's contents that no memory uses any more, and every vector nothing
    points to (context texts that held the memory's words beside their own)."""
    hashes = {normalize_and_hash(t).content_hash for t in texts}
    if current:
        hashes.add(current)
    removed = embeddings.delete_unreferenced(conn, sorted(hashes))
    return removed + conn.execute(
        f"DELETE FROM embeddings WHERE NOT {hash_in_use('embeddings.content_hash')}"
        " AND NOT EXISTS (SELECT 1 FROM memory_context c"
        " WHERE c.text_hash = embeddings.content_hash)"
    ).rowcount


def _drop_orphan_entities(conn: sqlite3.Connection, entity_ids: list[str]) -> int:
    """Entities only this memory named (their names may be its words); relations cascade."""
    gone = 0
    for ent in entity_ids:
        gone += conn.execute(
            "DELETE FROM entities WHERE id = ? AND mentions <= 0 AND NOT EXISTS"
            " (SELECT 1 FROM memory_entity_mentions WHERE entity_id = ?) AND NOT EXISTS"
            " (SELECT 1 FROM relations WHERE reason = 'user-stated'"
            " AND ? IN (source_entity_id, target_entity_id))", (ent, ent, ent)
        ).rowcount
    return gone


def _copies(conn: sqlite3.Connection, memory_id: str, row: sqlite3.Row | None,
            job_ids: set[str], spellings: list[str]) -> int:
    """Replace the text where it was copied by provenance (see the module docstring)."""
    n = _redact_rows(
        conn, "memory_history", "id", ("old_content", "new_content", "reason", "metadata"),
        "memory_id != ? AND instr(metadata, ?) > 0", [memory_id, memory_id], spellings)
    job_where = "instr(COALESCE(payload, '') || COALESCE(result, ''), ?) > 0"
    job_args: list[Any] = [memory_id]
    if job_ids:
        job_where += f" OR id IN ({','.join('?' * len(job_ids))})"
        job_args += sorted(job_ids)
    n += _redact_rows(conn, "memory_jobs", "id", ("payload", "result", "error"),
                      job_where, job_args, spellings)
    source_id = row["source_id"] if row is not None else None
    project = row["project"] if row is not None else None
    if source_id and _has_table(conn, "session_transcripts"):
        n += _redact_rows(conn, "session_transcripts", "session_key", ("content",),
                          "session_key = ?", [source_id], spellings)
    if (source_id or project) and _has_table(conn, "session_checkpoints"):
        n += _redact_rows(
            conn, "session_checkpoints", "id", ("digest", "recent_remembers", "memory_queries"),
            "session_key = ? OR project = ? OR project_normalized = ?",
            [source_id or "", project or "", project or ""], spellings)
    docs = [r[0] for r in conn.execute(
        "SELECT document_id FROM document_memories WHERE memory_id = ?", (memory_id,))]
    for doc in docs:  # a chunk's text is the document's text, whitespace aside: drop it whole
        n += conn.execute(
            "UPDATE documents SET raw_content = NULL WHERE id = ? AND raw_content IS NOT NULL",
            (doc,)).rowcount
    return n


def purge_memory(
    conn: sqlite3.Connection,
    memory_id: str,
    *,
    by: str,
    reason: str | None,
    at: str,
    extra_texts: Iterable[str] = (),
) -> PurgeReport:
    """Remove every copy of the memory's text (call inside write_tx; then `compact`)."""
    report = PurgeReport(memory_id)
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
    has_history = conn.execute(
        "SELECT 1 FROM memory_history WHERE memory_id = ? LIMIT 1", (memory_id,)
    ).fetchone() is not None
    if row is None and not has_history:
        return report
    report.found = True
    report.was_deleted = bool(row["is_deleted"]) if row is not None else True
    texts = texts_of(conn, memory_id)
    spellings = variants([*texts, *extra_texts])
    job_ids = {str(json.loads(m or "{}").get("jobId")) for (m,) in conn.execute(
        "SELECT metadata FROM memory_history WHERE memory_id = ?", (memory_id,))} - {"None"}
    report.copies = _copies(conn, memory_id, row, job_ids, spellings)
    entity_ids: list[str] = []
    if row is not None:
        if _has_table(conn, "memory_entity_mentions"):
            entity_ids = [r[0] for r in conn.execute(
                "SELECT entity_id FROM memory_entity_mentions WHERE memory_id = ?",
                (memory_id,))]
        memories.hard_delete(conn, memory_id)
    report.entities = _drop_orphan_entities(conn, entity_ids)
    report.embeddings = _drop_vectors(conn, texts, row["content_hash"] if row else None)
    report.archive_rows = conn.execute(
        "DELETE FROM memory_archive WHERE memory_id = ?", (memory_id,)).rowcount
    report.jobs = conn.execute(
        "DELETE FROM memory_jobs WHERE memory_id = ?", (memory_id,)).rowcount
    report.links = conn.execute(
        "DELETE FROM document_memories WHERE memory_id = ?", (memory_id,)).rowcount
    if _has_table(conn, "session_memories"):
        report.links += conn.execute(
            "DELETE FROM session_memories WHERE memory_id = ?", (memory_id,)).rowcount
    if _has_table(conn, "memory_feedback"):
        report.links += conn.execute(
            "DELETE FROM memory_feedback WHERE memory_id = ?", (memory_id,)).rowcount
    if _has_table(conn, "predictor_pairs"):  # the query text the memory was rated for
        report.links += conn.execute(
            "DELETE FROM predictor_pairs WHERE memory_id = ?", (memory_id,)).rowcount
    report.history_rows = _empty_history(conn, memory_id, spellings)
    history.append(conn, memory_id, "purged", changed_by=by, reason=redact(reason, spellings),
                   metadata={"hard": True, "purged": report.to_dict()}, at=at)
    return report


def clear_leftovers(conn: sqlite3.Connection) -> int:
    """Memories whose row is already gone (hard-deleted or swept before purges existed) lose
    the text their history and archive still held. Returns how many memories."""
    gone = [r[0] for r in conn.execute(
        "SELECT DISTINCT h.memory_id FROM memory_history h WHERE NOT EXISTS"
        " (SELECT 1 FROM memories m WHERE m.id = h.memory_id)"
        " AND (h.old_content IS NOT NULL OR h.new_content IS NOT NULL)")]
    for memory_id in gone:
        spellings = variants(texts_of(conn, memory_id))
        conn.execute("DELETE FROM memory_archive WHERE memory_id = ?", (memory_id,))
        conn.execute("DELETE FROM memory_jobs WHERE memory_id = ?", (memory_id,))
        _empty_history(conn, memory_id, spellings)
    return len(gone)


def compact(conn: sqlite3.Connection) -> None:
    """Merge every FTS5 index into one segment, so that deleted rows' terms leave the file
    (inside write_tx; with secure_delete the old segments' pages are zeroed)."""
    for table in FTS_INDEXES:
        if _has_table(conn, table):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
