"""Principles through the service: run the pass now, list them, confirm or reject one.

The pass (`graph.principles`) needs the knowledge graph, an embedding provider and the
extraction LLM applying its writes (mode `controlled` or `full`, as the consolidation judge);
without one of them a run stores nothing and says why (`skipped`), never an error. The
maintenance worker runs it once per `graph.principles.cooldownMs`; `POST
/api/repair/principles` and `mnemonist principles run` run it now.

Principles are drawn only from shared memories (no agent or user owner), so listing them
shows nothing private.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from mnemonist.graph import principles
from mnemonist.model.answers_curation import (
    PrincipleBrief,
    PrincipleListAnswer,
    PrinciplesReport,
    PrinciplesRun,
    PrincipleView,
)
from mnemonist.model.memory import utcnow
from mnemonist.service.errors import BadRequest, Conflict, NotFound
from mnemonist.service.part import Part
from mnemonist.store import graph_principles as store
from mnemonist.store.graph import REASONS, entity_names

if TYPE_CHECKING:
    from mnemonist.service.pipeline_ops import Pipeline
from mnemonist.text.scrub import scrub_credentials

LATEST = 10


def _why(reason: str | None) -> str | None:
    """A reviewer's reason as stored: credentials scrubbed, at most 2000 characters."""
    return scrub_credentials(reason).text[:2000] if reason else None


def _row(r: Any) -> PrincipleView:
    return {"id": r["id"], "statement": r["statement"], "status": r["status"],
            "entity_id": r["entity_id"], "project": r["project"] or None,
            "sources": json.loads(r["sources"]), "source_names": [],
            "evidence": json.loads(r["evidence"]), "reason": r["reason"],
            "similarity": r["similarity"], "model": r["model"], "created_at": r["created_at"],
            "reviewed_at": r["reviewed_at"], "review_reason": r["review_reason"]}


def _named(conn: Any, rows: list[PrincipleView]) -> list[PrincipleView]:
    names = entity_names(conn, sorted({e for r in rows for e in r["sources"]}))
    for r in rows:
        r["source_names"] = [names.get(e) for e in r["sources"]]
    return rows


class PrincipleOps(Part):
    pipeline: Pipeline  # the extraction runtime's LLM proposes them

    def principles_unavailable(self) -> str | None:
        """None when a run may ask the LLM, else why not."""
        cfg = self.core.config.memory.pipeline_v2
        if not cfg.graph.enabled:
            return "the knowledge graph is off (memory.pipelineV2.graph.enabled)"
        if cfg.mutations_frozen:
            return "mutations are frozen (memory.pipelineV2.mutationsFrozen)"
        if self.core.provider is None:
            return "no embedding provider is configured (entities are compared by vectors)"
        if cfg.extraction.provider == "none":
            return "no LLM is configured (memory.pipelineV2.extraction.provider: none)"
        runtime = self.pipeline.pipeline_runtime
        if runtime is None or getattr(runtime, "llm", None) is None:
            return "no extraction runtime is running"
        mode = getattr(runtime, "mode", None)
        if mode not in ("controlled", "full"):
            return f"the pipeline is {mode}: no LLM decision is applied"
        return None

    def run_principles(self) -> PrinciplesRun:
        """One run of the principles pass now (whatever `graph.principles.enabled` says)."""
        why = self.principles_unavailable()
        if why is not None:
            return {"skipped": why, "proposed": []}
        assert self.core.provider is not None
        llm = self.pipeline.pipeline_runtime.llm  # type: ignore[union-attr]
        timeout_s = self.core.config.memory.pipeline_v2.extraction.timeout / 1000.0
        return cast(PrinciplesRun, principles.run(
            self.core.db, llm, self.core.provider.model_id,
            self.core.config.memory.pipeline_v2.graph.principles, timeout_s))

    def list_principles(self, status: str | None = None, limit: int = 50,
                        offset: int = 0) -> PrincipleListAnswer:
        if status is not None and status not in principles.STATUSES:
            raise BadRequest(f"status is one of {', '.join(principles.STATUSES)}")
        conn = self.core.db.reader()
        rows = [_row(r) for r in store.listed(conn, status, limit, offset)]
        return {"principles": _named(conn, rows), "counts": self.principle_counts(conn)}

    def principle_counts(self, conn: Any) -> dict[str, int]:
        out = dict.fromkeys((*principles.STATUSES, "unstated"), 0)
        out.update(store.counts_by_status(conn))
        return out

    def get_principle(self, principle_id: str) -> PrincipleView:
        conn = self.core.db.reader()
        row = store.principle(conn, principle_id)
        if row is None:
            raise NotFound(f"no principle {principle_id}")
        return _named(conn, [_row(row)])[0]

    def confirm_principle(self, principle_id: str, reason: str | None = None) -> PrincipleView:
        """A person confirms it: its relations become stated (`user-stated`, confidence 1)."""
        now = utcnow()
        with self.core.db.write_tx() as conn:
            row = store.review_state(conn, principle_id)
            if row is None:
                raise NotFound(f"no principle {principle_id}")
            if row[0] == "rejected":
                raise Conflict(f"principle {principle_id} was rejected")
            if row[1] is None or not store.entity_exists(conn, row[1]):
                raise Conflict(f"principle {principle_id} has lost its entity (its evidence"
                               " was forgotten)")
            if row[0] == "proposed":
                store.confirm(conn, principle_id, row[1], principles.RELATION_TYPE,
                              REASONS["user-stated"], _why(reason), now)
        return self.get_principle(principle_id)

    def reject_principle(self, principle_id: str, reason: str | None = None) -> PrincipleView:
        """A person rejects it: its entity, links and relations go; the row stays, so its
        group of entities is never proposed again."""
        now = utcnow()
        with self.core.db.write_tx() as conn:
            row = store.review_state(conn, principle_id)
            if row is None:
                raise NotFound(f"no principle {principle_id}")
            entity_id = row[1]
            if entity_id is not None:
                store.remove_principle_entity(conn, entity_id, principles.ENTITY_TYPE)
            if row[0] != "rejected":
                store.mark_rejected(conn, principle_id, _why(reason), now)
        return self.get_principle(principle_id)

    def principles_report(self, conn: Any) -> PrinciplesReport:
        """For `/api/diagnostics/graph`: settings, counts by status, the latest proposed with
        their evidence ids, and why a run would not ask the LLM now."""
        cfg = self.core.config.memory.pipeline_v2.graph.principles
        latest = [_row(r) for r in store.latest_proposed(conn, LATEST)]
        return {"enabled": cfg.enabled, "cooldown_ms": cfg.cooldown_ms,
                "max_groups": cfg.max_groups,
                "similarity_threshold": cfg.similarity_threshold,
                "counts": self.principle_counts(conn),
                "unavailable": self.principles_unavailable(),
                "proposed": [PrincipleBrief(id=r["id"], statement=r["statement"],
                                            project=r["project"], sources=r["sources"],
                                            source_names=r["source_names"],
                                            evidence=r["evidence"], created_at=r["created_at"])
                             for r in _named(conn, latest)]}
