"""The extraction worker: one `extract` job = extraction → decisions → contradiction checks →
writes (or, in shadow mode, audit rows only) → graph persistence.

All LLM and embedding calls happen before the write transaction. The facts, their audit rows
and the job's completion commit together in one `write_tx`, so a crash leaves either all of a
job's facts or none (the reaper returns the lease and the job runs again); a job found already
completed inside that transaction writes nothing twice. Graph persistence follows in its own
transaction. An unavailable LLM raises `ProviderUnavailable`: the job waits, no attempt burns.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from typing import Any, Protocol

from mnemonist.graph.writer import persist_entities
from mnemonist.model.config import Config, PipelineV2Config
from mnemonist.model.memory import Memory
from mnemonist.pipeline.contradiction import (
    SEMANTIC_MIN_OVERLAP,
    detect_syntactic,
    overlap,
    semantic_check,
)
from mnemonist.pipeline.controlled_writes import (
    Applier,
    WriteContext,
    prefetch_embeddings,
    record_shadow,
)
from mnemonist.pipeline.decision import Proposal, decide, find_candidates
from mnemonist.pipeline.embedder import BackgroundEmbedder
from mnemonist.pipeline.extraction import ExtractionResult, extract
from mnemonist.pipeline.worker import JobWorker, ProviderUnavailable
from mnemonist.providers.embedding.base import EmbeddingProvider
from mnemonist.providers.llm import GuardedLlm, LlmUnavailable, create_llm
from mnemonist.search.hybrid import HybridSearch
from mnemonist.search.vector_index import VectorIndex
from mnemonist.store import jobs, memories, memory_reads
from mnemonist.store.db import Database
from mnemonist.store.jobs import Job

log = logging.getLogger(__name__)

JOB_TYPE = "extract"


class PipelineHost(Protocol):
    """What the pipeline needs from the service: its shared state (`ServiceCore`)."""

    db: Database
    config: Config
    provider: EmbeddingProvider | None
    index: VectorIndex | None
    embedder: BackgroundEmbedder | None
    searcher: HybridSearch

    def get_index(self, dimensions: int) -> VectorIndex: ...


def pipeline_mode(cfg: PipelineV2Config) -> str:
    """disabled | frozen | shadow | full | controlled, from the five flags."""
    if not cfg.enabled:
        return "disabled"
    if cfg.mutations_frozen:
        return "frozen"
    if cfg.shadow_mode:
        return "shadow"
    return "full" if cfg.allow_update_delete else "controlled"


class ExtractionPipeline:
    def __init__(self, host: PipelineHost, llm: GuardedLlm) -> None:
        self.host = host
        self.llm = llm

    @property
    def cfg(self) -> PipelineV2Config:
        return self.host.config.memory.pipeline_v2

    def handle(self, job: Job) -> dict[str, Any]:
        db, cfg = self.host.db, self.cfg
        source = memories.get(db.reader(), job.memory_id or "")
        if source is None or source.is_deleted or source.superseded_at:
            why = "not found" if source is None else "deleted or superseded"
            return {"skipped": f"source memory {why}", "sourceMemoryId": job.memory_id}
        timeout_s = cfg.extraction.timeout / 1000.0
        try:
            extraction = extract(self.llm, source.content, timeout_s)
            warnings = list(extraction.warnings)
            proposals = self._decide(source, extraction, timeout_s, warnings)
            self._contradictions(proposals, warnings)
        except LlmUnavailable as exc:
            raise ProviderUnavailable(str(exc)) from exc
        mode = pipeline_mode(cfg)
        ctx = WriteContext(
            source=source, job_id=job.id, mode=mode, extraction_model=self.llm.model_id,
            fact_count=len(extraction.facts), entity_count=len(extraction.entities),
            min_confidence=cfg.extraction.min_confidence,
            allow_update_delete=cfg.allow_update_delete,
        )
        result: dict[str, Any] = {
            "mode": mode, "sourceMemoryId": source.id, "extractionModel": ctx.extraction_model,
            "facts": len(extraction.facts), "entities": len(extraction.entities),
            "truncated": extraction.truncated,
            "proposals": [_brief(p) for p in proposals], "warnings": warnings,
        }
        if mode in ("shadow", "frozen"):
            with db.write_tx() as conn:
                if (done := _completed_result(conn, job.id)) is not None:
                    return done
                if _source_gone(conn, source.id):
                    return {"skipped": "source memory deleted meanwhile",
                            "sourceMemoryId": source.id}
                result["recorded"] = record_shadow(conn, ctx, proposals)
                jobs.complete(conn, job.id, result)
            return result
        self._prefetch(ctx, proposals, warnings)
        with db.write_tx() as conn:
            if (done := _completed_result(conn, job.id)) is not None:
                return done
            if _source_gone(conn, source.id):  # deleted or purged while the LLM ran
                return {"skipped": "source memory deleted meanwhile", "sourceMemoryId": source.id}
            applier = Applier(conn, db, ctx)
            result["writes"] = applier.apply(proposals).to_dict()
            jobs.complete(conn, job.id, result)
            db.on_commit(lambda: self._reindex(applier))
        if cfg.graph.enabled and extraction.entities:
            result["graph"], warning = persist_entities(db, source.id, extraction.entities)
            if warning:
                warnings.append(warning)
        return result

    # -- stages ----------------------------------------------------------------------------
    def _decide(
        self, source: Memory, extraction: ExtractionResult, timeout_s: float,
        warnings: list[str],
    ) -> list[Proposal]:
        conn = self.host.db.reader()
        out: list[Proposal] = []
        for fact in extraction.facts:
            candidates = find_candidates(self.host.searcher, conn, fact.content,
                                         project=source.project, exclude_id=source.id,
                                         agent_id=source.agent_id, user_id=source.user_id)
            out.append(decide(self.llm, fact, candidates, timeout_s, warnings))
        return out

    def _contradictions(self, proposals: list[Proposal], warnings: list[str]) -> None:
        cfg = self.cfg
        for p in proposals:
            if not p.destructive or not p.target_content:
                continue
            detected = detect_syntactic(p.fact.content, p.target_content)
            if (not detected and cfg.semantic_contradiction_enabled and p.action == "update"
                    and overlap(p.fact.content, p.target_content) >= SEMANTIC_MIN_OVERLAP):
                verdict = semantic_check(self.llm, p.fact.content, p.target_content,
                                         cfg.semantic_contradiction_timeout_ms / 1000.0)
                p.semantic = asdict(verdict)
                if verdict.warning:
                    warnings.append(verdict.warning)
                detected = verdict.detected
            p.contradiction_risk = p.review_needed = detected

    def _prefetch(self, ctx: WriteContext, proposals: list[Proposal], warnings: list[str]) -> None:
        def writes_row(p: Proposal) -> bool:
            if p.rejected or p.fact.confidence < ctx.min_confidence:
                return False
            return p.action == "add" or (p.action == "update" and ctx.allow_update_delete)

        writable = [p.fact.content for p in proposals if writes_row(p)]
        provider = self.host.provider
        ctx.vectors, warning = prefetch_embeddings(provider, writable)
        ctx.embedding_model = provider.model_id if provider is not None else None
        if warning:
            warnings.append(warning)

    def _reindex(self, applier: Applier) -> None:
        host = self.host
        context_index = getattr(host, "context_index", None)  # neighbour vectors, if kept
        for seq in applier.index_removes:
            for index in (host.index, context_index):
                if index is not None:
                    index.remove(seq)
        for seq, vec, project in applier.index_adds:
            if vec is not None:
                host.get_index(int(vec.shape[0])).add(seq, vec, project)
            elif host.embedder is not None:
                host.embedder.notify(seq)


def _brief(p: Proposal) -> dict[str, Any]:
    return {"action": p.action, "targetId": p.target_id, "confidence": round(p.confidence, 4),
            "fact": p.fact.content[:200], "rejected": p.rejected,
            "reviewNeeded": p.review_needed}


def _source_gone(conn, memory_id: str) -> bool:
    return memory_reads.is_gone(conn, memory_id)


def _completed_result(conn, job_id: str) -> dict[str, Any] | None:
    """The stored result when this job already committed its writes (it ran twice)."""
    row = jobs.status_and_result(conn, job_id)
    if row is None or row["status"] != "completed":
        return None
    return {**(json.loads(row["result"]) if row["result"] else {}), "alreadyCompleted": True}


class ExtractionRuntime:
    """The LLM, the pipeline and its worker, as the daemon starts and stops them."""

    def __init__(self, host: PipelineHost, llm: GuardedLlm | None = None) -> None:
        cfg = host.config.memory.pipeline_v2
        self.host = host
        self.llm = llm or create_llm(cfg.extraction)
        self.pipeline = ExtractionPipeline(host, self.llm)
        self.worker = JobWorker(
            host.db, JOB_TYPE, self.pipeline.handle, poll_s=cfg.worker.poll_ms / 1000.0,
            lease_timeout_ms=cfg.worker.lease_timeout_ms, available=self.llm.unavailable_reason,
        )

    @property
    def mode(self) -> str:
        return pipeline_mode(self.host.config.memory.pipeline_v2)

    def start(self) -> None:
        if self.mode != "disabled":
            self.worker.start()

    def stop(self) -> None:
        self.worker.stop()
        self.llm.close()

    def status(self) -> dict[str, Any]:
        cfg = self.host.config.memory.pipeline_v2
        reason = self.llm.unavailable_reason()
        worker = asdict(self.worker.stats)
        worker.update(poll_ms=cfg.worker.poll_ms, lease_timeout_ms=cfg.worker.lease_timeout_ms,
                      max_attempts=cfg.worker.max_retries)
        if not worker["running"]:
            worker["waiting_reason"] = worker["waiting_reason"] or (
                "pipeline disabled" if self.mode == "disabled" else "worker not started")
        elif reason and not worker["waiting_reason"]:
            worker["waiting_reason"] = reason
        provider = self.llm.status()
        provider.update(available=reason is None, unavailable_reason=reason)
        return {"worker": worker, "provider": provider}
