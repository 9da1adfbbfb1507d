"""Request bodies of backup (export and bundle import take query parameters and JSON lines)."""

from __future__ import annotations

from pydantic import Field, model_validator

from mnemonist.model.requests import Request


class BackupRequest(Request):
    """A backup goes into `<home>/backups/`; the body names the file, never a path (a request
    body does not choose which file the daemon writes)."""

    name: str | None = Field(
        default=None, min_length=1, max_length=200,
        description="file name of the backup in <home>/backups/ (letters, digits, '.', '_',"
                    " '-'; default memories-<UTC time>.db): a name, not a path",
    )
    force: bool = Field(
        default=False,
        description="replace a previous backup of that name (never any other file)",
    )
    download: bool = Field(
        default=False,
        description="answer with the backup's bytes (application/vnd.sqlite3) instead of"
                    " keeping it: `mnemonist backup PATH` writes PATH itself from them",
    )

    @model_validator(mode="after")
    def _download_alone(self) -> BackupRequest:
        if self.download and (self.name is not None or self.force):
            raise ValueError("download takes no name and no force: the copy is sent, not kept")
        return self
