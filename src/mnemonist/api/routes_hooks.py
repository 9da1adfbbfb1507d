"""Hook routes (`/api/hooks/*`) and checkpoint routes (`/api/checkpoints`): each handler is a
few lines that call the service."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from mnemonist.api.deps import check_claims, svc, with_caller
from mnemonist.model.hooks import (
    CheckpointRequest,
    CompactionCompleteRequest,
    PreCompactionRequest,
    PromptSubmitRequest,
    SessionEndRequest,
    SessionStartRequest,
)
from mnemonist.model.requests import MAX_OFFSET

router = APIRouter()


def _as(request: Request, body: SessionStartRequest | PromptSubmitRequest):
    """A hook reads as the agent / user its body or headers name (none: global memories)."""
    return with_caller(request, body)



@router.post("/api/hooks/session-start")
def session_start(body: SessionStartRequest, request: Request):
    return svc(request).hooks.hook_session_start(_as(request, body))


@router.post("/api/hooks/user-prompt-submit")
def user_prompt_submit(body: PromptSubmitRequest, request: Request):
    return svc(request).hooks.hook_user_prompt_submit(_as(request, body))


@router.post("/api/hooks/pre-compaction")
def pre_compaction(body: PreCompactionRequest, request: Request):
    check_claims(request, body)
    return svc(request).hooks.hook_pre_compaction(body)


@router.post("/api/hooks/compaction-complete")
def compaction_complete(body: CompactionCompleteRequest, request: Request):
    check_claims(request, body)
    return svc(request).hooks.hook_compaction_complete(body)


@router.post("/api/hooks/session-end")
def session_end(body: SessionEndRequest, request: Request):
    check_claims(request, body)
    return svc(request).hooks.hook_session_end(body)


@router.get("/api/checkpoints")
def list_checkpoints(
    request: Request, session_key: str | None = None, project: str | None = None,
    trigger: str | None = None, limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
):
    return svc(request).sessions.list_checkpoints(session_key=session_key, project=project,
                                                  trigger=trigger, limit=limit, offset=offset)


@router.get("/api/checkpoints/latest")
def latest_checkpoint(request: Request, session_key: str | None = None,
                      project: str | None = None):
    return svc(request).sessions.latest_checkpoint(session_key, project)


@router.post("/api/checkpoints")
def create_checkpoint(body: CheckpointRequest, request: Request):
    out = svc(request).sessions.create_checkpoint(body)
    return JSONResponse(out, status_code=202 if out["queued"] else 201)
