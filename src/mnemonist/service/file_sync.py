"""Syncing one memory file into the index: the file is the truth for its chunks.

Per file: the bytes are read and hashed, and the text chunked, outside any transaction. The
same bytes as last time write nothing. Otherwise one write transaction reconciles the file's
chunk memories with its new chunks, matched by content hash: a chunk whose text the file
still holds keeps its memory row (and its vector; only its line numbers move), a new text
becomes a new memory (the background embedder embeds it, or reuses the vector of identical
text), and a text the file no longer holds is hard-deleted with a `deleted` history event.
No extraction or hints jobs are queued for file chunks: the file, not the pipeline, decides
what they say.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mnemonist.ingest.memory_files import FileRoot, read_file, stat_of
from mnemonist.model.memory import format_ts, utcnow
from mnemonist.service.part import Part
from mnemonist.store import embeddings, history, memories
from mnemonist.store import files as store
from mnemonist.store.memories import NewMemory
from mnemonist.store.row_ids import memory_id
from mnemonist.text.line_chunks import LineChunk, chunk_lines
from mnemonist.text.normalize import NormalizedContent, normalize_and_hash
from mnemonist.text.scrub import scrub_credentials

log = logging.getLogger(__name__)

ACTOR = "file-sync"
SOURCE_TYPE = "file"
SOURCE_PREFIX = "file:"
CHUNK_TYPE = "document_chunk"
CHUNK_IMPORTANCE = 0.5


@dataclass
class SyncCounts:
    """What one sync did. `rows_written` is SQLite's count of rows its transactions changed
    (index rows included): 0 means the sync wrote nothing at all."""

    files_scanned: int = 0
    files_changed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    files_skipped: int = 0
    chunks_written: int = 0
    chunks_kept: int = 0
    chunks_moved: int = 0
    chunks_deleted: int = 0
    rows_written: int = 0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, list) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class PreparedChunk:
    chunk: LineChunk
    content: str  # the chunk's lines, credentials scrubbed
    norm: NormalizedContent
    text_hash: str
    scrubbed: list[str]


def prepare_chunks(text: str, tokens: int, overlap: int, max_chars: int) -> list[PreparedChunk]:
    """The file's chunks to index (no I/O): blank ones dropped, and a chunk whose normalised
    text repeats an earlier chunk of the file indexed once (the first place)."""
    out: list[PreparedChunk] = []
    seen: set[str] = set()
    for chunk in chunk_lines(text, tokens, overlap, max_chars):
        if not chunk.text.strip():
            continue
        scrubbed = scrub_credentials(chunk.text)
        norm = normalize_and_hash(scrubbed.text)
        if not norm.storage or norm.content_hash in seen:
            continue
        seen.add(norm.content_hash)
        digest = hashlib.sha256(scrubbed.text.encode("utf-8", "surrogatepass")).hexdigest()
        out.append(PreparedChunk(chunk, scrubbed.text, norm, digest, list(scrubbed.kinds)))
    return out


class FileSyncOps(Part):
    # -- one file --------------------------------------------------------------------------
    def _sync_file(self, path: str, root: FileRoot, counts: SyncCounts, *, check: bool,
                   force: bool) -> None:
        """Bring one discovered file's chunks in step. `check`: compare the bytes even when
        size and modification time look unchanged; `force`: rewrite whatever they say."""
        cfg = self.core.config.files
        counts.files_scanned += 1
        st = stat_of(path)
        if st is None:
            self._remove_file(path, counts, "file deleted")
            return
        row = store.get_file(self.core.db.reader(), path)
        chunking = self._chunking()
        same_place = row is not None and (row.root, row.project, row.chunking) == (
            root.path, root.project, chunking)  # else: re-chunk, even the same bytes
        retry = row is not None and row.error is not None and row.content_hash is None and (
            st.st_size <= cfg.max_file_bytes)  # was too big or unreadable: the limit may allow
        if (row is not None and same_place and not (check or force or retry)
                and row.mtime_ns == st.st_mtime_ns and row.size == st.st_size):
            counts.files_unchanged += 1
            return
        if st.st_size > cfg.max_file_bytes:
            self._skip_file(path, root, counts, st.st_mtime_ns, st.st_size, None,
                            f"the file has {st.st_size} bytes; the limit is"
                            f" {cfg.max_file_bytes} (files.max_file_bytes)")
            return
        try:
            got = read_file(path, cfg.max_file_bytes)
        except OSError as exc:
            self._skip_file(path, root, counts, st.st_mtime_ns, st.st_size, None,
                            f"cannot read the file: {exc.strerror or exc}")
            return
        if got is None:
            self._remove_file(path, counts, "file deleted")
            return
        if got.size > cfg.max_file_bytes:  # it grew since the stat
            self._skip_file(path, root, counts, got.mtime_ns, got.size, None,
                            f"the file has {got.size} bytes; the limit is"
                            f" {cfg.max_file_bytes} (files.max_file_bytes)")
            return
        if (row is not None and same_place and not force
                and row.content_hash == got.content_hash):  # the same bytes as last time
            if (row.mtime_ns, row.size) != (got.mtime_ns, got.size):  # touched, not changed
                with self.core.db.write_tx() as conn:
                    before = conn.total_changes
                    store.touch_file(conn, path, mtime_ns=got.mtime_ns, size=got.size)
                    counts.rows_written += conn.total_changes - before
            counts.files_unchanged += 1
            return
        if b"\x00" in got.data:
            self._skip_file(path, root, counts, got.mtime_ns, got.size, got.content_hash,
                            "the file is binary (it holds NUL bytes)")
            return
        text = got.data.decode("utf-8", errors="replace")
        prepared = prepare_chunks(text, cfg.chunk_tokens, cfg.chunk_overlap,
                                  self.core.config.memory.max_content_chars)
        occurred = format_ts(datetime.fromtimestamp(got.mtime_ns / 1e9, UTC))
        now = utcnow()
        touched = counts.chunks_written + counts.chunks_deleted + counts.chunks_moved
        with self.core.db.write_tx() as conn:
            before = conn.total_changes
            self._reconcile(conn, path, root, prepared, occurred, now, counts)
            store.upsert_file(conn, path=path, root=root.path, project=root.project,
                              content_hash=got.content_hash, chunking=chunking,
                              mtime_ns=got.mtime_ns, size=got.size,
                              chunk_count=len(prepared), error=None, at=now)
            counts.rows_written += conn.total_changes - before
        same = row is not None and same_place and row.content_hash == got.content_hash and (
            touched == counts.chunks_written + counts.chunks_deleted + counts.chunks_moved)
        if same:  # forced, and nothing was out of step
            counts.files_unchanged += 1
        else:
            counts.files_changed += 1

    def _chunking(self) -> str:
        """The settings chunks are cut with: a file cut otherwise is re-chunked."""
        cfg = self.core.config.files
        return (f"tokens={cfg.chunk_tokens} overlap={cfg.chunk_overlap}"
                f" max_chars={self.core.config.memory.max_content_chars}")

    def _skip_file(self, path: str, root: FileRoot, counts: SyncCounts, mtime_ns: int,
                   size: int, content_hash: str | None, error: str) -> None:
        """Record why a file is not indexed, and take its chunks (if any) out."""
        counts.files_skipped += 1
        row = store.get_file(self.core.db.reader(), path)
        if row is not None and (row.error, row.mtime_ns, row.size, row.content_hash, row.root,
                                row.project, row.chunking) == (
                error, mtime_ns, size, content_hash, root.path, root.project,
                self._chunking()):
            return  # recorded already, nothing changed
        with self.core.db.write_tx() as conn:
            before = conn.total_changes
            hashes = [self._drop_chunk(conn, c, path, "file not indexable: " + error, counts)
                      for c in store.chunks_of(conn, path)]
            embeddings.delete_unreferenced(conn, [h for h in hashes if h])
            store.upsert_file(conn, path=path, root=root.path, project=root.project,
                              content_hash=content_hash, chunking=self._chunking(),
                              mtime_ns=mtime_ns, size=size, chunk_count=0, error=error,
                              at=utcnow())
            counts.rows_written += conn.total_changes - before
        log.info("memory file %s skipped: %s", path, error)

    def _remove_file(self, path: str, counts: SyncCounts, reason: str) -> None:
        """The file is gone (or no longer a memory file): its chunks leave the index."""
        with self.core.db.write_tx() as conn:
            before = conn.total_changes
            chunks = store.chunks_of(conn, path)
            known = store.get_file(conn, path) is not None
            hashes = [self._drop_chunk(conn, c, path, reason, counts) for c in chunks]
            embeddings.delete_unreferenced(conn, [h for h in hashes if h])
            store.delete_file(conn, path)
            counts.rows_written += conn.total_changes - before
        if known or chunks:
            counts.files_removed += 1

    # -- inside the transaction --------------------------------------------------------------
    def _reconcile(self, conn: sqlite3.Connection, path: str, root: FileRoot,
                   prepared: list[PreparedChunk], occurred: str, now: str,
                   counts: SyncCounts) -> None:
        existing: dict[str, store.ChunkRow] = {}
        stale: list[store.ChunkRow] = []
        for row in store.chunks_of(conn, path):
            usable = (row.seq is not None and not row.is_deleted
                      and row.project == root.project and row.content_hash not in existing)
            if usable and row.content_hash is not None:
                existing[row.content_hash] = row
            else:
                stale.append(row)  # tombstoned or purged by other means, or moved project
        wanted = {p.norm.content_hash for p in prepared}
        stale += [row for h, row in existing.items() if h not in wanted]
        dropped = [self._drop_chunk(conn, row, path, "file changed", counts) for row in stale]
        for p in prepared:
            kept = existing.get(p.norm.content_hash)
            if kept is None:
                self._add_chunk(conn, path, root, p, occurred, now)
                counts.chunks_written += 1
                continue
            counts.chunks_kept += 1
            if kept.content != p.content:  # the same words, spaced or cased otherwise
                memories.update_fields(conn, kept.memory_id, {"content": p.content},
                                       at=now, by=ACTOR)
                history.append(conn, kept.memory_id, "modified", old_content=kept.content,
                               new_content=p.content, changed_by=ACTOR, reason="file changed",
                               metadata={"path": path, "fields": ["content"]}, at=now)
            c = p.chunk
            if (kept.chunk_index, kept.start_line, kept.end_line, kept.text_hash) != (
                    c.index, c.start_line, c.end_line, p.text_hash):
                store.move_chunk(conn, kept.memory_id, c.index, c.start_line, c.end_line,
                                 p.text_hash)
                counts.chunks_moved += 1
        # after the inserts: a vector that a new chunk shares with a dropped one stays
        embeddings.delete_unreferenced(conn, [h for h in dropped if h])

    def _add_chunk(self, conn: sqlite3.Connection, path: str, root: FileRoot,
                   p: PreparedChunk, occurred: str, now: str) -> None:
        c = p.chunk
        source_id = SOURCE_PREFIX + path
        claimed = memories.find_live_duplicate(conn, p.norm.content_hash, root.project, source_id)
        if claimed is not None:  # a memory stored by hand under this file's source id
            store.add_chunk(conn, claimed, path, c.index, c.start_line, c.end_line, p.text_hash)
            return
        new = NewMemory(
            id=memory_id(), content=p.content, normalized_content=p.norm.normalized,
            content_hash=p.norm.content_hash, type=CHUNK_TYPE, importance=CHUNK_IMPORTANCE,
            tags=[], pinned=False, who=None, why=None, project=root.project,
            source_type=SOURCE_TYPE, source_id=source_id, idempotency_key=None,
            occurred_at=occurred, created_at=now,
        )
        seq = memories.insert(conn, new)
        store.add_chunk(conn, new.id, path, c.index, c.start_line, c.end_line, p.text_hash)
        history.append(
            conn, new.id, "created", new_content=new.content, changed_by=ACTOR,
            reason="file indexed",
            metadata={"path": path, "start_line": c.start_line, "end_line": c.end_line,
                      "type": CHUNK_TYPE, "source_type": SOURCE_TYPE, "scrubbed": p.scrubbed},
            at=now,
        )
        if self.core.embedder is not None:
            embedder = self.core.embedder
            self.core.db.on_commit(lambda: embedder.notify(seq))

    def _drop_chunk(self, conn: sqlite3.Connection, row: store.ChunkRow, path: str,
                    reason: str, counts: SyncCounts) -> str | None:
        """Hard-delete a chunk memory and its line range; returns its content hash."""
        store.drop_chunk(conn, row.memory_id)
        if row.seq is None:
            return None
        memories.hard_delete(conn, row.memory_id)
        history.append(conn, row.memory_id, "deleted", old_content=row.content,
                       changed_by=ACTOR, reason=reason,
                       metadata={"hard": True, "path": path, "start_line": row.start_line,
                                 "end_line": row.end_line})
        seq = row.seq
        self.core.db.on_commit(lambda: self.core.unindex(seq))
        counts.chunks_deleted += 1
        return row.content_hash
