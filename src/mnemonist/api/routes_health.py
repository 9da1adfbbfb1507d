"""GET /health and GET /api/status."""

from __future__ import annotations

from fastapi import APIRouter, Request

from mnemonist.api.deps import svc

router = APIRouter()


@router.get("/health")
def health(request: Request):
    return svc(request).health.health()


@router.get("/api/status")
def status(request: Request):
    return svc(request).health.status()
