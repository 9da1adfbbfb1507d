"""Request bodies of backup (export and bundle import take query parameters and JSON lines)."""

from __future__ import annotations

from pydantic import Field

from mnemonist.model.requests import Request


class BackupRequest(Request):
    path: str = Field(
        min_length=1, max_length=4096,
        description="absolute path of the backup file to write (its folder must exist)",
    )
    force: bool = Field(default=False, description="replace the file when it already exists")
