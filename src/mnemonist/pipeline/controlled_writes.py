"""Applying proposals (controlled writes: validated, never blind), and the audit of every outcome.

`prefetch_embeddings` runs before the transaction (network I/O never holds the write lock);
`apply_proposals` runs inside one `write_tx` and passes each proposal through the gates:
`low_fact_confidence`, `empty_fact_content`, duplicate content (checked first, and again on a
UNIQUE collision). ADD inserts a row with who=pipeline-v2, why=extracted-fact, the extraction
model, importance = the fact's confidence, and the source memory's project and source.
UPDATE and DELETE apply only in full mode (`allowUpdateDelete`) and never to a pinned memory:
UPDATE inserts the new version (it `supersedes` the old and keeps its lifecycle key), archives
the old row and marks it superseded, its `valid_to` where the new one's validity begins (the
mechanism of keyed remembers, store.archive.supersede); DELETE is a soft delete with the
reason. Every proposal leaves an audit row on the source memory (`event = 'none'`), besides the
`created` / `superseded` / `deleted` events of the rows it changed. The vector index follows on
commit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from mnemonist.model.memory import Memory, utcnow
from mnemonist.pipeline.decision import Proposal
from mnemonist.providers.embedding.base import EmbeddingError, EmbeddingProvider
from mnemonist.store import archive, embedding_work, embeddings, history, memories, memory_reads
from mnemonist.store.db import Database
from mnemonist.store.memories import NewMemory
from mnemonist.store.row_ids import memory_id
from mnemonist.text.normalize import NormalizedContent, normalize_and_hash
from mnemonist.text.scrub import scrub_credentials

ACTOR = "pipeline-v2"
SHADOW_ACTOR = "pipeline-shadow"
WHY = "extracted-fact"


def prepare_content(text: str) -> NormalizedContent:
    """Scrubbed, normalised and hashed: exactly what would be stored."""
    return normalize_and_hash(scrub_credentials(text).text)


@dataclass
class WriteContext:
    """What one job's writes need besides the proposals."""

    source: Memory
    job_id: str
    mode: str
    extraction_model: str
    fact_count: int
    entity_count: int
    min_confidence: float
    allow_update_delete: bool
    embedding_model: str | None = None
    vectors: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class WriteStats:
    added: int = 0
    updated: int = 0
    deleted: int = 0
    deduped: int = 0
    skipped: int = 0
    blocked: int = 0
    recorded: int = 0
    rejected: int = 0
    review_needed: int = 0
    embedded: int = 0
    created_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def prefetch_embeddings(
    provider: EmbeddingProvider | None, texts: list[str]
) -> tuple[dict[str, np.ndarray], str | None]:
    """Vectors by content hash, fetched outside any transaction. A failure is not fatal: the
    rows are written without vectors and the background embedder catches up."""
    if provider is None or not texts:
        return {}, None
    by_hash: dict[str, str] = {}
    for text in texts:
        norm = prepare_content(text)
        if norm.storage:
            by_hash.setdefault(norm.content_hash, norm.storage)
    if not by_hash:
        return {}, None
    hashes = list(by_hash)
    try:
        matrix = provider.embed([by_hash[h] for h in hashes])
    except EmbeddingError as exc:
        return {}, f"embedding prefetch failed, the background embedder will retry: {exc}"
    return dict(zip(hashes, matrix, strict=True)), None


def audit(
    conn: sqlite3.Connection, ctx: WriteContext, p: Proposal, outcome: str, **extra: Any
) -> None:
    """The audit row of one proposal, on the source memory."""
    shadow = ctx.mode in ("shadow", "frozen")
    metadata = {
        "shadow": shadow,
        "mode": ctx.mode,
        "jobId": ctx.job_id,
        "outcome": outcome,
        "proposedAction": p.action,
        "targetMemoryId": p.target_id,
        "targetContent": p.target_content,
        "confidence": p.confidence,
        "fact": {"content": p.fact.content, "type": p.fact.type,
                 "confidence": p.fact.confidence},
        "candidateIds": p.candidate_ids,
        "contradictionRisk": p.contradiction_risk,
        "reviewNeeded": p.review_needed,
        "semanticContradiction": p.semantic,
        "blockedReason": None,
        "skippedReason": None,
        "rejectedReason": p.rejected,
        "sourceMemoryId": ctx.source.id,
        "extractionModel": ctx.extraction_model,
        "factCount": ctx.fact_count,
        "entityCount": ctx.entity_count,
        **extra,
    }
    history.append(conn, ctx.source.id, "none", changed_by=SHADOW_ACTOR if shadow else ACTOR,
                   reason=p.reason, metadata=metadata)


