"""The daemon's web app: the JSON API (`api/`), with the dashboard (`dashboard/`) at `/` and
the MCP tools (`mcp/`) over streamable HTTP at `/mcp`, all behind the API's one boundary.

The dashboard and MCP faces build on the API (its dependencies, its token checks), so the API
cannot import them: they are put together here, above all three, and `daemon.py` serves this.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from mnemonist.api.app import create_api
from mnemonist.api.in_flight import InFlight
from mnemonist.dashboard import install_dashboard
from mnemonist.mcp.backends import ServiceBackend
from mnemonist.mcp.server import McpHttpEndpoint
from mnemonist.providers.embedding.request_gate import REQUESTS

__all__ = ["create_app"]


def create_app(daemon: Any, *, bind_host: str | None = None) -> FastAPI:
    """The daemon's web app; `bind_host` is the address the server actually binds (its Host
    allow-list follows it)."""
    # MCP over streamable HTTP at /mcp, on the in-process service, behind the same boundary
    mcp_endpoint = McpHttpEndpoint(ServiceBackend(daemon.service))

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp_endpoint.run():
            yield

    app = create_api(daemon, bind_host=bind_host, lifespan=lifespan)
    # outermost: background embedding yields while a request runs
    app.add_middleware(InFlight, gate=REQUESTS)
    # stateless: no SSE stream to GET, no session to DELETE (405, as the MCP spec allows)
    # an ASGI app: Starlette's Route serves a non-function endpoint as one, while its type
    # names only request handlers
    app.router.add_route("/mcp", mcp_endpoint, methods=["POST"],  # type: ignore[arg-type]
                         include_in_schema=False)
    install_dashboard(app)  # the web dashboard at / and /ui/..., and /docs
    return app
