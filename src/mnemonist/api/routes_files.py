"""Memory-file routes: sync now, and list what is indexed."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from mnemonist.api.deps import svc
from mnemonist.api.routes_memory import body_json
from mnemonist.model.files import FileSyncRequest

router = APIRouter()


@router.post("/api/files/sync")
async def sync_files(request: Request):
    req = FileSyncRequest.model_validate(await body_json(request))
    return await run_in_threadpool(
        svc(request).files.sync_files, force=req.force, root=req.root, reason="manual"
    )


@router.get("/api/files")
def list_files(request: Request):
    return svc(request).files.list_files()