def would_block(p: Proposal, allow_update_delete: bool) -> str | None:
    if p.destructive and not allow_update_delete:
        return "destructive_mutations_disabled"
    return None


def record_shadow(conn: sqlite3.Connection, ctx: WriteContext, proposals: list[Proposal]) -> int:
    """Shadow mode and mutationsFrozen: every proposal is audited, nothing else is written."""
    for p in proposals:
        audit(conn, ctx, p, "rejected" if p.rejected else "proposed",
              blockedReason=("mutations_frozen" if ctx.mode == "frozen"
                             else would_block(p, ctx.allow_update_delete)))
    return len(proposals)


class Applier:
    """One transaction's worth of proposals; index changes are queued for the commit."""

    def __init__(self, conn: sqlite3.Connection, db: Database, ctx: WriteContext) -> None:
        self.conn = conn
        self.db = db
        self.ctx = ctx
        self.stats = WriteStats()
        self.index_adds: list[tuple[int, np.ndarray | None, str | None]] = []
        self.index_removes: list[int] = []

    def apply(self, proposals: list[Proposal]) -> WriteStats:
        handlers: dict[str, Callable[[Proposal], None]] = {
            "add": self._add, "update": self._update, "delete": self._delete,
        }
        for p in proposals:
            if p.review_needed:
                self.stats.review_needed += 1
            if p.rejected:
                self.stats.rejected += 1
                audit(self.conn, self.ctx, p, "rejected")
            elif p.action == "none":
                self.stats.recorded += 1
                audit(self.conn, self.ctx, p, "recorded")
            elif blocked := would_block(p, self.ctx.allow_update_delete):
                self._blocked(p, blocked)
            else:
                handlers[p.action](p)
        return self.stats

    # -- gates ---------------------------------------------------------------------------
    def _gate(self, p: Proposal) -> NormalizedContent | None:
        """None (audited as skipped) when the fact may not be written."""
        if p.fact.confidence < self.ctx.min_confidence:
            self.stats.skipped += 1
            audit(self.conn, self.ctx, p, "skipped", skippedReason="low_fact_confidence")
            return None
        norm = prepare_content(p.fact.content)
        if not norm.normalized:
            self.stats.skipped += 1
            audit(self.conn, self.ctx, p, "skipped", skippedReason="empty_fact_content")
            return None
        return norm

    def _duplicate(self, norm: NormalizedContent) -> str | None:
        src = self.ctx.source
        return memory_reads.live_copy_for_owner(self.conn, norm.content_hash, src.project,
                                                src.agent_id, src.user_id)

    def _deduped(self, p: Proposal, existing: str | None) -> None:
        self.stats.deduped += 1
        audit(self.conn, self.ctx, p, "deduped", dedupedMemoryId=existing)

    def _blocked(self, p: Proposal, reason: str) -> None:
        self.stats.blocked += 1
        audit(self.conn, self.ctx, p, "blocked", blockedReason=reason)

    # -- writes --------------------------------------------------------------------------
    def _insert(
        self, p: Proposal, norm: NormalizedContent, key: str | None = None
    ) -> tuple[str | None, str | None]:
        """(new id, None) or (None, id of the duplicate that won)."""
        dup = self._duplicate(norm)
        if dup is not None:
            return None, dup
        src, now = self.ctx.source, utcnow()
        new = NewMemory(
            id=memory_id(), content=norm.storage, normalized_content=norm.normalized,
            content_hash=norm.content_hash, type=p.fact.type, importance=p.fact.confidence,
            tags=[], pinned=False, who=ACTOR, why=WHY, project=src.project,
            source_type=src.source_type, source_id=src.source_id, idempotency_key=None,
            occurred_at=src.occurred_at, created_at=now, confidence=p.fact.confidence,
            extraction_model=self.ctx.extraction_model, key=key,
            agent_id=src.agent_id, user_id=src.user_id,  # a private memory's facts stay private
        )
        try:
            seq = memories.insert(self.conn, new)
        except sqlite3.IntegrityError:  # the UNIQUE race: someone wrote it first
            return None, memory_reads.live_copy_in_project(self.conn, norm.content_hash,
                                                           src.project)
        vec = self.ctx.vectors.get(norm.content_hash)
        if vec is not None and self.ctx.embedding_model:
            embeddings.upsert(self.conn, norm.content_hash, self.ctx.embedding_model, vec)
            embedding_work.mark_embedded(self.conn, seq, self.ctx.embedding_model)
            self.stats.embedded += 1
        else:
            vec = None
        self.index_adds.append((seq, vec, src.project))
        self.stats.created_ids.append(new.id)
        return new.id, None

    def _created_event(self, p: Proposal, new_id: str, content: str, **extra: Any) -> None:
        history.append(
            self.conn, new_id, "created", new_content=content, changed_by=ACTOR,
            reason=p.reason,
            metadata={"proposedAction": p.action, "sourceMemoryId": self.ctx.source.id,
                      "decisionConfidence": p.confidence, "factConfidence": p.fact.confidence,
                      "extractionModel": self.ctx.extraction_model, "jobId": self.ctx.job_id,
                      **extra},
        )

    def _add(self, p: Proposal) -> None:
        norm = self._gate(p)
        if norm is None:
            return
        new_id, dup = self._insert(p, norm)
        if new_id is None:
            return self._deduped(p, dup)
        self._created_event(p, new_id, norm.storage)
        self.stats.added += 1
        audit(self.conn, self.ctx, p, "created", createdMemoryId=new_id)

    def _target(self, p: Proposal) -> Memory | str:
        """The live target, or why it cannot be touched (read inside the transaction)."""
        target = memories.get(self.conn, p.target_id or "")
        if target is None or target.is_deleted or target.superseded_at:
            return "target_unavailable"
        if target.pinned:
            return "target_pinned"
        if target.source_type == "file":
            return "target_file_managed"
        return target

    def _update(self, p: Proposal) -> None:
        target = self._target(p)
        if isinstance(target, str):
            return self._blocked(p, target)
        norm = self._gate(p)
        if norm is None:
            return
        new_id, dup = self._insert(p, norm, target.key)
        if new_id is None:
            return self._deduped(p, dup)
        now = utcnow()
        archive.archive_row(self.conn, target.id, reason=p.reason, by=ACTOR,
                            superseded_by=new_id, at=now)
        valid_to = archive.supersede(self.conn, target, new_id, self.ctx.source.occurred_at,
                                     at=now, by=ACTOR)
        self._created_event(p, new_id, norm.storage, supersedes=target.id)
        history.append(
            self.conn, target.id, "superseded", old_content=target.content,
            new_content=norm.storage, changed_by=ACTOR, reason=p.reason, at=now,
            metadata={"supersededBy": new_id, "sourceMemoryId": self.ctx.source.id,
                      "contradictionRisk": p.contradiction_risk,
                      "reviewNeeded": p.review_needed, "version": target.version + 1,
                      "jobId": self.ctx.job_id, "archived": True, "validTo": valid_to},
        )
        self.index_removes.append(target.seq)
        self.stats.updated += 1
        audit(self.conn, self.ctx, p, "superseded", createdMemoryId=new_id,
              supersededMemoryId=target.id)

    def _delete(self, p: Proposal) -> None:
        target = self._target(p)
        if isinstance(target, str):
            return self._blocked(p, target)
        if p.fact.confidence < self.ctx.min_confidence:
            self.stats.skipped += 1
            return audit(self.conn, self.ctx, p, "skipped", skippedReason="low_fact_confidence")
        now = utcnow()
        reason = f"{ACTOR}: {p.reason}"[:2000]
        memories.soft_delete(self.conn, target.id, reason=reason, at=now, by=ACTOR)
        history.append(
            self.conn, target.id, "deleted", old_content=target.content, changed_by=ACTOR,
            reason=reason, at=now,
            metadata={"sourceMemoryId": self.ctx.source.id, "fact": p.fact.content,
                      "contradictionRisk": p.contradiction_risk,
                      "reviewNeeded": p.review_needed, "version": target.version + 1,
                      "jobId": self.ctx.job_id},
        )
        self.index_removes.append(target.seq)
        self.stats.deleted += 1
        audit(self.conn, self.ctx, p, "deleted", deletedMemoryId=target.id)
