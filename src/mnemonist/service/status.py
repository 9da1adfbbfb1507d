"""Health and status: what works, what is degraded, and why (nothing is silent)."""

from __future__ import annotations

import time
from typing import Any, cast

from mnemonist import __version__
from mnemonist.model.answers_admin import HealthAnswer, StatusAnswer
from mnemonist.service.base import ServiceCore
from mnemonist.service.files import Files
from mnemonist.service.part import Part
from mnemonist.service.pipeline_ops import Pipeline
from mnemonist.service.session_turns import Sessions
from mnemonist.store import embeddings, jobs, memories, memory_reads
from mnemonist.store import sparse as sparse_store
from mnemonist.store.db import STORAGE_UNAVAILABLE, StorageUnavailable
from mnemonist.store.loop_health import short

#: what each degraded state means for the user, and what to do about it
DEGRADED_WORDS = {
    "storage_full": "the disk is full: writes are refused until space is freed (reads work)",
    "storage_read_only": "the database is read-only: writes are refused until it is writable"
                         " again (check the file's permissions and the disk)",
    "embedding_provider_disabled": "no embedding model (embedding.provider: none): recall is"
                                   " keyword-only",
    "embedding_provider_unavailable": "the embedding provider does not answer: new memories are"
                                      " keyword-searchable now and embedded when it is back",
    "vector_index_empty": "nothing is embedded yet: recall is keyword-only until it is",
    "dead_jobs": "some background jobs failed for good: see /api/pipeline/status and"
                 " POST /api/repair/requeue-dead",
    "llm_unavailable": "the configured LLM does not answer: pipeline jobs wait (none is lost)",
    "hints_without_llm": "hints are on with the llm generator but no LLM is configured: set"
                         " hints.generator: local or configure an LLM",
    "file_watcher_failed": "the memory-file watcher stopped: files are synced on search, session"
                           " start and the interval only",
    "database": "the database cannot be read",
    "storage_unavailable": "the database does not answer: requests answer 503 until it is"
                           " back; background work waits and resumes on its own",
    "worker_retrying": "a background worker failed and is retrying with a backoff (see"
                       " `retrying`): it resumes on its own once the cause is gone",
    "sparse_expansion_failing": "the SPLADE expander hit an error (see status.sparse.last_error):"
                                " the sparse leg misses the memories it could not expand",
    "sparse_leg_unavailable": "search.sparse_weight or search.session_signal asks for SPLADE but"
                              " sparse.enabled is false: recall runs without the sparse leg",
}


def in_words(codes: list[str]) -> list[str]:
    return [f"{c}: {DEGRADED_WORDS.get(c, c.replace('_', ' '))}" for c in codes]


