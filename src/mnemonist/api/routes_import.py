"""POST /api/memory/import (JSON object, JSON array or JSONL) and neighbours in a source."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from mnemonist.model.requests import ImportRequest
from mnemonist.service import BadRequest

router = APIRouter()


def parse_import_body(raw: bytes) -> dict[str, Any]:
    """{"items": [...], defaults...}, a JSON array of items, or one JSON object per line."""
    text = raw.decode("utf-8", errors="strict").strip()
    if not text:
        raise BadRequest("body is empty: send items as a JSON array, an object with"
                         " `items`, or JSON lines", code="invalid_json")
    try:
        data = json.loads(text)
    except ValueError:
        items = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
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


@router.post("/api/memory/import")
async def import_memories(request: Request):
    try:
        body = parse_import_body(await request.body())
    except UnicodeDecodeError as exc:
        raise BadRequest("body is not UTF-8", code="invalid_json") from exc
    req = ImportRequest.model_validate(body)
    return await run_in_threadpool(request.app.state.service.import_memories, req)


@router.get("/api/memory/{memory_id}/neighbours")
def neighbours(memory_id: str, request: Request, n: int = 2):
    if not 0 <= n <= 50:
        raise BadRequest("n must be between 0 and 50", field="n")
    return request.app.state.service.neighbours(memory_id, n)
