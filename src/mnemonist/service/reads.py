"""Reads: recall, get, list, history, the legacy keyword search and the embeddings export."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from mnemonist.model.answers import RecallAnswer
from mnemonist.model.answers_reads import (
    ChainAnswer,
    EmbeddingItem,
    EmbeddingsAnswer,
    HistoryAnswer,
    HistoryEventView,
    KeywordHit,
    KeywordSearchAnswer,
    MemoryAnswer,
    MemoryListAnswer,
)
from mnemonist.model.memory import format_ts, parse_ts
from mnemonist.model.requests import Caller, ListRequest, RecallFilters, RecallRequest
from mnemonist.providers.embedding.request_gate import holds_gate
from mnemonist.search.filters import visibility_clause, where_clause
from mnemonist.search.fusion import normalize_bm25
from mnemonist.search.hits import Hit
from mnemonist.search.keyword import keyword_search
from mnemonist.service.base import ServiceCore
from mnemonist.service.errors import NotFound
from mnemonist.service.files import Files
from mnemonist.service.graph_feedback import Feedback
from mnemonist.service.lifecycle import chain as lifecycle_chain
from mnemonist.service.sources import SourceOps, brief, neighbours_of
from mnemonist.store import (
    embedding_work,
    embeddings,
    files,
    history,
    memories,
    memory_reads,
    session_turns,
)

#: `expand` gives a session turn this many turns on each side (its session's transcript can
#: be megabytes; `GET /api/sessions/{id}` reads the rest)
EXPAND_TURNS = 3
#: recall embeds the memories of its scope still waiting for their vector (just remembered)
#: before it searches when there are at most this many, within EMBED_PENDING_BUDGET_S;
#: more than that is a bulk import: the background embedder's work, and the answer says so
EMBED_PENDING_MAX = 16
EMBED_PENDING_BUDGET_S = 1.0
#: `pending_embeddings` counts at most this many (a bulk import can leave a million waiting)
PENDING_COUNT_CAP = 1000
#: one recall at a time embeds pending memories; the others wait for it (within the budget)
_embedding_pending = threading.Lock()


def result_of(hit: Hit) -> dict[str, Any]:
    m = hit.memory
    return {
        "id": m.id,
        "content": m.content,
        "score": round(hit.score, 6),
        "relevance": None if hit.relevance is None else round(hit.relevance, 4),
        "source": hit.source,
        "type": m.type,
        "tags": m.tags,
        "pinned": m.pinned,
        "importance": m.importance,
        "who": m.who,
        "project": m.project,
        "source_type": m.source_type,
        "source_id": m.source_id,
        "occurred_at": m.occurred_at,
        "created_at": m.created_at,
        "key": m.key,
        "valid_from": m.valid_from or m.occurred_at,
        "valid_to": m.valid_to,
        "superseded_by": m.superseded_by,
        "supersedes": m.supersedes,
        "agent_id": m.agent_id,
        "user_id": m.user_id,
        "observed_by": m.observed_by,
        "observation_count": m.observation_count,
        "scores": {"keyword": hit.keyword_score, "vector": hit.vector_score},
    }


def attach_file_lines(conn: sqlite3.Connection, items: Sequence[Mapping[str, Any]]) -> None:
    """A chunk of a memory file (in recall, get and list answers) carries `path`,
    `start_line` and `end_line` (1-based, inclusive; its lines as `sed -n START,ENDp PATH`
    prints them). Other memories get no such keys. One query for all of them."""
    ids = [r["id"] for r in items if str(r.get("source_id") or "").startswith("file:")]
    if not ids:
        return
    found = files.lines_of(conn, ids)
    for r in items:
        if r["id"] in found:
            cast(dict[str, Any], r).update(found[r["id"]])


class Reads(SourceOps):
    """Reads: recall, get, list, history, chain, a source's neighbours, the legacy keyword
    search and the embeddings export. A recall syncs changed memory files first (`files`) and
    tells the learned ranker what it returned (`feedback`)."""

    def __init__(self, core: ServiceCore, feedback: Feedback, files: Files) -> None:
        super().__init__(core)
        self.feedback = feedback
        self.files = files

    def recall(self, req: RecallRequest) -> RecallAnswer:
        """Memory files changed since the last sync are synced first (`Files.sync_for_search`),
        then the search runs."""
        self.files.sync_for_search()
        return self._recall(req)

    @holds_gate
    def _recall(self, req: RecallRequest) -> RecallAnswer:
        started = time.perf_counter()
        conn = self.core.db.reader()
        cfg = self.core.config.search
        filters = req.filters()
        pending = self._embed_pending(conn, filters)
        explicit = req.min_relevance is not None
        outcome = self.core.searcher.search(
            conn, req.query, filters, req.limit, req.min_score,
            now=parse_ts(req.now) if req.now else None, time_filter=req.time_filter,
            min_relevance=req.min_relevance if req.min_relevance is not None
            else cfg.min_relevance,
            min_answerable=0.0 if explicit else cfg.min_answerable,
        )
        self.core.access.record([h.memory.seq for h in outcome.hits], recall=True)
        self.feedback.note_recall(req.query, [h.memory.id for h in outcome.hits], filters)
        results = [result_of(h) for h in outcome.hits]
        if req.context:
            for hit, result in zip(outcome.hits, results, strict=True):
                around = neighbours_of(conn, hit.memory, req.context, req)
                result["context"] = {side: [brief(m) for m in items]
                                     for side, items in around.items()}
        if req.expand:
            self._attach_transcripts(results)
            for hit, result in zip(outcome.hits, results, strict=True):
                if hit.memory.source_type == "session":  # the turns around it, not all of it
                    around = neighbours_of(conn, hit.memory, EXPAND_TURNS, req)
                    result["turns_around"] = {side: [brief(m) for m in items]
                                              for side, items in around.items()}
        attach_file_lines(conn, results)
        window = outcome.window
        degraded = list(outcome.degraded)
        if pending:
            degraded.append("embeddings_pending")
        return {
            "query": req.query,
            "method": outcome.method,
            "count": len(results),
            "results": results,
            "time_window": None if window is None else {
                "expression": window.expression, "start": format_ts(window.start),
                "end": format_ts(window.end), "mode": "filter" if req.time_filter else "prefer",
            },
            "answerable": None if outcome.answerable is None else round(outcome.answerable, 4),
            "pending_embeddings": pending,
            "degraded": degraded,
            "took_ms": round((time.perf_counter() - started) * 1000, 2),
        }

    def _pending_seqs(self, conn: sqlite3.Connection, filters: RecallFilters,
                      limit: int) -> list[int]:
        """Memories in the recall's scope without a vector yet (migration 19's partial index:
        only the rows waiting are read), at most `limit`."""
        where, args = where_clause(filters)
        return memory_reads.unembedded_in_scope(conn, where, args, limit)

    def _embed_pending(self, conn: sqlite3.Connection, filters: RecallFilters) -> int | None:
        """How many memories in scope the vector leg cannot find yet, after embedding them
        here when they are few (a recall right after its remember finds the memory by
        meaning, not only by its words). None without an embedding provider (no vector leg)."""
        if self.core.embedder is None:
            return None
        seqs = self._pending_seqs(conn, filters, PENDING_COUNT_CAP)
        if not seqs or len(seqs) > EMBED_PENDING_MAX:
            return len(seqs)
        queries = self.core.query_embedder
        known_down = queries is not None and queries.retry_in() > 0
        if known_down:  # a provider that is down would only make the recall wait
            return len(seqs)
        if _embedding_pending.acquire(timeout=EMBED_PENDING_BUDGET_S):
            try:  # another recall may have embedded them while this one waited
                seqs = self._pending_seqs(conn, filters, EMBED_PENDING_MAX)
                if seqs:
                    self.core.embedder.embed_now(seqs, EMBED_PENDING_BUDGET_S)
            finally:
                _embedding_pending.release()
        return len(self._pending_seqs(conn, filters, PENDING_COUNT_CAP))

    def _attach_transcripts(self, results: list[dict[str, Any]]) -> None:
        keys = sorted({r["source_id"] for r in results
                       if r["source_id"] and r.get("source_type") != "session"})
        if not keys:
            return
        found = session_turns.transcripts_of(self.core.db.reader(), keys)
        for r in results:
            if r["source_id"] in found:
                r["transcript"] = found[r["source_id"]]

    def keyword_only(self, query: str, limit: int = 10,
                     caller: Caller | None = None) -> KeywordSearchAnswer:
        """GET /memory/search: the legacy keyword-only search."""
        conn = self.core.db.reader()
        filters = None if caller is None else RecallFilters(**caller.identity().model_dump())
        raw = dict(keyword_search(conn, query, filters, limit))
        norm = normalize_bm25(raw, self.core.config.search.keyword_norm)
        rows = memories.get_many_by_seq(conn, list(raw))
        results = [
            cast(KeywordHit, {**rows[s].to_public(), "score": round(norm[s], 6),
                              "source": "keyword"})
            for s in sorted(raw, key=lambda s: raw[s])
            if s in rows
        ]
        return {"query": query, "count": len(results), "results": results}

    def get(self, memory_id: str, *, include_deleted: bool = True,
            caller: Caller | None = None, learn: bool = True) -> MemoryAnswer:
        """One memory by id. A read right after a recall returned it is a training pair for
        the learned ranker (`service/predictor.py`) unless `learn` is false (reads that are
        not a reader choosing a result: a page listing a session's memories, a benchmark)."""
        conn = self.core.db.reader()
        m = memories.get(conn, self.core.resolve_id(memory_id, conn, caller))
        if m is None or (m.is_deleted and not include_deleted):
            raise NotFound(f"no memory {memory_id}")
        out = cast(MemoryAnswer, m.to_public())
        attach_file_lines(conn, [out])
        if learn and not m.is_deleted and self.core.config.predictor.adapt:
            self.feedback.note_read(m.id)  # a result of a recall, opened: a training pair
        return out

    def list(self, req: ListRequest) -> MemoryListAnswer:
        conn = self.core.db.reader()
        where, args = where_clause(req, include_deleted=req.include_deleted)
        total, seqs = memory_reads.listing(conn, where, args, req.order, req.limit, req.offset)
        by_seq = memories.get_many_by_seq(conn, seqs)
        items = [cast(MemoryAnswer, by_seq[s].to_public()) for s in seqs if s in by_seq]
        attach_file_lines(conn, items)
        return {"memories": items, "total": total, "limit": req.limit, "offset": req.offset,
                "has_more": req.offset + len(items) < total}

    def history(self, memory_id: str, caller: Caller | None = None) -> HistoryAnswer:
        conn = self.core.db.reader()
        memory_id = self.core.resolve_id(memory_id, conn, caller)
        events = history.for_memory(conn, memory_id)
        if not events and memories.get(conn, memory_id) is None:
            raise NotFound(f"no memory {memory_id}")
        m = memories.get(conn, memory_id)
        return {"memory_id": memory_id,
                "events": [cast(HistoryEventView, e.__dict__) for e in events],
                "chain": lifecycle_chain(conn, m) if m is not None else None}

    def chain(self, memory_id: str, caller: Caller | None = None) -> ChainAnswer:
        """GET /api/memory/{id}/chain: the versions before and after it, with validity."""
        conn = self.core.db.reader()
        m = memories.get(conn, self.core.resolve_id(memory_id, conn, caller))
        if m is None:
            raise NotFound(f"no memory {memory_id}")
        return lifecycle_chain(conn, m)

    def export_embeddings(
        self, limit: int = 100, offset: int = 0, with_vectors: bool = True,
        caller: Caller | None = None,
    ) -> EmbeddingsAnswer:
        conn = self.core.db.reader()
        model = self.core.provider.model_id if self.core.provider else ""
        visible, args = visibility_clause(caller)
        total, rows = embedding_work.visible_page(conn, model, visible, args, limit, offset)
        items = []
        for r in rows:
            item: EmbeddingItem = {"id": r["id"], "content": r["content"],
                                   "content_hash": r["content_hash"], "model": r["model"],
                                   "dimensions": r["dimensions"]}
            if with_vectors:
                item["vector"] = [
                    round(float(x), 7) for x in embeddings.from_blob(r["vector"], r["dimensions"])
                ]
            items.append(item)
        return {"embeddings": items, "total": total, "limit": limit, "offset": offset,
                "model": model}
