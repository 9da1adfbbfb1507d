"""Errors the service raises; every face maps them to its own shape (HTTP: status + JSON).

The storage's own faults pass through the service unchanged, and the faces catch them by the
names re-exported here (a face imports no store module: docs/architecture.md)."""

from __future__ import annotations

from typing import Any

from mnemonist.store.backend import StorageNotReady
from mnemonist.store.db import (
    STORAGE_FULL,
    STORAGE_READ_ONLY,
    STORAGE_UNAVAILABLE,
    StorageFault,
    StorageUnavailable,
    storage_fault_kind,
)

__all__ = [
    "STORAGE_FULL",
    "STORAGE_READ_ONLY",
    "STORAGE_UNAVAILABLE",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "NotFound",
    "NotOnPostgres",
    "ServiceError",
    "StorageFault",
    "StorageNotReady",
    "StorageUnavailable",
    "Unavailable",
    "storage_fault_kind",
]


class ServiceError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.details}


class BadRequest(ServiceError):
    status = 400
    code = "invalid_request"


class Forbidden(ServiceError):
    """The request's token may not do this (another identity, another scope, an owner's
    action): docs/security.md#tokens."""

    status = 403
    code = "forbidden"


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class Unavailable(ServiceError):
    status = 503
    code = "unavailable"


class NotOnPostgres(ServiceError):
    """What the PostgreSQL store does not do yet (docs/postgres.md lists it)."""

    status = 501
    code = "not_on_postgresql"
