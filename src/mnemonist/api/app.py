"""The HTTP face: FastAPI app, JSON errors, optional bearer-token auth."""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from mnemonist import __version__
from mnemonist.api import (
    routes_documents,
    routes_files,
    routes_health,
    routes_hooks,
    routes_import,
    routes_memory,
    routes_pipeline,
    routes_repair,
    routes_sessions,
)
from mnemonist.mcp.backends import ServiceBackend
from mnemonist.mcp.server import McpHttpEndpoint
from mnemonist.service import ServiceError

log = logging.getLogger(__name__)

OPEN_PATHS = {"/health"}


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


def error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status)


def create_app(daemon: Any) -> FastAPI:
    # MCP over streamable HTTP at /mcp, on the in-process service (behind the token middleware)
    mcp_endpoint = McpHttpEndpoint(ServiceBackend(daemon.service), host=daemon.config.server.host)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp_endpoint.run():
            yield

    app = FastAPI(title="mnemonist", version=__version__,
                  description="Long-term memory for AI agents.", lifespan=lifespan)
    app.state.daemon = daemon
    app.state.service = daemon.service
    token = daemon.config.server.token

    @app.middleware("http")
    async def auth(request: Request, call_next):
        if token and request.url.path not in OPEN_PATHS:
            header = request.headers.get("authorization", "")
            given = header[7:] if header.lower().startswith("bearer ") else ""
            given = given or request.headers.get("x-mnemonist-token", "")
            if not hmac.compare_digest(given.encode(), token.encode()):
                return error(401, "unauthorized", "a valid bearer token is required")
        return await call_next(request)

    @app.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError):
        return JSONResponse(exc.to_dict(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError):
        return error(400, "invalid_request", describe_validation(list(exc.errors())))

    @app.exception_handler(ValidationError)
    async def invalid_model(_: Request, exc: ValidationError):
        return error(400, "invalid_request", describe_validation(list(exc.errors())))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def crash(_: Request, exc: Exception):
        log.exception("unhandled error")
        return error(500, "internal_error", f"{type(exc).__name__}: {exc}")

    app.include_router(routes_health.router)
    app.include_router(routes_import.router)
    app.include_router(routes_memory.router)
    app.include_router(routes_documents.router)
    app.include_router(routes_files.router)
    app.include_router(routes_repair.router)
    app.include_router(routes_hooks.router)
    app.include_router(routes_sessions.router)
    app.include_router(routes_pipeline.router)
    # stateless: no SSE stream to GET, no session to DELETE (405, as the MCP spec allows)
    app.router.add_route("/mcp", mcp_endpoint, methods=["POST"], include_in_schema=False)
    return app
