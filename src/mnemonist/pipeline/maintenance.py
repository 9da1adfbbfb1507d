"""The maintenance worker: diagnostics, recommendations and (optionally) self-repair.

Each cycle (`tick()`): diagnose; turn the report into recommendations; in `observe` mode log
them and stop there; in `execute` mode run each one through its repair action, subject to a
per-action cooldown and hourly budget (`repair.*`), then diagnose again and record the health
delta. The halt tracker stops an action after 3 consecutive runs that did not improve the
score; a cycle without recommendations (health is good) resets the tracker, halts included.
Besides repairs, each `execute` cycle runs one batch of the near-duplicate sweep
(`pipeline.dedup`) when `repair.dedupCooldownMs` / `repair.dedupHourlyBudget` allow: routine
work, not a repair, so it is neither recommended by the health score nor halted by it. It
only flags pairs for review. The entity-health pass (`graph.entity_health`: plural and
spelling variants folded, junk entities removed) is routine work the same way, one batch per
`execute` cycle under `graph.entityHealth.cooldownMs` / `hourlyBudget`, and so is the
principles pass (`graph.principles`, run through the runner the daemon attaches: it needs
the extraction LLM), once per `graph.principles.cooldownMs`.
The interval never starts when `autonomous.enabled` is false
or `autonomous.frozen` / `pipelineV2.autonomousFrozen` is true,
but `tick()` and the repair actions stay callable.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mnemonist.graph import communities, entity_health
from mnemonist.graph import upkeep as graph_upkeep
from mnemonist.model.config import Config
from mnemonist.pipeline import dedup, repair
from mnemonist.pipeline.repair import VectorState
from mnemonist.pipeline.retention import RetentionWorker
from mnemonist.store.db import Database

log = logging.getLogger(__name__)

DEAD_RATE_LIMIT = 0.01
TOMBSTONE_LIMIT = 0.3
MAX_INEFFECTIVE_RUNS = 3
REEMBED_WAIT_S = 10.0
HOUR_S = 3600.0

ACTIONS = (
    "requeueDeadJobs", "releaseStaleLeases", "checkFtsConsistency", "rebuildFts",
    "triggerRetentionSweep", "reembed", "dedupSweep", "entityHealth", "principles",
)  # fmt: skip


@dataclass(frozen=True)
class Recommendation:
    domain: str
    action: str
    trigger: str


def recommend(report: dict[str, Any]) -> list[Recommendation]:
    """The repair actions a diagnostics report calls for."""
    recs: list[Recommendation] = []
    queue, index, storage = report["queue"], report["index"], report["storage"]
    if queue["dead_rate"] > DEAD_RATE_LIMIT:
        recs.append(Recommendation("queue", "requeueDeadJobs",
                                   f"dead rate {queue['dead_rate']:.1%} > 1%"))
    if queue["stale_leases"] > 0:
        recs.append(Recommendation("queue", "releaseStaleLeases",
                                   f"{queue['stale_leases']} stale lease(s)"))
    if index["fts_mismatch"]:
        detail = ", ".join(f"{name} {c['indexed']} indexed vs {c['rows']} rows"
                           for name, c in index["fts"].items() if c["indexed"] != c["rows"])
        recs.append(Recommendation("index", "checkFtsConsistency", f"FTS mismatch: {detail}"))
    if storage["tombstone_ratio"] > TOMBSTONE_LIMIT:
        recs.append(Recommendation("storage", "triggerRetentionSweep",
                                   f"tombstone ratio {storage['tombstone_ratio']:.0%} > 30%"))
    if (index["embeddings_missing"] > 0 or index["vector_mismatch"]) and index[
            "provider_available"]:
        recs.append(Recommendation(
            "index", "reembed",
            f"{index['embeddings_missing']} embedding(s) missing, vector index"
            f" {index['vector_index_size']} vs {index['live_embedded']} embedded"))
    return recs


class RateLimiter:
    """Per action: a cooldown between runs and a budget of runs per rolling hour."""

    def __init__(self, limits: dict[str, tuple[float, int]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self._runs: dict[str, deque[float]] = {}

    def check(self, action: str) -> str | None:
        """None when the action may run now, else why not."""
        cooldown_s, budget = self.limits[action]
        now = self.clock()
        runs = self._runs.setdefault(action, deque())
        while runs and now - runs[0] >= HOUR_S:
            runs.popleft()
        if runs and now - runs[-1] < cooldown_s:
            return f"cooldown: {cooldown_s - (now - runs[-1]):.0f} s left"
        if len(runs) >= budget:
            return f"hourly budget of {budget} used"
        return None

    def record(self, action: str) -> None:
        self._runs.setdefault(action, deque()).append(self.clock())


class HaltTracker:
    def __init__(self, max_runs: int = MAX_INEFFECTIVE_RUNS) -> None:
        self.max_runs = max_runs
        self.consecutive: dict[str, int] = {}

    def halted(self, action: str) -> bool:
        return self.consecutive.get(action, 0) >= self.max_runs

    def record(self, action: str, improved: bool) -> None:
        if improved:
            self.consecutive.pop(action, None)
        else:
            self.consecutive[action] = self.consecutive.get(action, 0) + 1

    def reset(self) -> None:
        self.consecutive.clear()

    @property
    def halted_actions(self) -> list[str]:
        return sorted(a for a in self.consecutive if self.halted(a))


class MaintenanceWorker:
    def __init__(
        self,
        db: Database,
        config: Config,
        *,
        retention: RetentionWorker,
        vectors: VectorState | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        pipeline = config.memory.pipeline_v2
        self.auto = pipeline.autonomous
        self.frozen = self.auto.frozen or pipeline.autonomous_frozen
        self.lease_timeout_ms = pipeline.worker.lease_timeout_ms
        self.retention = retention
        self.vectors = vectors
        r = pipeline.repair
        self.repair_cfg = r
        queue_limit = (r.requeue_cooldown_ms / 1000.0, r.requeue_hourly_budget)
        fts_limit = (r.fts_cooldown_ms / 1000.0, r.fts_hourly_budget)
        self.limiter = RateLimiter({
            "requeueDeadJobs": queue_limit,
            "releaseStaleLeases": queue_limit,
            "checkFtsConsistency": fts_limit,
            "rebuildFts": fts_limit,
            "triggerRetentionSweep": (r.sweep_cooldown_ms / 1000.0, r.sweep_hourly_budget),
            "reembed": (r.reembed_cooldown_ms / 1000.0, r.reembed_hourly_budget),
            "dedupSweep": (r.dedup_cooldown_ms / 1000.0, r.dedup_hourly_budget),
            "entityHealth": (pipeline.graph.entity_health.cooldown_ms / 1000.0,
                             pipeline.graph.entity_health.hourly_budget),
            "principles": (pipeline.graph.principles.cooldown_ms / 1000.0, 1),
        }, clock)
        self.halt = HaltTracker()
        graph = pipeline.graph
        self.clustering = graph.communities if graph.enabled else None
        self.graph_cfg = graph if graph.enabled else None
        self._clustered_at: float | None = None
        #: runs the principles pass (the service's `run_principles`), attached by the daemon
        self.principles_runner: Callable[[], Mapping[str, Any]] | None = None
        self.clock = clock
        self.cycles = 0
        self.last_cycle: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- diagnostics and actions -----------------------------------------------------------
    def diagnostics(self) -> dict[str, Any]:
        return repair.diagnose(self.db, lease_timeout_ms=self.lease_timeout_ms,
                               vectors=self.vectors)

    def run_action(self, action: str, *, wait_s: float = 0.0) -> dict[str, Any]:
        """Run one repair action now: no cooldown, budget or halt applies (on demand)."""
        if action == "requeueDeadJobs":
            return repair.requeue_dead_jobs(self.db)
        if action == "releaseStaleLeases":
            return repair.release_stale_leases(self.db, self.lease_timeout_ms)
        if action == "checkFts":
            return repair.check_fts(self.db)  # a report only
        if action == "checkFtsConsistency":
            return repair.check_and_rebuild_fts(self.db)
        if action == "rebuildFts":
            return repair.rebuild_fts(self.db)
        if action == "triggerRetentionSweep":
            return repair.retention_sweep(self.retention)
        if action == "clusterEntities":
            cfg = self.clustering
            if cfg is None:
                return {"skipped": "the knowledge graph is off (graph.enabled)"}
            out = communities.recompute(self.db, resolution=cfg.resolution,
                                        max_entities=cfg.max_entities)
            self._clustered_at = self.clock()
            return out
        if action == "graphUpkeep":
            if self.graph_cfg is None:
                return {"skipped": "the knowledge graph is off (graph.enabled)"}
            return graph_upkeep.run(self.db, self.graph_cfg)
        if action == "reembed":
            if self.vectors is None:
                return {"skipped": "no embedding provider is configured"}
            return repair.reembed(self.vectors, self.db, wait_s=wait_s)
        if action == "dedupSweep":
            index = self.vectors.index if self.vectors is not None else None
            return dedup.sweep(self.db, index, self.repair_cfg)
        if action == "entityHealth":  # on demand it runs even with entityHealth.enabled off
            if self.graph_cfg is None:
                return {"skipped": "the knowledge graph is off (graph.enabled)"}
            return entity_health.run(self.db, self.graph_cfg)
        if action == "principles":  # on demand it runs even with principles.enabled off
            if self.principles_runner is None:
                return {"skipped": "the principles pass is not part of this daemon",
                        "proposed": []}
            return dict(self.principles_runner())
        raise ValueError(f"unknown repair action {action!r}; one of {', '.join(ACTIONS)}")

    # -- one cycle -------------------------------------------------------------------------
    def tick(self, mode: str | None = None) -> dict[str, Any]:
        """One maintenance cycle; `mode` overrides autonomous.maintenanceMode."""
        with self._lock:
            return self._tick(mode or self.auto.maintenance_mode)

    def _communities_due(self) -> bool:
        cfg = self.clustering
        if cfg is None or not cfg.enabled:
            return False
        return (self._clustered_at is None
                or self.clock() - self._clustered_at >= cfg.interval_ms / 1000.0)

    def _tick(self, mode: str) -> dict[str, Any]:
        cycle = self._repair(mode)
        if mode == "execute":  # after the repairs: a reembed may just have filled the index
            cycle["scheduled"] = self._scheduled_sweep()
            cycle["entity_health"] = self._scheduled_entity_health()
            cycle["principles"] = self._scheduled_principles()
        return cycle

    def _repair(self, mode: str) -> dict[str, Any]:
        report = self.diagnostics()
        recs = recommend(report)
        cycle: dict[str, Any] = {
            "at": report["at"], "mode": mode, "score": report["score"], "report": report,
            "recommendations": [r.__dict__ for r in recs], "executed": [], "skipped": [],
            "score_after": None, "delta": None, "halted": [], "communities": None,
            "graph": None,
        }
        if mode == "execute" and self._communities_due():
            try:  # housekeeping, not a repair: no score, no halt
                cycle["communities"] = self.run_action("clusterEntities")
            except Exception as exc:
                log.exception("community detection failed")
                cycle["communities"] = {"error": f"{type(exc).__name__}: {exc}"}
        if mode == "execute" and self.graph_cfg is not None:
            try:  # inference and time decay: bounded, idempotent, every execute cycle
                cycle["graph"] = self.run_action("graphUpkeep")
            except Exception as exc:
                log.exception("graph upkeep failed")
                cycle["graph"] = {"error": f"{type(exc).__name__}: {exc}"}
        self.cycles += 1
        self.last_cycle = cycle
        if not recs:
            self.halt.reset()
            return cycle
        if mode == "observe":
            log.info("maintenance (observe): score %.2f, would run %s", report["score"],
                     [r.action for r in recs])
            cycle["halted"] = self.halt.halted_actions
            return cycle
        for rec in recs:
            if self.halt.halted(rec.action):
                cycle["skipped"].append({"action": rec.action, "reason": "halted"})
                continue
            why = self.limiter.check(rec.action)
            if why:
                cycle["skipped"].append({"action": rec.action, "reason": why})
                continue
            self.limiter.record(rec.action)
            try:
                result = self.run_action(rec.action, wait_s=REEMBED_WAIT_S)
                cycle["executed"].append({"action": rec.action, "result": result})
            except Exception as exc:  # one failing repair must not stop the others
                log.exception("maintenance action %s failed", rec.action)
                cycle["executed"].append({"action": rec.action,
                                          "error": f"{type(exc).__name__}: {exc}"})
        if cycle["executed"]:
            after = self.diagnostics()
            delta = round(after["score"] - report["score"], 4)
            cycle.update(score_after=after["score"], delta=delta)
            for item in cycle["executed"]:
                self.halt.record(item["action"], improved=delta > 0)
            log.info("maintenance: score %.4f -> %.4f after %s", report["score"],
                     after["score"], [i["action"] for i in cycle["executed"]])
        cycle["halted"] = self.halt.halted_actions
        return cycle

    def _scheduled_sweep(self) -> dict[str, Any]:
        """One batch of the near-duplicate sweep, when its cooldown and budget allow."""
        why = self.limiter.check("dedupSweep")
        if why:
            return {"action": "dedupSweep", "skipped": why}
        self.limiter.record("dedupSweep")
        try:
            return {"action": "dedupSweep", "result": self.run_action("dedupSweep")}
        except Exception as exc:  # a failing sweep must not stop the repairs
            log.exception("near-duplicate sweep failed")
            return {"action": "dedupSweep", "error": f"{type(exc).__name__}: {exc}"}

    def _scheduled_entity_health(self) -> dict[str, Any] | None:
        """One batch of the entity-health pass, when on and its cooldown and budget allow."""
        if self.graph_cfg is None or not self.graph_cfg.entity_health.enabled:
            return None
        why = self.limiter.check("entityHealth")
        if why:
            return {"action": "entityHealth", "skipped": why}
        self.limiter.record("entityHealth")
        try:
            return {"action": "entityHealth", "result": self.run_action("entityHealth")}
        except Exception as exc:  # a failing pass must not stop the cycle
            log.exception("entity-health pass failed")
            return {"action": "entityHealth", "error": f"{type(exc).__name__}: {exc}"}

    def _scheduled_principles(self) -> dict[str, Any] | None:
        """One run of the principles pass, when on and its cooldown allows."""
        if (self.graph_cfg is None or not self.graph_cfg.principles.enabled
                or self.principles_runner is None):
            return None
        why = self.limiter.check("principles")
        if why:
            return {"action": "principles", "skipped": why}
        self.limiter.record("principles")
        try:
            return {"action": "principles", "result": self.run_action("principles")}
        except Exception as exc:  # a failing pass must not stop the cycle
            log.exception("principles pass failed")
            return {"action": "principles", "error": f"{type(exc).__name__}: {exc}"}

    # -- the interval ----------------------------------------------------------------------
    @property
    def schedulable(self) -> bool:
        return self.auto.enabled and not self.frozen

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> bool:
        """Start the interval (unless disabled or frozen); True when it runs."""
        if not self.schedulable:
            log.info("maintenance worker not scheduled (autonomous disabled or frozen)")
            return False
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="mnemonist-maintenance",
                                            daemon=True)
            self._thread.start()
        return True

    def _run(self) -> None:
        self.db.loops.run_every("maintenance", lambda: self.auto.maintenance_interval_ms / 1000.0,
                                self.tick, self._stop)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(15)
            self._thread = None

    def state(self) -> dict[str, Any]:
        last = self.last_cycle
        return {
            "running": self.running, "enabled": self.auto.enabled, "frozen": self.frozen,
            "mode": self.auto.maintenance_mode,
            "interval_ms": self.auto.maintenance_interval_ms, "cycles": self.cycles,
            "halted": self.halt.halted_actions,
            "last_cycle": None if last is None else {
                k: last[k] for k in ("at", "mode", "score", "score_after", "delta",
                                     "recommendations", "executed", "skipped")},
        }
