"""Errors the service raises; every face maps them to its own shape (HTTP: status + JSON)."""

from __future__ import annotations

from typing import Any


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
