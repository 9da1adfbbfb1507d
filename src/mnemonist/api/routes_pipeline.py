"""Pipeline routes: status, and undoing an automatic supersession."""

from __future__ import annotations

from fastapi import APIRouter, Request

from mnemonist.api.deps import caller_of, svc, with_caller
from mnemonist.model.requests import RecoverRequest

router = APIRouter()



@router.get("/api/pipeline/status")
def pipeline_status(request: Request):
    return svc(request).pipeline.pipeline_status()


@router.post("/api/memory/{memory_id}/restore")
def restore_superseded(memory_id: str, body: RecoverRequest, request: Request):
    return svc(request).pipeline.restore_superseded(memory_id, with_caller(request, body))


@router.get("/api/memory/{memory_id}/archive")
def archived_versions(memory_id: str, request: Request):
    return svc(request).pipeline.archived_versions(memory_id, caller_of(request))
