"""The HTTP face: FastAPI app behind the trust boundary (`boundary.py`), JSON errors
(`errors.py`) and an OpenAPI document that says what the routes really answer (`openapi.py`).

`create_api` builds the JSON API alone; `mnemonist/web.py` adds the dashboard, `/mcp` and the
in-flight count to it (those faces import this one, so it imports neither of them)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI

from mnemonist import __version__
from mnemonist.api import (
    routes_carry,
    routes_documents,
    routes_files,
    routes_gates,
    routes_graph,
    routes_health,
    routes_hooks,
    routes_import,
    routes_memory,
    routes_pipeline,
    routes_principles,
    routes_repair,
    routes_sessions,
)
from mnemonist.api.activity import NoteActivity
from mnemonist.api.boundary import Boundary, BoundaryPolicy, allowed_hosts_of
from mnemonist.api.errors import CrashGuard, describe_validation, error, install_handlers
from mnemonist.api.openapi import install_openapi
from mnemonist.api.tokens import TokenAuthority

__all__ = ["create_api", "describe_validation", "error", "policy_for"]


def policy_for(daemon: Any, bind_host: str | None = None) -> BoundaryPolicy:
    """The boundary of a daemon bound to `bind_host` (default: the configured host)."""
    server = daemon.config.server
    documents = daemon.config.memory.pipeline_v2.documents
    return BoundaryPolicy(
        bind_host=bind_host or server.host,
        token=server.token,
        allowed_hosts=allowed_hosts_of(server.allowed_hosts),
        max_body_bytes=server.max_body_bytes,
        # a document's text may reach its own limit even as escaped JSON
        body_limits={"/api/documents": 2 * documents.max_content_bytes + 65536},
    )


def create_api(daemon: Any, *, bind_host: str | None = None,
               lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]] | None = None,
               ) -> FastAPI:
    """The JSON API of `daemon` behind its boundary; `bind_host` is the address the server
    actually binds (its Host allow-list follows it). The daemon's whole web app is
    `mnemonist.web.create_app`."""
    # /docs is the dashboard's offline Swagger UI; ReDoc (CDN-only) is not served
    app = FastAPI(title="mnemonist", version=__version__,
                  description="Long-term memory for AI agents.", lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    app.state.daemon = daemon
    app.state.service = daemon.service
    app.state.policy = policy_for(daemon, bind_host)
    app.state.authority = TokenAuthority(daemon.db, app.state.policy,
                                         daemon.config.server.daemon_name())
    install_handlers(app)
    # innermost: a request the boundary refuses does not count (sleep replay's idle clock)
    app.add_middleware(NoteActivity,
                       note=getattr(getattr(daemon, "sleep_replay", None), "note_activity", None))
    app.add_middleware(CrashGuard)  # inside the boundary: refusals never reach it
    app.add_middleware(Boundary, policy=app.state.policy, authority=app.state.authority)

    app.include_router(routes_health.router)
    app.include_router(routes_import.router)
    app.include_router(routes_memory.router)
    app.include_router(routes_documents.router)
    app.include_router(routes_files.router)
    app.include_router(routes_gates.router)  # before repair: /api/repair/{name}
    app.include_router(routes_repair.router)
    app.include_router(routes_principles.router)
    app.include_router(routes_hooks.router)
    app.include_router(routes_sessions.router)
    app.include_router(routes_pipeline.router)
    app.include_router(routes_carry.router)
    app.include_router(routes_graph.router)
    install_openapi(app)
    return app
