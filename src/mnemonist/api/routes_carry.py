"""Export (`GET /api/export`, a streamed bundle), bundle import (`POST /api/import/bundle`)
and backup (`POST /api/backup`): docs/export.md."""

from __future__ import annotations

import re
from collections.abc import Iterator

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from mnemonist.api.deps import caller_of, svc
from mnemonist.api.routes_memory import body_json
from mnemonist.model.carry import BackupRequest
from mnemonist.service.bundle_import import parse_lines

router = APIRouter()


@router.get("/api/export", response_class=StreamingResponse,
            responses={200: {"content": {"application/x-ndjson": {}},
                             "description": "the bundle: a header line, then one record a line"}})
def export(request: Request, project: str | None = Query(None, min_length=1, max_length=500),
           vectors: bool = False, all_scopes: bool = False):
    lines = _chunks(svc(request).export_lines(project=project, vectors=vectors,
                                              caller=caller_of(request),
                                              all_scopes=all_scopes))
    name = "mnemonist-" + re.sub(r"[^A-Za-z0-9._-]", "_", project or "all")[:80] + ".jsonl"
    return StreamingResponse(lines, media_type="application/x-ndjson",
                             headers={"content-disposition": f'attachment; filename="{name}"'})


def _chunks(lines: Iterator[str], size: int = 65536) -> Iterator[bytes]:
    """Lines gathered into chunks of about `size` bytes (one send per chunk, not per line)."""
    buf: list[str] = []
    held = 0
    for line in lines:
        buf.append(line)
        held += len(line)
        if held >= size:
            yield "".join(buf).encode("utf-8")
            buf, held = [], 0
    if buf:
        yield "".join(buf).encode("utf-8")


def _import(raw: bytes, service) -> dict:
    return service.import_bundle(parse_lines(raw))


@router.post("/api/import/bundle")
async def import_bundle(request: Request):
    return await run_in_threadpool(_import, await request.body(), svc(request))


@router.post("/api/backup")
async def backup(request: Request):
    req = BackupRequest.model_validate(await body_json(request))
    return await run_in_threadpool(svc(request).backup, req.path, force=req.force)
