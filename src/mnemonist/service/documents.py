"""Documents: accept a text or a URL for background ingest, list, read, and delete them.

The document worker (`ingest.documents`) does the ingest and writes each chunk through
`prepare_document_chunk` / `write_document_chunk` here, which take remember's path.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, cast

import numpy as np

from mnemonist.ingest.documents import (
    ACTOR,
    CHUNK_IMPORTANCE,
    CHUNK_TYPE,
    JOB_TYPE,
    PermanentFailure,
    PreparedChunk,
)
from mnemonist.ingest.url_fetcher import FetchError, UrlNotAllowed, check_url
from mnemonist.model.answers import RememberAnswer
from mnemonist.model.answers_files import (
    DocumentAccepted,
    DocumentAnswer,
    DocumentChunk,
    DocumentChunksAnswer,
    DocumentDeleted,
    DocumentJob,
    DocumentListAnswer,
    DocumentView,
    PurgedChunk,
)
from mnemonist.model.documents import (
    DocumentDeleteRequest,
    DocumentListRequest,
    DocumentRequest,
)
from mnemonist.model.memory import utcnow
from mnemonist.model.requests import RememberRequest
from mnemonist.service.base import ServiceCore
from mnemonist.service.errors import BadRequest, Conflict, NotFound
from mnemonist.service.part import Part
from mnemonist.store import documents, embedding_work, embeddings, jobs, memories, memory_reads
from mnemonist.store.documents import Document
from mnemonist.text.normalize import normalize_and_hash
from mnemonist.text.prefix import parse_prefix
from mnemonist.text.scrub import scrub_credentials

if TYPE_CHECKING:
    from mnemonist.service.parts import Memories

LIMITS_KEY = "memory.pipelineV2.documents"


class Documents(Part):
    """Documents: accepted here, ingested by the document worker through remember's path
    (`memories`)."""

    _document_wake: Callable[[], None] | None = None

    def __init__(self, core: ServiceCore, memories: Memories) -> None:
        super().__init__(core)
        self.memories = memories

    def set_document_waker(self, wake: Callable[[], None] | None) -> None:
        """Called after a document is accepted, so the worker polls at once."""
        self._document_wake = wake

    # -- accept ----------------------------------------------------------------------------
    def add_document(self, req: DocumentRequest) -> DocumentAccepted:
        cfg = self.core.config.memory.pipeline_v2.documents
        if req.content is None and req.url is None:
            raise BadRequest("content or url is required", field="content")
        if req.content is not None and req.url is not None:
            raise BadRequest("give content or url, not both", field="url")
        raw: str | None = None
        url: str | None = None
        size: int | None = None
        if req.url is not None:
            url = self._vet_url(req.url, cfg.allow_private_urls)
        else:
            assert req.content is not None
            if not req.content.strip():
                raise BadRequest("content is empty", field="content")
            # the size first: scrubbing megabytes costs seconds, refusing them costs nothing
            self._check_document_size(req.content, cfg.max_content_bytes)
            raw = scrub_credentials(req.content).text
            size = self._check_document_size(raw, cfg.max_content_bytes)
        title = scrub_credentials(req.title).text.strip() or None if req.title else None
        doc_id = str(uuid.uuid4())
        max_attempts = self.core.config.memory.pipeline_v2.worker.max_retries
        with self.core.db.write_tx() as conn:
            documents.insert(
                conn, doc_id=doc_id, source_type="url" if url else "text", source_url=url,
                title=title, raw_content=raw, byte_length=size, project=req.project,
                tags=list(req.tags or []), who=req.who,
                content_type=None if url else "text/plain",
            )
            jobs.enqueue(conn, JOB_TYPE, document_id=doc_id, max_attempts=max_attempts,
                         check_existing=False)
            if self._document_wake is not None:
                self.core.db.on_commit(self._document_wake)
        return {"id": doc_id, "status": "pending", "source_type": "url" if url else "text",
                "source_url": url, "title": title, "byte_length": size}

    @staticmethod
    def _check_document_size(text: str, limit: int) -> int:
        """The UTF-8 size of `text`, or a 400 naming the limit (without encoding megabytes
        when the characters alone are too many)."""
        counted = len(text) > limit  # characters are at least as many as bytes
        size = len(text) if counted else len(text.encode("utf-8", errors="replace"))
        if size > limit:
            raise BadRequest(
                f"content has {'at least ' if counted else ''}{size} bytes; the"
                f" limit is {limit} ({LIMITS_KEY}.maxContentBytes)", field="content",
            )
        return size

    @staticmethod
    def _vet_url(url: str, allow_private: bool) -> str:
        if scrub_credentials(url).kinds:
            raise BadRequest(
                "url holds a credential, and the URL is stored with the document: remove it",
                code="url_has_credential", field="url",
            )
        try:
            target = check_url(url, allow_private=allow_private)
        except UrlNotAllowed as exc:
            raise BadRequest(f"url: {exc.message}", code="url_not_allowed", field="url") from exc
        except FetchError as exc:
            raise BadRequest(f"url: {exc.message}", code=exc.code, field="url") from exc
        return str(target.url)

    # -- read ------------------------------------------------------------------------------
    def _document(self, doc_id: str) -> Document:
        doc = documents.get(self.core.db.reader(), doc_id)
        if doc is None:
            raise NotFound(f"no document {doc_id}")
        return doc

    def list_documents(self, req: DocumentListRequest) -> DocumentListAnswer:
        items, total = documents.listing(
            self.core.db.reader(), limit=req.limit, offset=req.offset, status=req.status,
            project=req.project, include_deleted=req.include_deleted,
        )
        return {"documents": [cast(DocumentView, d.to_public()) for d in items], "total": total,
                "limit": req.limit, "offset": req.offset,
                "has_more": req.offset + len(items) < total}

    def get_document(self, doc_id: str, *, with_content: bool = False) -> DocumentAnswer:
        out = cast(DocumentAnswer, self._document(doc_id).to_public(with_content=with_content))
        job = jobs.latest_for_document(self.core.db.reader(), doc_id, JOB_TYPE)
        out["job"] = cast(DocumentJob | None, job)
        return out

    def document_chunks(self, doc_id: str, *,
                        include_deleted: bool = True) -> DocumentChunksAnswer:
        doc = self._document(doc_id)
        conn = self.core.db.reader()
        chunks: list[DocumentChunk | PurgedChunk] = []
        for index, memory_id in documents.chunk_links(conn, doc_id):
            m = memories.get(conn, memory_id)
            if m is None:
                chunks.append(PurgedChunk(index=index, id=memory_id, purged=True))
            elif include_deleted or not m.is_deleted:
                chunks.append(cast(DocumentChunk, {"index": index, **m.to_public()}))
        return {"document_id": doc_id, "status": doc.status, "count": len(chunks),
                "chunks": chunks}

    # -- delete ----------------------------------------------------------------------------
    def delete_document(self, doc_id: str, req: DocumentDeleteRequest) -> DocumentDeleted:
        reason = (req.reason or "").strip() or "document deleted"
        by = req.changed_by or "api"
        deleted: list[str] = []
        kept: list[str] = []
        with self.core.db.write_tx() as conn:
            doc = documents.get(conn, doc_id)
            if doc is None:
                raise NotFound(f"no document {doc_id}")
            if doc.status == "deleted":
                raise Conflict("the document is already deleted", code="already_deleted")
            for index, memory_id in documents.chunk_links(conn, doc_id):
                m = memories.get(conn, memory_id)
                if m is None or m.is_deleted or memory_id in deleted:
                    continue
                if m.pinned and not req.force:
                    kept.append(m.id)
                    continue
                self.memories.soft_delete(conn, m, reason, by,
                                  {"document_id": doc_id, "chunk_index": index})
                deleted.append(m.id)
            documents.update(conn, doc_id, status="deleted", deleted_at=utcnow(),
                             delete_reason=reason)
        return {"id": doc_id, "status": "deleted", "chunks_deleted": len(deleted),
                "kept_pinned": kept}

    # -- the worker's writes ---------------------------------------------------------------
    def prepare_document_chunk(self, doc: Document, text: str) -> PreparedChunk:
        """remember's preparation for one chunk (no I/O); save prefixes are not parsed."""
        tags = list(doc.tags)
        if doc.title:
            tags.insert(0, doc.title[:200])
        req = RememberRequest(
            content=text, type=CHUNK_TYPE, importance=CHUNK_IMPORTANCE, tags=tags, pinned=False,
            who=doc.who or ACTOR, project=doc.project, source_type="document",
            source_id=doc.id, occurred_at=doc.created_at,
        )
        try:
            new, actor, scrubbed = self.memories.prepare(req, ACTOR)
        except BadRequest as exc:
            raise PermanentFailure(exc.message) from exc
        if parse_prefix(text).content != text.strip():
            # a chunk that happens to start like "critical:" or "[1]:" is text, not a prefix
            norm = normalize_and_hash(scrub_credentials(text).text)
            new = replace(new, content=norm.storage, normalized_content=norm.normalized,
                          content_hash=norm.content_hash, pinned=False, tags=req.tags or [],
                          importance=CHUNK_IMPORTANCE)
        existing = memories.find_live_duplicate(
            self.core.db.reader(), new.content_hash, new.project, new.source_id)
        return PreparedChunk(new, actor, scrubbed, existing)

    def write_document_chunk(
        self, doc: Document, index: int, prepared: PreparedChunk, vector: np.ndarray | None
    ) -> RememberAnswer | None:
        """Write one chunk memory and its link in one transaction; None if the document was
        deleted meanwhile. A vector computed beforehand is stored and indexed on commit."""
        new = prepared.new
        with self.core.db.write_tx() as conn:
            status = documents.status_of(conn, doc.id)
            if status is None or status == "deleted":
                return None
            outcome = self.memories.insert_or_existing(conn, new, prepared.actor, prepared.scrubbed)
            documents.link_chunk(conn, doc.id, index, outcome["id"])
            if outcome["created"] and vector is not None and self.core.provider is not None:
                model = self.core.provider.model_id
                embeddings.upsert(conn, new.content_hash, model, vector)
                embedding_work.mark_embedded_by_id(conn, new.id, model)
                seq = memory_reads.seq_of(conn, new.id)
                assert seq is not None  # inserted in this transaction
                project = new.project
                self.core.db.on_commit(
                    lambda: self.core.get_index(int(vector.shape[0])).add(seq, vector, project))
        return outcome
