"""Document routes: accept a text or URL for ingest, list, read, chunks, delete."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from mnemonist.api.deps import actor, svc
from mnemonist.api.routes_memory import body_json, query_params
from mnemonist.model.documents import DocumentDeleteRequest, DocumentListRequest, DocumentRequest

router = APIRouter()



@router.post("/api/documents")
async def add_document(body: DocumentRequest, request: Request):
    # in a thread: it resolves the URL's host
    out = await run_in_threadpool(svc(request).documents.add_document, body)
    return JSONResponse(out, status_code=202)


@router.get("/api/documents")
def list_documents(request: Request):
    req = DocumentListRequest.model_validate(query_params(request))
    return svc(request).documents.list_documents(req)


@router.get("/api/documents/{doc_id}")
def get_document(doc_id: str, request: Request, content: bool = False):
    return svc(request).documents.get_document(doc_id, with_content=content)


@router.get("/api/documents/{doc_id}/chunks")
def document_chunks(doc_id: str, request: Request, include_deleted: bool = True):
    return svc(request).documents.document_chunks(doc_id, include_deleted=include_deleted)


@router.delete("/api/documents/{doc_id}")
async def delete_document(doc_id: str, request: Request):
    req = DocumentDeleteRequest.model_validate(
        {**query_params(request), **(await body_json(request))})
    if actor(request) is not None:  # documents are global: only who deleted it is recorded
        req = req.model_copy(update={"changed_by": actor(request)})
    return await run_in_threadpool(svc(request).documents.delete_document, doc_id, req)
