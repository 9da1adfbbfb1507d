"""Validated inputs of the document routes (POST, list and DELETE of /api/documents)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from mnemonist.model.requests import MAX_OFFSET, Request, Tags, _clean_tags

DocumentStatus = Literal[
    "pending", "extracting", "chunking", "embedding", "indexing", "done", "failed", "deleted"
]


class DocumentRequest(Request):
    """Exactly one of `content` (raw text) or `url`; the service checks which."""

    content: str | None = Field(default=None, max_length=104_857_600)
    url: str | None = Field(default=None, min_length=1, max_length=8192)
    title: str | None = Field(default=None, max_length=500)
    project: str | None = Field(default=None, max_length=500)
    tags: Tags = None
    who: str | None = Field(default=None, max_length=200)

    _tags = field_validator("tags")(lambda cls, v: _clean_tags(v))


class DocumentListRequest(Request):
    limit: int = Field(default=50, ge=1, le=500)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    status: DocumentStatus | None = None
    project: str | None = None
    include_deleted: bool = False


class DocumentDeleteRequest(Request):
    reason: str | None = Field(default=None, max_length=2000)
    changed_by: str | None = Field(default=None, max_length=200)
    force: bool = Field(default=False, description="also delete chunks a user has pinned")
