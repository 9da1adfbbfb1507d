"""The shapes of the reads' answers (`Reads`: get, list, history, chain, neighbours, the
legacy keyword search, the embeddings export). Keys are snake_case (model/answers.py)."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict


class MemoryRow(TypedDict):
    """A memory as every face shows it (`Memory.to_public`: the row without its internal
    number)."""

    id: str
    content: str
    normalized_content: str
    content_hash: str
    type: str
    importance: float
    tags: list[str]
    pinned: bool
    who: str | None
    why: str | None
    project: str | None
    source_type: str | None
    source_id: str | None
    idempotency_key: str | None
    version: int
    is_deleted: bool
    deleted_at: str | None
    delete_reason: str | None
    last_accessed: str | None
    access_count: int
    embedding_model: str | None
    occurred_at: str
    created_at: str
    updated_at: str
    updated_by: str | None
    superseded_by: str | None
    superseded_at: str | None
    key: str | None
    supersedes: str | None
    valid_from: str | None
    valid_to: str | None
    agent_id: str | None
    user_id: str | None
    observed_by: list[str]
    observation_count: int
    recall_count: int


class MemoryAnswer(MemoryRow):
    """One memory (`Reads.get`, each item of `Reads.list`); a chunk of a memory file also
    says where it is (1-based, inclusive lines)."""

    path: NotRequired[str]
    start_line: NotRequired[int]
    end_line: NotRequired[int]


class MemoryListAnswer(TypedDict):
    """A page of memories (`Reads.list`)."""

    memories: list[MemoryAnswer]
    total: int
    limit: int
    offset: int
    has_more: bool


class HistoryEventView(TypedDict):
    """One event of a memory's history (created, modified, deleted, ...)."""

    id: str
    memory_id: str
    event: str
    old_content: str | None
    new_content: str | None
    changed_by: str | None
    reason: str | None
    #: what the event recorded besides (its fields vary by event)
    metadata: dict[str, Any]
    created_at: str


class ChainLink(TypedDict):
    """One version in a memory's chain of supersessions, with its validity."""

    id: str
    content: str
    type: str
    key: str | None
    project: str | None
    pinned: bool
    is_deleted: bool
    valid_from: str
    valid_to: str | None
    supersedes: str | None
    superseded_by: str | None
    superseded_at: str | None
    current: bool


class ChainAnswer(TypedDict):
    """The versions before a memory (oldest first) and after it (`Reads.chain`)."""

    memory: ChainLink
    supersedes: list[ChainLink]
    superseded_by: list[ChainLink]
    versions: list[ChainLink]


class HistoryAnswer(TypedDict):
    """A memory's history, oldest event first, and its chain (`Reads.history`); no chain
    once the row is purged."""

    memory_id: str
    events: list[HistoryEventView]
    chain: ChainAnswer | None


class NeighboursAnswer(TypedDict):
    """The memories around one in its source, in order (`Reads.neighbours`)."""

    id: str
    source_id: str | None
    before: list[MemoryRow]
    after: list[MemoryRow]


class KeywordHit(MemoryRow):
    """A memory the legacy keyword search found, with its normalised score."""

    score: float
    source: str


class KeywordSearchAnswer(TypedDict):
    """What the legacy keyword-only search answers (`Reads.keyword_only`)."""

    query: str
    count: int
    results: list[KeywordHit]


class EmbeddingItem(TypedDict):
    """One memory's vector (`vector` only when asked for)."""

    id: str
    content: str
    content_hash: str
    model: str
    dimensions: int
    vector: NotRequired[list[float]]


class EmbeddingsAnswer(TypedDict):
    """A page of the embeddings export (`Reads.export_embeddings`)."""

    embeddings: list[EmbeddingItem]
    total: int
    limit: int
    offset: int
    model: str
