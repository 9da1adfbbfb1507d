"""The consolidation engine through the service: run it now, and where it stands.

The daemon runs it in the background (`pipeline.consolidation_worker`); `POST
/api/consolidation/run` and `mnemonist consolidate` run it on demand. What it settled is
undone one supersession at a time with `POST /api/memory/{id}/restore`; what it could not
settle waits in the review queue as a `contradiction` (`GET /api/duplicates?kind=…`).

With `memory.consolidation.llm` on and the extraction LLM configured, applying its writes and
available, each run asks it about the pairs the rules leave open (`pipeline.consolidation_llm`,
sharing the extraction's budget); otherwise the run says why not (`llm`) and uses the rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from mnemonist.model.answers_curation import ConsolidationRun, ConsolidationStatus
from mnemonist.pipeline import consolidation
from mnemonist.pipeline.consolidation_llm import judge_for
from mnemonist.service.part import Part
from mnemonist.store import consolidation as store

if TYPE_CHECKING:
    from mnemonist.service.pipeline_ops import Pipeline


class ConsolidationOps(Part):
    pipeline: Pipeline  # the extraction runtime's LLM judges what the rules leave open
    consolidation_worker: Any = None  # attached by the daemon when it runs one

    def attach_consolidation(self, worker: Any) -> None:
        self.consolidation_worker = worker

    def consolidate(self, max_batches: int | None = None, *,
                    details: bool = False, background: bool = False) -> ConsolidationRun:
        """One run of the engine now, from its cursor (it never blocks a write). What it did
        is counted; `details` (the benchmark, never a face) adds each action's memory ids;
        `background` (the worker's runs) steps aside for requests in flight.
        Frozen mutations (`memory.pipelineV2.mutationsFrozen`) stop it as they stop every
        automatic change."""
        if self.core.config.memory.pipeline_v2.mutations_frozen:
            return {"skipped": "mutations are frozen (memory.pipelineV2.mutationsFrozen)"}
        embed = self.core.provider.embed if self.core.provider is not None else None
        judge, why_not = (judge_for(self.core.config, self.pipeline.pipeline_runtime)
                          if embed is not None else (None, None))
        out = cast(ConsolidationRun, consolidation.run(self.core.db, self.core.index, embed,
                                self.core.config.memory.consolidation,
                                on_superseded=self.core.unindex, max_batches=max_batches,
                                judge=judge, background=background))
        if judge is not None and judge.unavailable is not None:
            why_not = judge.unavailable
        configured = self.core.config.memory.pipeline_v2.extraction.provider != "none"
        if why_not is not None and self.core.config.memory.consolidation.llm and configured:
            out["llm"] = why_not  # why the configured LLM was not asked, or asked no more
        if not details:
            out.pop("actions", None)
        return out

    def consolidation_status(self) -> ConsolidationStatus:
        """Its settings, cursor and counts, what is left to read, the open contradictions and
        the worker's last run."""
        conn = self.core.db.reader()
        cfg = self.core.config.memory.consolidation
        done = store.progress(conn)
        open_contradictions = store.open_contradictions(conn)
        worker = self.consolidation_worker
        return {
            "enabled": cfg.enabled, "interval_ms": cfg.interval_ms,
            "cursor": done["last_seq"], "runs": done["runs"], "restated": done["restated"],
            "replaced": done["replaced"], "flagged": done["flagged"],
            "updated_at": done["updated_at"], "not_read_yet": store.pending(conn,
                                                                           done["last_seq"]),
            "open_contradictions": open_contradictions,
            "worker": worker.status() if worker is not None else {"running": False},
        }
