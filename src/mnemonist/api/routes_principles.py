"""Principles: the ones the principles pass proposed, and a person's review of each
(`service/principles.py`). `POST /api/repair/principles` runs the pass now."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query, Request
from pydantic import Field

from mnemonist.api.deps import svc
from mnemonist.model.requests import MAX_OFFSET
from mnemonist.model.requests import Request as Body

router = APIRouter()


class ReviewPrincipleRequest(Body):
    """POST /api/principles/{id}/confirm or /reject: why, optionally."""

    reason: str | None = Field(default=None, max_length=2000)


@router.get("/api/principles")
def list_principles(request: Request,
                    status: Literal["proposed", "confirmed", "rejected"] | None = None,
                    limit: int = Query(50, ge=1, le=500),
                    offset: int = Query(0, ge=0, le=MAX_OFFSET)):
    """Principles, newest first (every status unless `status` is given), with counts."""
    return svc(request).curation.list_principles(status, limit, offset)


@router.post("/api/principles/{principle_id}/confirm")
def confirm_principle(principle_id: str, request: Request,
                      body: ReviewPrincipleRequest | None = None):
    """Confirm a proposed principle: its relations to its source entities become stated."""
    return svc(request).curation.confirm_principle(principle_id, body.reason if body else None)


@router.post("/api/principles/{principle_id}/reject")
def reject_principle(principle_id: str, request: Request,
                     body: ReviewPrincipleRequest | None = None):
    """Reject a principle: its entity goes; its group of entities is never proposed again."""
    return svc(request).curation.reject_principle(principle_id, body.reason if body else None)
