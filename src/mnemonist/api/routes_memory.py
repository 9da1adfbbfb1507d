"""Memory routes: each handler is a few lines that call the service."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from mnemonist.api.deps import svc
from mnemonist.model.requests import (
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



async def body_json(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body is not valid JSON: {exc}", code="invalid_json") from exc
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object", code="invalid_json")
    return data


def query_params(request: Request) -> dict[str, Any]:
    return {k: v for k, v in request.query_params.items()}


@router.post("/api/memory/remember")
def remember(body: RememberRequest, request: Request):
    out = svc(request).remember(body)
    return JSONResponse(out, status_code=201 if out["created"] else 200)


@router.post("/api/memory/recall")
def recall(body: RecallRequest, request: Request):
    return svc(request).recall(body)


@router.post("/api/memory/modify")
def modify(body: ModifyRequest, request: Request):
    return svc(request).modify(body)


@router.post("/api/memory/forget")
def forget(body: ForgetRequest, request: Request):
    return svc(request).forget(body)


@router.get("/api/memories")
def list_memories(request: Request):
    return svc(request).list(ListRequest.model_validate(query_params(request)))


@router.get("/api/memory/{memory_id}")
def get_memory(memory_id: str, request: Request):
    return svc(request).get(memory_id)


@router.patch("/api/memory/{memory_id}")
def patch_memory(memory_id: str, body: MemoryPatch, request: Request):
    return svc(request).patch(memory_id, body)


@router.delete("/api/memory/{memory_id}")
async def delete_memory(memory_id: str, request: Request):
    data = {**query_params(request), **(await body_json(request))}
    req = DeleteRequest.model_validate(data)
    return await _threaded(svc(request).delete, memory_id, req)


@router.post("/api/memory/{memory_id}/recover")
def recover(memory_id: str, body: RecoverRequest, request: Request):
    return svc(request).recover(memory_id, body)


@router.get("/api/memory/{memory_id}/history")
def memory_history(memory_id: str, request: Request):
    return svc(request).history(memory_id)


@router.get("/memory/search")
def legacy_search(request: Request, q: str = "", limit: int = 10):
    if not q.strip():
        raise BadRequest("q is required", field="q")
    if not 1 <= limit <= 200:
        raise BadRequest("limit must be between 1 and 200", field="limit")
    return svc(request).keyword_only(q, limit)


@router.get("/api/embeddings")
def export_embeddings(request: Request, limit: int = 100, offset: int = 0, vectors: bool = True):
    if not 1 <= limit <= 10000 or offset < 0:
        raise BadRequest("limit must be 1–10000 and offset ≥ 0", field="limit")
    return svc(request).export_embeddings(limit, offset, vectors)


async def _threaded(fn, *args):
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)
