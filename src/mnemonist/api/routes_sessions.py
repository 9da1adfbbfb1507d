"""Session routes (`/api/sessions`): what was kept of each agent session."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from mnemonist.api.deps import caller_of, svc
from mnemonist.model.requests import MAX_OFFSET

router = APIRouter()


@router.get("/api/sessions")
def list_sessions(request: Request, project: str | None = Query(None, max_length=500),
                  limit: int = Query(50, ge=1, le=1000),
                  offset: int = Query(0, ge=0, le=MAX_OFFSET)):
    return svc(request).sessions.list_sessions(project=project, limit=limit, offset=offset)


@router.get("/api/sessions/{session_key}")
def get_session(request: Request, session_key: str,
                turns: int = Query(200, ge=0, le=10000),
                offset: int = Query(0, ge=0, le=MAX_OFFSET),
                transcript: bool = False):
    return svc(request).sessions.get_session(session_key, turns=turns, offset=offset,
                                             transcript=transcript, caller=caller_of(request))
