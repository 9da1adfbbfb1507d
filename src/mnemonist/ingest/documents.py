"""The document worker: `document_ingest` jobs turn a document into chunk memories.

Each job carries a document id. The document moves through extracting (the URL is fetched, or
the stored text is read) → chunking → embedding (per chunk: embed outside any transaction,
then write the chunk memory in its own transaction) → indexing → done, each step recorded on
the row. Chunks take remember's path (scrubbing, normalisation, dedup within the document,
history, jobs) through the service. A transient failure retries the job with backoff (the
row goes back to pending with the error); when the attempts are used up, or at once for a
permanent failure (a refused URL, an unsupported content type, a body over the limit), the
document is `failed` with the error. A document deleted meanwhile stops its ingest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from mnemonist.ingest.chunking import chunk_text
from mnemonist.ingest.url_fetcher import FetchError, FetchResult, fetch_url
from mnemonist.model.config import Config
from mnemonist.pipeline.worker import JobWorker, WorkerStats
from mnemonist.store import documents
from mnemonist.store.db import Database
from mnemonist.store.documents import Document
from mnemonist.store.jobs import Job
from mnemonist.store.memories import NewMemory
from mnemonist.text.scrub import scrub_credentials

log = logging.getLogger(__name__)

JOB_TYPE = "document_ingest"
ACTOR = "document-worker"
CHUNK_TYPE = "document_chunk"
CHUNK_IMPORTANCE = 0.3


@dataclass
class PreparedChunk:
    """A chunk ready to write: the memory row, who writes it, what was scrubbed, and the
    id of the document's memory that already holds this content (then nothing is embedded)."""

    new: NewMemory
    actor: str
    scrubbed: list[str]
    existing_id: str | None


class DocumentService(Protocol):
    """What the worker needs of the service: its `documents` part (service/documents.py)."""

    def prepare_document_chunk(self, doc: Document, text: str) -> PreparedChunk: ...

    def write_document_chunk(
        self, doc: Document, index: int, prepared: PreparedChunk, vector: np.ndarray | None
    ) -> Mapping[str, Any] | None: ...


class PermanentFailure(RuntimeError):
    """Retrying cannot help: the document fails now."""


class DocumentDeleted(RuntimeError):
    """The document was deleted while it was being ingested."""


Fetcher = Callable[..., FetchResult]


class DocumentWorker:
    def __init__(self, documents: DocumentService, db: Database,
                 embed: Callable[[str], np.ndarray | None], config: Config, *,
                 fetch: Fetcher = fetch_url) -> None:
        """`embed`: a chunk's vector now, outside any transaction (None: the background
        embedder embeds it later)."""
        self.documents = documents
        self.db = db
        self.embed = embed
        pipeline = config.memory.pipeline_v2
        self.cfg = pipeline.documents
        self.fetch = fetch
        self.worker = JobWorker(
            self.db, JOB_TYPE, self.handle,
            poll_s=self.cfg.worker_interval_ms / 1000.0,
            lease_timeout_ms=pipeline.worker.lease_timeout_ms,
            on_failure=self._after_error,
        )

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def stats(self) -> WorkerStats:
        return self.worker.stats

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        self.worker.stop()

    def wake(self) -> None:
        self.worker.wake()

    def tick(self) -> float:
        """Run at most one job now (tests, `mnemonist` tools)."""
        return self.worker.tick()

    # -- one job ---------------------------------------------------------------------------
    def handle(self, job: Job) -> dict[str, Any]:
        doc = documents.get(self.db.reader(), job.document_id or "")
        if doc is None:
            return {"skipped": "no such document"}
        if doc.status == "deleted":
            return {"skipped": "document deleted"}
        try:
            return self.ingest(doc)
        except DocumentDeleted:
            return {"skipped": "document deleted during ingest"}
        except (PermanentFailure, FetchError) as exc:
            message = getattr(exc, "message", None) or str(exc)
            if isinstance(exc, FetchError) and not exc.permanent:
                raise  # the worker records the attempt; _after_error updates the row with it
            self._set(doc.id, "failed", error=message)
            log.info("document %s failed: %s", doc.id, message)
            return {"status": "failed", "error": message}

    def _after_error(self, job: Job, outcome: str, error: str) -> None:
        """Inside the transaction that records the failed attempt (see JobWorker)."""
        doc_id = job.document_id or ""
        try:
            if outcome == "dead":
                self._set(doc_id, "failed", error=error)
            else:
                self._set(doc_id, "pending", error=f"attempt {job.attempts} of"
                          f" {job.max_attempts} failed, will retry: {error}")
        except DocumentDeleted:
            pass

    def _set(self, doc_id: str, status: str, **fields: Any) -> None:
        """Record a step on the row, unless the document was deleted (then stop)."""
        with self.db.write_tx() as conn:
            now = documents.status_of(conn, doc_id)
            if now is None or now == "deleted":
                raise DocumentDeleted(doc_id)
            documents.update(conn, doc_id, status=status, **fields)

    def ingest(self, doc: Document) -> dict[str, Any]:
        self._set(doc.id, "extracting", error=None)
        content, title = self._extract(doc)
        if not content or not content.strip():
            raise PermanentFailure("the document holds no text")
        doc = replace(doc, title=title)
        chunks = chunk_text(content, self.cfg.chunk_size, self.cfg.chunk_overlap)
        self._set(doc.id, "embedding")
        created = deduplicated = embedded = 0
        for chunk in chunks:
            if not chunk.text.strip():
                continue
            prepared = self.documents.prepare_document_chunk(doc, chunk.text)  # may fail for good
            vector = None
            if prepared.existing_id is None:
                vector = self.embed(prepared.new.content)  # no transaction held
            outcome = self.documents.write_document_chunk(doc, chunk.index, prepared, vector)
            if outcome is None:
                raise DocumentDeleted(doc.id)
            if outcome["created"]:
                created += 1
                embedded += vector is not None
            else:
                deduplicated += 1
        self._set(doc.id, "indexing")
        linked = len(documents.chunk_links(self.db.reader(), doc.id))
        self._set(doc.id, "done", chunk_count=linked, error=None)
        return {"status": "done", "chunks": linked, "created": created,
                "deduplicated": deduplicated, "embedded": embedded}

    def _extract(self, doc: Document) -> tuple[str, str | None]:
        """The document's text and title: fetched (URL) or stored (text); then `chunking`."""
        if doc.source_type != "url":
            self._set(doc.id, "chunking")
            return doc.raw_content or "", doc.title
        result = self.fetch(
            doc.source_url or "",
            timeout_s=self.cfg.fetch_timeout_ms / 1000.0,
            max_bytes=self.cfg.max_content_bytes,
            allow_private=self.cfg.allow_private_urls,
        )
        content = scrub_credentials(result.content).text
        fields: dict[str, Any] = {"raw_content": content, "content_type": result.content_type,
                                  "byte_length": result.byte_length}
        title = doc.title
        if not title and result.title:
            title = scrub_credentials(result.title).text[:500]
            fields["title"] = title
        self._set(doc.id, "chunking", **fields)
        return content, title