class Health(Part):
    """/api/health and /api/status: the core's state, and what `pipeline`, `sessions` and
    `files` report of theirs."""

    def __init__(self, core: ServiceCore, pipeline: Pipeline, sessions: Sessions,
                 files: Files) -> None:
        super().__init__(core)
        self.pipeline = pipeline
        self.sessions = sessions
        self.files = files

    def degraded(self) -> list[str]:
        out: list[str] = []
        fault = getattr(self.core.db, "storage_fault", None)
        if fault:
            out.append(fault)  # storage_full / storage_read_only: writes are refused
        if self.core.provider is None:
            out.append("embedding_provider_disabled")
        elif self.core.embedder is not None and not self.core.embedder.stats.provider_ok:
            out.append("embedding_provider_unavailable")
        if self.core.provider is not None and self.core.index is None:
            out.append("vector_index_empty")
        dead = sum(c.get("dead", 0) for c in jobs.counts(self.core.db.reader()).values())
        if dead:
            out.append("dead_jobs")
        pipeline = self.core.config.memory.pipeline_v2
        extraction = pipeline.extraction
        if extraction.provider != "none" and (
                self.pipeline.pipeline_unavailable_reason()
                or self.pipeline.hints_llm_unavailable_reason()):
            out.append("llm_unavailable")  # configured but down; "none" is a choice, not a fault
        if pipeline.hints.enabled and pipeline.hints.generator == "llm" and (
                extraction.provider == "none"):
            out.append("hints_without_llm")  # hints asked for, nothing can write them
        if self.core.sparse is not None and self.core.sparse.stats.last_error:
            out.append("sparse_expansion_failing")
        search = self.core.config.search
        if self.core.sparse is None and (search.sparse_weight > 0
                                         or search.session_signal != "fused"):
            out.append("sparse_leg_unavailable")
        if self.files.watcher_failed():
            out.append("file_watcher_failed")
        return out

    def health(self) -> HealthAnswer:
        database = "ok"
        try:
            memory_reads.probe(self.core.db.reader())
            degraded = self.degraded()
        except StorageUnavailable:
            database, degraded = "unavailable", [STORAGE_UNAVAILABLE]
        except Exception as exc:  # health must answer whatever happened
            database, degraded = f"error: {short(exc)}", ["database"]
        # which loops and for how long; their errors are in `status` (behind the token)
        retrying = {name: {k: v for k, v in streak.items() if k != "last_error"}
                    for name, streak in self.core.db.loops.retrying().items()}
        if retrying:
            degraded.append("worker_retrying")
        return {
            "status": "ok" if not degraded else "degraded",
            "version": __version__,
            "database": database,
            "uptime_s": round(time.time() - self.core.started_at, 1),
            "degraded": degraded,
            "problems": in_words(degraded),
            "retrying": retrying,
        }

    def status(self) -> StatusAnswer:
        """GET /api/status: the core's state, the gates, sessions (with the pipeline's state
        in words) and memory files."""
        # the core's part first; the keys below complete it
        out = cast(StatusAnswer, self._core_status())
        out["gates"] = self.pipeline.gates_status()
        out["sessions"] = self.sessions.sessions_status()
        out["explanation"] = self.sessions.explain(out)
        if out.get("storage") != "unavailable":
            out["files"] = self.files.files_status()
        return out

    def _core_status(self) -> dict[str, Any]:
        try:
            out = self._status()
        except StorageUnavailable:  # what can be said without the database
            degraded = [STORAGE_UNAVAILABLE]
            out = {"version": __version__,
                   "database": str(getattr(self.core.db, "location", self.core.db.path)),
                   "storage": "unavailable", "degraded": degraded,
                   "uptime_s": round(time.time() - self.core.started_at, 1)}
        retrying = self.core.db.loops.retrying()
        if retrying and "worker_retrying" not in out["degraded"]:
            out["degraded"].append("worker_retrying")
        out["problems"] = in_words(out["degraded"])
        out["retrying"] = retrying
        return out

    def _status(self) -> dict[str, Any]:
        conn = self.core.db.reader()
        degraded = self.degraded()
        provider: dict[str, Any] = {"provider": self.core.config.embedding.provider}
        emb_stats: dict[str, Any] = {}
        if self.core.provider is not None:
            provider.update(model=self.core.provider.model_id,
                            dimensions=self.core.provider.dimensions)
            emb_stats.update(embeddings.stats(conn, self.core.provider.model_id))
            live = emb_stats["live"]
            emb_stats["coverage"] = round(emb_stats["embedded"] / live, 4) if live else 1.0
        if self.core.embedder is not None:
            s = self.core.embedder.stats
            provider.update(
                available=s.provider_ok, last_error=s.last_error, processed=s.processed,
                failed=s.failed, skipped_cycles=s.skipped_cycles, last_cycle_at=s.last_cycle_at,
            )
        if self.core.query_embedder is not None:  # recall's query vectors (service/query_embedding)
            provider["queries"] = self.core.query_embedder.status()
        queue = jobs.counts(conn)
        return {
            "version": __version__,
            "database": str(getattr(self.core.db, "location", self.core.db.path)),
            "memories": memories.counts(conn),
            "embeddings": emb_stats,
            "embedding_provider": provider,
            "vector_index": {"size": len(self.core.index) if self.core.index else 0,
                             "dimensions": self.core.index.dimensions if self.core.index else None},
            "jobs": queue,
            "queue_depth": sum(c.get("pending", 0) + c.get("leased", 0) for c in queue.values()),
            "pipeline": self.pipeline.pipeline_brief(),
            "sparse": self._sparse_status(),
            "keyword_mirror": (self.core.searcher.keyword_mirror.status()
                               if self.core.searcher.keyword_mirror is not None
                               else {"mode": self.core.config.search.keyword_mirror,
                                     "state": "off"}),
            "degraded": degraded,
            "problems": in_words(degraded),
            "uptime_s": round(time.time() - self.core.started_at, 1),
        }

    def _sparse_status(self) -> dict[str, Any]:
        """The learned sparse leg (docs/sparse.md): rows per field, index sizes, the worker."""
        if self.core.sparse is None:
            return {"enabled": False}
        s = self.core.sparse.stats
        model = self.core.sparse.encoder.model_id
        return {
            "enabled": True, "model": model,
            "expanded": sparse_store.counts(self.core.db.reader(), model),
            "index": {f: len(i) for f, i in self.core.sparse.indexes.items()},
            "processed": s.processed, "removed": s.removed, "failed": s.failed,
            "last_cycle_at": s.last_cycle_at, "last_error": s.last_error,
        }
