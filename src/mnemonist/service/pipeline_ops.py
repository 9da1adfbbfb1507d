"""Pipeline v2 through the service: its status, and undoing a supersession.

The daemon attaches the running `ExtractionRuntime` with `attach_pipeline()` and the hints
runtime with `attach_hints()`; without them (a service built alone) the status still answers
from the configuration and the queue.
"""

from __future__ import annotations

from typing import Any, cast

from mnemonist.model.answers import RestoreAnswer, with_legacy_keys
from mnemonist.model.answers_admin import (
    ArchivedVersions,
    HintsStatus,
    PipelineBrief,
    PipelineFlags,
    PipelineStatus,
)
from mnemonist.model.memory import utcnow
from mnemonist.model.requests import Caller, RecoverRequest
from mnemonist.pipeline.extract_worker import ExtractionRuntime, pipeline_mode
from mnemonist.pipeline.hints_worker import HintsRuntime, not_running_reason
from mnemonist.service.errors import Conflict, NotFound, Unavailable
from mnemonist.service.gates import GateOps
from mnemonist.store import (
    archive,
    consolidation,
    embeddings,
    graph,
    hints,
    history,
    jobs,
    memories,
)

LAST_ERRORS = 10


class Pipeline(GateOps):
    """The background pipeline seen from the service: its runtimes (attached by the daemon),
    its status, undoing a supersession, and the gates (service/gates.py)."""

    pipeline_runtime: ExtractionRuntime | None = None

    hints_runtime: HintsRuntime | None = None

    summary_runtime: Any = None  # the session summary worker, when the daemon runs one

    def attach_summaries(self, runtime: Any) -> None:
        self.summary_runtime = runtime

    def attach_pipeline(self, runtime: ExtractionRuntime | None) -> None:
        self.pipeline_runtime = runtime

    def attach_hints(self, runtime: HintsRuntime | None) -> None:
        self.hints_runtime = runtime
        self.core.set_hints_waker(runtime.wake if runtime is not None else None)

    def wait_hints(self, timeout: float) -> bool:
        """Wait for the hints worker to finish its queue (when it runs and can); False at the
        timeout."""
        runtime = self.hints_runtime
        if runtime is not None and self.core.config.memory.pipeline_v2.hints.enabled:
            return runtime.wait_idle(max(0.0, timeout))
        return True

    def hints_status(self, *, brief: bool = False) -> HintsStatus:
        """Hints: configuration, counts (memories with hints, jobs by state) and the worker."""
        cfg = self.core.config.memory.pipeline_v2.hints
        out: HintsStatus = {"enabled": cfg.enabled, "generator": cfg.generator}
        if not cfg.enabled and brief:
            return out
        out.update(cast(HintsStatus, hints.counts(self.core.db.reader())))
        runtime = self.hints_runtime
        if brief:
            running = runtime is not None and runtime.worker.stats.running
            out["worker"] = "running" if running else "not running"
            out["waiting_reason"] = (
                runtime.worker.stats.waiting_reason if runtime is not None and running
                else not_running_reason(self.core.config) or "worker not started")
        elif runtime is None:
            out["worker"] = {"running": False, "waiting_reason": not_running_reason(
                self.core.config) or "no hints runtime attached"}
        else:
            out.update(cast(HintsStatus, {k: v for k, v in runtime.status().items()
                                          if k not in out}))
        return out

    def hints_llm_unavailable_reason(self) -> str | None:
        """Why the hints worker cannot reach its LLM now (None when it can, or needs none)."""
        cfg = self.core.config.memory.pipeline_v2
        runtime = self.hints_runtime
        if (runtime is None or runtime.llm is None or not cfg.hints.enabled
                or cfg.hints.generator != "llm" or cfg.extraction.provider == "none"):
            return None
        return runtime.llm.unavailable_reason()

    def pipeline_flags(self) -> PipelineFlags:
        cfg = self.core.config.memory.pipeline_v2
        return {
            "enabled": cfg.enabled,
            "shadowMode": cfg.shadow_mode,
            "mutationsFrozen": cfg.mutations_frozen,
            "allowUpdateDelete": cfg.allow_update_delete,
            "autonomousFrozen": cfg.autonomous_frozen,
            "semanticContradictionEnabled": cfg.semantic_contradiction_enabled,
            "graphEnabled": cfg.graph.enabled,
        }

    def pipeline_unavailable_reason(self) -> str | None:
        """Why extraction cannot run now (None when it can, or when it is off)."""
        runtime = self.pipeline_runtime
        if runtime is None or runtime.mode == "disabled":
            return None
        return runtime.llm.unavailable_reason()

    def pipeline_brief(self) -> PipelineBrief:
        """The `pipeline` part of /api/status."""
        cfg = self.core.config.memory.pipeline_v2
        runtime = self.pipeline_runtime
        out: PipelineBrief = {"mode": pipeline_mode(cfg), **self.pipeline_flags(),
                              "provider": cfg.extraction.provider,
                              "hints": self.hints_status(brief=True),
                              "extraction_worker": "not running (jobs wait in the queue)"}
        if runtime is None:
            return out
        stats = runtime.worker.stats
        reason = self.pipeline_unavailable_reason()
        out["model"] = runtime.llm.model
        out["extraction_worker"] = "running" if stats.running else "stopped"
        out["llm_available"] = reason is None
        out["waiting_reason"] = stats.waiting_reason or reason
        out["processed"] = stats.processed
        out["failed"] = stats.failed
        out["deferred"] = stats.deferred
        return out

    def pipeline_status(self) -> PipelineStatus:
        """GET /api/pipeline/status: mode, flags, workers, queue, provider, counters, errors."""
        conn = self.core.db.reader()
        cfg = self.core.config.memory.pipeline_v2
        by_type = jobs.counts(conn)
        by_state: dict[str, int] = {}
        for states in by_type.values():
            for state, n in states.items():
                by_state[state] = by_state.get(state, 0) + n
        runtime = self.pipeline_runtime
        detail: dict[str, Any] = runtime.status() if runtime is not None else {
            "worker": {"running": False, "waiting_reason": "no extraction runtime attached"},
            "provider": {"name": cfg.extraction.provider, "model": cfg.extraction.model,
                         "available": False, "unavailable_reason": "not started"},
        }
        errors = jobs.recent_errors(conn, LAST_ERRORS)
        provider = detail["provider"]
        hint_state = self.hints_status()
        workers: dict[str, dict[str, Any]] = {"extract": detail["worker"]}
        hints_worker = hint_state.get("worker")
        if isinstance(hints_worker, dict):
            workers[hints.JOB_TYPE] = hints_worker
        return {
            "mode": pipeline_mode(cfg),
            "flags": self.pipeline_flags(),
            "waiting_reason": detail["worker"].get("waiting_reason"),
            "workers": workers,
            "queue": {"by_state": by_state, "by_type": by_type},
            "provider": provider,
            "counters": {k: provider.get(k, 0) for k in (
                "calls", "failures", "timeouts", "unavailable", "budget_rejections",
                "prompt_tokens", "completion_tokens")},
            "last_errors": {"llm": provider.get("last_error"), "jobs": errors},
            "graph": graph.counts(conn),
            "superseded": archive.superseded_count(conn),
            "hints": {k: v for k, v in hint_state.items() if k != "worker"},
            "config": {"minConfidence": cfg.extraction.min_confidence,
                       "timeoutMs": cfg.extraction.timeout, "pollMs": cfg.worker.poll_ms,
                       "maxRetries": cfg.worker.max_retries,
                       "leaseTimeoutMs": cfg.worker.lease_timeout_ms,
                       "maxConcurrency": cfg.extraction.max_concurrency,
                       "hourlyBudget": cfg.extraction.hourly_budget},
        }

    # -- supersession ----------------------------------------------------------------------
    def archived_versions(self, memory_id: str,
                          caller: Caller | None = None) -> ArchivedVersions:
        conn = self.core.db.reader()
        memory_id = self.core.resolve_id(memory_id, conn, caller)
        if memories.get(conn, memory_id) is None:
            raise NotFound(f"no memory {memory_id}")
        return {"memory_id": memory_id, "versions": archive.archived_versions(conn, memory_id)}

    def restore_superseded(self, memory_id: str, req: RecoverRequest) -> RestoreAnswer:
        """Make a superseded memory current again (the newer version stays as it is)."""
        if self.core.config.memory.pipeline_v2.mutations_frozen:
            raise Unavailable("mutations are frozen (memory.pipelineV2.mutationsFrozen)",
                              code="mutations_frozen")
        memory_id = self.core.resolve_id(memory_id, caller=req)
        with self.core.db.write_tx() as conn:
            m = memories.get(conn, memory_id)
            if m is None:
                raise NotFound(f"no memory {memory_id}")
            if m.is_deleted:
                raise Conflict("the memory is deleted: recover it instead", code="deleted")
            if not m.superseded_at:
                raise Conflict("the memory is not superseded", code="not_superseded")
            if req.if_version is not None and req.if_version != m.version:
                raise Conflict(f"version is {m.version}, not {req.if_version}",
                               code="version_conflict",
                               **with_legacy_keys({"current_version": m.version}))
            dup = memories.find_live_duplicate(conn, m.content_hash, m.project, m.source_id, m.id,
                                               agent_id=m.agent_id, user_id=m.user_id)
            if dup is not None:
                raise Conflict(f"memory {dup} now holds the same content",
                               code="duplicate_content",
                               **with_legacy_keys({"duplicate_memory_id": dup}))
            now = utcnow()
            by = req.changed_by or "api"
            archive.clear_superseded(conn, m.id, at=now, by=by)
            # a pair the consolidation engine settled is never settled again once undone
            consolidation.dismiss_settled(conn, m.id, now)
            history.append(conn, m.id, "recovered", new_content=m.content, changed_by=by,
                           reason=req.reason, at=now,
                           metadata={"restored": "superseded", "supersededBy": m.superseded_by,
                                     "version": m.version + 1})
            vec = embeddings.get(conn, m.content_hash, self.core.provider.model_id) if (
                self.core.provider) else None

            def reindex() -> None:
                if vec is not None:
                    self.core.get_index(int(vec.shape[0])).add(m.seq, vec, m.project)
                elif self.core.embedder is not None:
                    self.core.embedder.notify(m.seq)

            self.core.db.on_commit(reindex)
        return with_legacy_keys(RestoreAnswer(id=memory_id, status="restored",
                                              superseded_by=m.superseded_by,
                                              current_version=m.version,
                                              new_version=m.version + 1))
