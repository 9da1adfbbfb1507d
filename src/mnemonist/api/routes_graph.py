"""Knowledge-graph routes: entities, neighbourhoods, knowledge expansion, impact, graph
diagnostics and memory feedback. Every memory they return passes the recall filters given
as query parameters (GET) or in the body (POST)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from mnemonist.api.deps import check_claims, check_owners, svc, with_caller
from mnemonist.api.routes_memory import query_params
from mnemonist.model.graph import (
    EntityListRequest,
    ExpandRequest,
    ExpandSessionRequest,
    FeedbackRequest,
    ImpactRequest,
    NeighbourhoodRequest,
    RelateRequest,
    RetractRequest,
)
from mnemonist.model.requests import RecallFilters

router = APIRouter()


@router.get("/api/entities")
def list_entities(request: Request):
    req = EntityListRequest.model_validate(query_params(request))
    return svc(request).graph.list_entities(with_caller(request, req))


@router.get("/api/entities/{entity_id}")
def get_entity(entity_id: str, request: Request):
    filters = RecallFilters.model_validate(query_params(request))
    return svc(request).graph.get_entity(entity_id, with_caller(request, filters))


@router.get("/api/graph/neighbourhood")
def neighbourhood(request: Request):
    req = NeighbourhoodRequest.model_validate(query_params(request))
    return svc(request).graph.neighbourhood(with_caller(request, req))


@router.post("/api/knowledge/expand")
def knowledge_expand(body: ExpandRequest, request: Request):
    return svc(request).graph.knowledge_expand(with_caller(request, body))


@router.post("/api/knowledge/expand-session")
def knowledge_expand_session(body: ExpandSessionRequest, request: Request):
    return svc(request).graph.knowledge_expand_session(with_caller(request, body))


@router.post("/api/graph/impact")
def graph_impact(body: ImpactRequest, request: Request):
    return svc(request).graph.graph_impact(with_caller(request, body))


@router.get("/api/diagnostics/graph")
async def graph_diagnostics(request: Request, recompute: bool = False,
                            project: str | None = None) -> Any:
    return await run_in_threadpool(svc(request).graph.graph_diagnostics, recompute, project)


@router.post("/api/memory/{memory_id}/feedback")
def memory_feedback(memory_id: str, body: FeedbackRequest, request: Request):
    return svc(request).feedback.memory_feedback(memory_id, with_caller(request, body))


@router.post("/api/graph/relations")
def state_relation(body: RelateRequest, request: Request):
    """State (or, with `retract: true`, take back) a relation. Owners come from the body
    only, as on a remember: a header never makes a statement private."""
    check_owners(request, body)
    check_claims(request)
    out = svc(request).graph.relate(body)
    return JSONResponse(out, status_code=201 if out.get("created") else 200)


@router.delete("/api/graph/relations/{relation_id}")
def retract_relation(relation_id: str, request: Request):
    req = RetractRequest.model_validate(query_params(request))
    return svc(request).graph.retract_relation(relation_id, with_caller(request, req))
