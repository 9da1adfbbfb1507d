"""The shapes of the answers about workspace memory files (`Files`) and documents
(`Documents`). Keys are snake_case (model/answers.py)."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict

from mnemonist.model.answers_reads import MemoryRow


class FileRootView(TypedDict):
    """A project root whose memory files are indexed, and where it came from (`config`:
    files.roots; `session`: a hook's working folder)."""

    path: str
    project: str
    origin: str


class FileSyncAnswer(TypedDict):
    """What one sync of memory files did (`Files.sync_files`); `rows_written` 0 means it
    wrote nothing at all."""

    reason: str
    force: bool
    roots: int
    files_scanned: int
    files_changed: int
    files_unchanged: int
    files_removed: int
    files_skipped: int
    chunks_written: int
    chunks_kept: int
    chunks_moved: int
    chunks_deleted: int
    rows_written: int
    errors: list[str]
    took_ms: float
    at: str


class FileView(TypedDict):
    """An indexed memory file (`store.files.FileRow`)."""

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


class FilesAnswer(TypedDict):
    """The indexed memory files and the roots (`Files.list_files`)."""

    files: list[FileView]
    total: int
    chunks: int
    skipped: int
    roots: list[FileRootView]


class FilesStatus(TypedDict):
    """The `files` part of /api/status (`Files.files_status`)."""

    enabled: bool
    files: int
    chunks: int
    skipped: int
    roots: list[FileRootView]
    last_sync: FileSyncAnswer | None
    syncing: bool
    dirty: bool
    #: the file watcher's state (running, reason, error, folders, ...)
    watcher: dict[str, Any]


class DocumentAccepted(TypedDict):
    """A document accepted for background ingest (`Documents.add_document`)."""

    id: str
    status: str
    source_type: str
    source_url: str | None
    title: str | None
    byte_length: int | None


class DocumentView(TypedDict):
    """A document (`store.documents.Document.to_public`); `content` only when asked for."""

    id: str
    source_type: str
    source_url: str | None
    title: str | None
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
    deleted_at: str | None
    delete_reason: str | None
    content_length: int | None
    content: NotRequired[str | None]


class DocumentJob(TypedDict):
    """A document's last ingest job."""

    id: str
    status: str
    attempts: int
    max_attempts: int
    error: str | None
    run_after: str | None


class DocumentAnswer(DocumentView):
    """One document and its last ingest job (`Documents.get_document`)."""

    job: DocumentJob | None


class DocumentListAnswer(TypedDict):
    """A page of documents (`Documents.list_documents`)."""

    documents: list[DocumentView]
    total: int
    limit: int
    offset: int
    has_more: bool


class DocumentChunk(MemoryRow):
    """A chunk of a document: its index and its memory."""

    index: int


class PurgedChunk(TypedDict):
    """A chunk of a document whose memory was purged: its index and id only."""

    index: int
    id: str
    purged: bool


class DocumentChunksAnswer(TypedDict):
    """A document's chunks in order (`Documents.document_chunks`)."""

    document_id: str
    status: str
    count: int
    chunks: list[DocumentChunk | PurgedChunk]


class DocumentDeleted(TypedDict):
    """What deleting a document answers (`Documents.delete_document`): its chunks are
    soft-deleted, pinned ones kept unless forced."""

    id: str
    status: str
    chunks_deleted: int
    kept_pinned: list[str]
