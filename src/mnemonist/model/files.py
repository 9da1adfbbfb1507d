"""Validated inputs of the memory-file routes (`POST /api/files/sync`)."""

from __future__ import annotations

from pydantic import Field

from mnemonist.model.requests import Request


class FileSyncRequest(Request):
    force: bool = Field(
        default=False, description="read and re-chunk every file, even those that look unchanged"
    )
    root: str | None = Field(
        default=None, min_length=1, max_length=4096,
        description="sync only this known project root (a path); default: every root",
    )
