"""Memory routes: each handler is a few lines that call the service."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from mnemonist.api.deps import (
    IDENTITY_HEADERS,
    actor,
    caller_of,
    check_owners,
    principal,
    svc,
    with_caller,
)
from mnemonist.model.requests import (
    MAX_OFFSET,
    DeleteRequest,
    ForgetRequest,
    ListRequest,
    MemoryPatch,
    ModifyRequest,
    RecallRequest,
    RecoverRequest,
    RememberRequest,
)
from mnemonist.service import BadRequest

router = APIRouter()



def parse_json(raw: bytes) -> Any:
    """A request body as JSON; bad or too deeply nested JSON is a 400 (the boundary refuses
    nesting past its limit before this runs; RecursionError is the last guard)."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body is not valid JSON: {exc}", code="invalid_json") from exc
    except RecursionError as exc:
        raise BadRequest("body: JSON is nested too deeply", code="json_too_deep") from exc


async def body_json(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    data = parse_json(raw)
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object", code="invalid_json")
    return data


def query_params(request: Request) -> dict[str, Any]:
    return {k: v for k, v in request.query_params.items()}


@router.post("/api/memory/remember")
def remember(body: RememberRequest, request: Request):
    check_owners(request, body)  # private to the token's own identity only
    caller_of(request)  # identity headers: validated, and held against the token
    token = principal(request)  # a token bound to an agent names who wrote it, as the header
    agent = request.headers.get(IDENTITY_HEADERS["agent_id"]) or (
        token.agent_id if token is not None else None)
    if body.who is None and agent:  # who wrote it: the observer when another agent repeats it
        body = body.model_copy(update={"who": agent.strip()[:200] or None})
    out = svc(request).memories.remember(body, changed_by=actor(request))
    return JSONResponse(out, status_code=201 if out["created"] else 200)


@router.post("/api/memory/recall")
def recall(body: RecallRequest, request: Request):
    return svc(request).reads.recall(with_caller(request, body))


@router.post("/api/memory/modify")
def modify(body: ModifyRequest, request: Request):
    return svc(request).memories.modify(with_caller(request, body))


@router.post("/api/memory/forget")
def forget(body: ForgetRequest, request: Request):
    return svc(request).memories.forget(with_caller(request, body))


@router.get("/api/memories")
def list_memories(request: Request):
    return svc(request).reads.list(with_caller(
        request, ListRequest.model_validate(query_params(request))))


@router.get("/api/memory/{memory_id}")
def get_memory(memory_id: str, request: Request):
    return svc(request).reads.get(memory_id, caller=caller_of(request))


@router.patch("/api/memory/{memory_id}")
def patch_memory(memory_id: str, body: MemoryPatch, request: Request):
    return svc(request).memories.patch(memory_id, body,
                                       changed_by=actor(request) or body.changed_by,
                                       caller=caller_of(request))


@router.delete("/api/memory/{memory_id}")
async def delete_memory(memory_id: str, request: Request):
    data = {**query_params(request), **(await body_json(request))}
    req = with_caller(request, DeleteRequest.model_validate(data))
    return await run_in_threadpool(svc(request).memories.delete, memory_id, req)


@router.post("/api/memory/{memory_id}/recover")
def recover(memory_id: str, body: RecoverRequest, request: Request):
    return svc(request).memories.recover(memory_id, with_caller(request, body))


@router.get("/api/memory/{memory_id}/history")
def memory_history(memory_id: str, request: Request):
    return svc(request).reads.history(memory_id, caller_of(request))


@router.get("/api/memory/{memory_id}/chain")
def memory_chain(memory_id: str, request: Request):
    return svc(request).reads.chain(memory_id, caller_of(request))


@router.get("/memory/search")
def legacy_search(
    request: Request,
    q: Annotated[str, Query(max_length=10_000)] = "",
    limit: Annotated[int, Query(ge=1, le=200)] = 10,
):
    if not q.strip():
        raise BadRequest("q is required", field="q")
    return svc(request).reads.keyword_only(q, limit, caller_of(request))


@router.get("/api/embeddings")
def export_embeddings(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    vectors: bool = True,
):
    return svc(request).reads.export_embeddings(limit, offset, vectors, caller_of(request))
