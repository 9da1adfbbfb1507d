"""The gates (docs/gates.md): their log, a session's significance now, and the backfill of the
sessions the significance gate skipped. Registered before the repair routes, whose
`/api/repair/{name}` would take `/api/repair/backfill-skipped` otherwise."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request

from mnemonist.api.deps import caller_of, svc
from mnemonist.model.requests import MAX_OFFSET

router = APIRouter()


@router.get("/api/gates/log")
def gates_log(
    request: Request, gate: Literal["write", "significance"] | None = None,
    decision: Literal["write", "drop", "would_drop", "extract", "skip", "would_skip"]
    | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
):
    return svc(request).pipeline.gate_log(gate=gate, decision=decision, limit=limit, offset=offset,
                                          caller=caller_of(request))


@router.get("/api/gates/significance/{session_key}")
def session_significance(session_key: str, request: Request):
    service = svc(request)
    service.sessions.get_session(session_key, turns=0)  # 404 for a session nobody saw
    return service.pipeline.judge_session(session_key)


@router.post("/api/repair/backfill-skipped")
def backfill_skipped(request: Request,
                     limit: Annotated[int, Query(ge=1, le=10000)] = 100):
    return svc(request).pipeline.backfill_skipped(limit)
