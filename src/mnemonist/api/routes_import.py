"""POST /api/memory/import (JSON object, JSON array or JSONL) and neighbours in a source."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from mnemonist.api.deps import caller_of, check_claims, principal, svc
from mnemonist.model.answers import ImportAnswer
from mnemonist.model.requests import ImportRequest
from mnemonist.service import BadRequest, MemoryService
from mnemonist.service.principal import Principal

router = APIRouter()


def parse_import_body(raw: bytes) -> dict[str, Any]:
    """{"items": [...], defaults...}, a JSON array of items, or one JSON object per line."""
    text = raw.decode("utf-8", errors="strict").strip()
    if not text:
        raise BadRequest("body is empty: send items as a JSON array, an object with"
                         " `items`, or JSON lines", code="invalid_json")
    try:
        data = json.loads(text)
    except RecursionError as exc:
        raise BadRequest("body: JSON is nested too deeply", code="json_too_deep") from exc
    except ValueError:
        items = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except RecursionError as exc:
                raise BadRequest(f"line {n}: JSON is nested too deeply",
                                 code="json_too_deep") from exc
            except ValueError as exc:
                raise BadRequest(f"line {n} is not valid JSON: {exc}",
                                 code="invalid_json") from exc
        return {"items": items}
    if isinstance(data, list):
        return {"items": data}
    if isinstance(data, dict) and "items" in data:
        return data
    if isinstance(data, dict):
        return {"items": [data]}
    raise BadRequest("body must be a JSON array, an object or JSON lines", code="invalid_json")


def import_body(raw: bytes, service: MemoryService, principal: Principal | None = None
                ) -> ImportAnswer:
    """Parse, validate and import: all of it in a worker thread, never on the event loop
    (100,000 items take seconds to validate). With a token, every item's owners must be the
    token's own, and history names the token."""
    try:
        body = parse_import_body(raw)
    except UnicodeDecodeError as exc:
        raise BadRequest("body is not UTF-8", code="invalid_json") from exc
    req = ImportRequest.model_validate(body)
    if principal is None:
        return service.carry.import_memories(req)
    for n, item in enumerate(req.items):
        principal.check_owners({"agent_id": item.agent_id, "user_id": item.user_id},
                               f"body's items[{n}]")
    return service.carry.import_memories(req, changed_by=principal.actor)


@router.post("/api/memory/import")
async def import_memories(request: Request):
    check_claims(request)
    return await run_in_threadpool(import_body, await request.body(),
                                   svc(request), principal(request))


@router.get("/api/memory/{memory_id}/neighbours")
def neighbours(memory_id: str, request: Request, n: Annotated[int, Query(ge=0, le=50)] = 2):
    return svc(request).reads.neighbours(memory_id, n, caller_of(request))
