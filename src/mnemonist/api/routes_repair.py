"""Diagnostics and on-demand repair: GET /api/diagnostics, POST /api/repair/<action>, and the
review of near-duplicate candidates: GET /api/repair/duplicates, POST
/api/repair/duplicates/{id}/dismiss and /resolve; the learned ranker's status and refit."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from mnemonist.api.deps import actor, caller_of, svc
from mnemonist.model.requests import (
    MAX_OFFSET,
    DismissDuplicateRequest,
    ResolveDuplicateRequest,
)
from mnemonist.service import NotFound, Unavailable

router = APIRouter()

#: route path -> the maintenance worker's action name
ROUTES = {
    "requeue-dead-jobs": "requeueDeadJobs",
    "release-stale-leases": "releaseStaleLeases",
    "check-fts": "checkFts",
    "rebuild-fts": "rebuildFts",
    "retention-sweep": "triggerRetentionSweep",
    "reembed": "reembed",
    "dedup-sweep": "dedupSweep",
    "entity-health": "entityHealth",
    "maintenance-tick": "tick",
    "cluster-entities": "clusterEntities",
    "graph-upkeep": "graphUpkeep",
    "principles": "principles",
}


def maintenance(request: Request) -> Any:
    worker = getattr(request.app.state.daemon, "maintenance", None)
    if worker is None:
        raise Unavailable("the maintenance worker is not part of this daemon")
    return worker


@router.get("/api/diagnostics")
def diagnostics(request: Request):
    worker = maintenance(request)
    daemon = request.app.state.daemon
    report = worker.diagnostics()
    report["maintenance"] = worker.state()
    report["duplicates"] = svc(request).curation.duplicates_state()
    documents = getattr(daemon, "documents", None)
    if documents is not None:
        report["document_worker"] = documents.stats.__dict__
    return report


def _run(worker: Any, action: str, mode: str | None) -> dict[str, Any]:
    if action == "tick":
        return worker.tick(mode)
    before = worker.diagnostics()["score"]
    result = worker.run_action(action)
    after = worker.diagnostics()["score"]
    return {"action": action, "result": result, "score_before": before, "score_after": after}


@router.post("/api/repair/sleep-replay")  # before /api/repair/{name}
async def sleep_replay(request: Request):
    """One sleep-replay cycle now, whatever `memory.consolidation.replay.enabled` says."""
    worker = getattr(request.app.state.daemon, "sleep_replay", None)
    if worker is None:
        raise Unavailable("sleep replay is not part of this daemon")
    return await run_in_threadpool(worker.run_now)


@router.post("/api/repair/{name}")
async def run_repair(name: str, request: Request,
                     mode: Literal["observe", "execute"] | None = None):
    action = ROUTES.get(name)
    if action is None:
        raise NotFound(f"no repair action {name}; one of {', '.join(ROUTES)}")
    return await run_in_threadpool(_run, maintenance(request), action, mode)


@router.get("/api/repair/duplicates")
def list_duplicates(
    request: Request, status: Literal["open", "dismissed", "resolved"] = "open",
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    kind: Literal["duplicate", "contradiction", "restated", "replaced"] | None = None,
):
    return svc(request).curation.list_duplicates(status, limit, offset, caller_of(request), kind)


@router.post("/api/consolidation/run")
async def consolidation_run(request: Request):
    return await run_in_threadpool(svc(request).curation.consolidate)


@router.get("/api/consolidation/status")
def consolidation_status(request: Request):
    return svc(request).curation.consolidation_status()


@router.get("/api/predictor/status")
def predictor_status(request: Request):
    return svc(request).feedback.predictor_status()


@router.post("/api/predictor/train")
async def predictor_train(request: Request):
    return await run_in_threadpool(svc(request).feedback.predictor_train)


@router.post("/api/repair/duplicates/{candidate_id}/dismiss")
def dismiss_duplicate(candidate_id: str, request: Request,
                      body: DismissDuplicateRequest | None = None):
    reason = body.reason if body is not None else None
    return svc(request).curation.dismiss_duplicate(candidate_id, reason, caller_of(request))


@router.post("/api/repair/duplicates/{candidate_id}/resolve")
def resolve_duplicate(candidate_id: str, body: ResolveDuplicateRequest, request: Request):
    return svc(request).curation.resolve_duplicate(candidate_id, body.keep, body.reason,
                                                   actor(request) or body.changed_by,
                                                   caller_of(request))
