"""Export (`GET /api/export`, a streamed bundle), bundle import (`POST /api/import/bundle`)
and backup (`POST /api/backup`): docs/export.md."""

from __future__ import annotations

import re
from collections.abc import Iterator

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, StreamingResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from mnemonist.api.deps import caller_of, require_owner, svc
from mnemonist.api.routes_memory import body_json
from mnemonist.model.answers_admin import BundleImportAnswer
from mnemonist.model.carry import BackupRequest
from mnemonist.service import BadRequest, MemoryService
from mnemonist.service.bundle_import import parse_lines

router = APIRouter()


@router.get("/api/export", response_class=StreamingResponse,
            responses={200: {"content": {"application/x-ndjson": {}},
                             "description": "the bundle: a header line, then one record a line"}})
def export(request: Request, project: str | None = Query(None, min_length=1, max_length=500),
           vectors: bool = False, all_scopes: bool = False):
    if all_scopes:
        require_owner(request, "an export of every scope (all_scopes)")
    lines = _chunks(svc(request).carry.export_lines(project=project, vectors=vectors,
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


def _import(raw: bytes, service: MemoryService) -> BundleImportAnswer:
    return service.carry.import_bundle(parse_lines(raw))


@router.post("/api/import/bundle")
async def import_bundle(request: Request):
    require_owner(request, "a bundle import (it writes every scope and its history)")
    return await run_in_threadpool(_import, await request.body(), svc(request))


BACKUP_MEDIA_TYPE = "application/vnd.sqlite3"


@router.post("/api/backup", responses={200: {
    "description": "the backup written into <home>/backups/ (JSON), or with `download` its"
                   " bytes", "content": {"application/json": {}, BACKUP_MEDIA_TYPE: {}}}})
async def backup(request: Request):
    require_owner(request, "a backup (a copy of every scope)")
    data = await body_json(request)
    if "path" in data:
        raise BadRequest(
            "path is not accepted: the daemon writes backups only into <home>/backups/ (give"
            " `name`, a file name); `mnemonist backup PATH` writes a copy anywhere you ask",
            code="path_not_allowed", field="path")
    req = BackupRequest.model_validate(data)
    service = svc(request)
    if not req.download:
        return await run_in_threadpool(service.carry.backup, req.name, force=req.force)
    path, made = await run_in_threadpool(service.carry.backup_for_download)
    headers = {f"x-mnemonist-backup-{k.replace('_', '-')}": str(made[k])
               for k in ("pages", "memories", "took_ms")}
    headers["x-mnemonist-database"] = str(service.core.db.path)
    return FileResponse(path, media_type=BACKUP_MEDIA_TYPE, headers=headers,
                        background=BackgroundTask(path.unlink, missing_ok=True))
