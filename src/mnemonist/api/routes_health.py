"""GET /health and GET /api/status."""

from __future__ import annotations

from fastapi import APIRouter, Request

router = APIRouter()


@router.get("/health")
def health(request: Request):
    return request.app.state.service.health()


@router.get("/api/status")
def status(request: Request):
    return request.app.state.service.status()
