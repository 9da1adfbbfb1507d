"""How the HTTP face answers failures: every error is `{"error", "message"}` JSON.

Bad input is a 400 naming the field; a full or read-only disk is 507 `storage_full` / 503
`storage_read_only` (and shows in `/health` until a write succeeds again); a PostgreSQL server
that does not answer is 503 `storage_unavailable` at once, with `Retry-After` and without the
driver's text (it names hosts; the log has it); anything else is a
500 `internal_error` that carries `Connection: close`, so that a client never reuses a
connection the server is about to drop.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mnemonist.api.boundary import send_json
from mnemonist.service import ServiceError
from mnemonist.service.errors import (
    STORAGE_FULL,
    STORAGE_READ_ONLY,
    STORAGE_UNAVAILABLE,
    StorageFault,
    storage_fault_kind,
)

log = logging.getLogger(__name__)

STORAGE_ANSWERS = {
    STORAGE_FULL: (507, "the disk holding the database is full: nothing was written (free"
                        " space, then retry)"),
    STORAGE_READ_ONLY: (503, "the database is read-only: nothing was written (check the"
                               " permissions and the file system of the database)"),
    STORAGE_UNAVAILABLE: (503, "the database does not answer: nothing was read or written;"
                                " retry shortly (the daemon reconnects on its own)"),
}
#: seconds a client should wait before retrying a `storage_unavailable`
RETRY_AFTER_S = 1


def storage_body(kind: str, detail: str) -> tuple[int, dict[str, Any], dict[str, str] | None]:
    """Status, JSON body and headers for a storage fault of `kind`."""
    status, message = STORAGE_ANSWERS[kind]
    if kind == STORAGE_UNAVAILABLE:
        return status, {"error": kind, "message": message}, {"Retry-After": str(RETRY_AFTER_S)}
    return status, {"error": kind, "message": message, "detail": detail}, None


def describe_validation(errors: list[Any]) -> str:
    """One readable line per problem, naming the field: `limit: Input should be ≤ 200`."""
    parts = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ())]
        if loc and loc[0] in ("body", "query", "path", "header"):
            loc = loc[1:]  # where it came from, not a field: a field may be called "query"
        field = ".".join(loc) or "body"
        msg = err.get("msg", "invalid")
        if err.get("type") == "extra_forbidden":
            msg = "unknown field"
        elif err.get("type") == "json_invalid":
            field, msg = "body", "is not valid JSON"
        elif err.get("type") == "missing":
            msg = "is required"
        parts.append(f"{field}: {msg}")
    return "; ".join(parts) or "invalid request"


def error(status: int, code: str, message: str, headers: dict[str, str] | None = None,
          **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status,
                        headers=headers)


def storage_error(exc: StorageFault) -> JSONResponse:
    status, body, headers = storage_body(exc.kind, exc.detail)
    return JSONResponse(body, status_code=status, headers=headers)


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError):
        return JSONResponse(exc.to_dict(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError):
        return error(400, "invalid_request", describe_validation(list(exc.errors())))

    @app.exception_handler(ValidationError)
    async def invalid_model(_: Request, exc: ValidationError):
        return error(400, "invalid_request", describe_validation(list(exc.errors())))

    @app.exception_handler(StorageFault)
    async def storage(_: Request, exc: StorageFault):
        return storage_error(exc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        # the router's own headers stay: a 405 says which methods the path takes (`Allow`)
        headers = dict(exc.headers or {})
        message = str(exc.detail)
        if exc.status_code == 405 and headers.get("Allow"):
            message = f"{request.method} is not allowed here; allowed: {headers['Allow']}"
        return error(exc.status_code, code, message, headers=headers or None)


class CrashGuard:
    """Turns an unhandled exception into a 500 JSON answer with `Connection: close`.

    Starlette's own last-resort handler answers and then re-raises, and the server then drops
    the keep-alive connection without saying so; the next request of a client that reuses it
    fails. Answering here ends the exchange cleanly."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started:
                raise  # half an answer is out: only closing the connection can end it
            kind = storage_fault_kind(exc)  # a full or read-only disk outside a transaction
            if kind is not None:
                status, body, _ = storage_body(kind, str(exc))
                await send_json(send, status, body)
                return
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            await send_json(send, 500, {"error": "internal_error",
                                        "message": f"{type(exc).__name__}: {exc}"}, close=True)
