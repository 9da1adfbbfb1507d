"""Diagnostics and on-demand repair: GET /api/diagnostics, POST /api/repair/<action>."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

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
    "maintenance-tick": "tick",
    "cluster-entities": "clusterEntities",
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


@router.post("/api/repair/{name}")
async def run_repair(name: str, request: Request,
                     mode: Literal["observe", "execute"] | None = None):
    action = ROUTES.get(name)
    if action is None:
        raise NotFound(f"no repair action {name}; one of {', '.join(ROUTES)}")
    return await run_in_threadpool(_run, maintenance(request), action, mode)
