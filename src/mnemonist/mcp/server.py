"""The MCP server (official SDK, low-level `Server`) over the tools of `tools.py`.

Two transports share it: `run_stdio(backend)` for `mnemonist mcp` (an HTTP backend talking to the
running daemon), and `McpHttpEndpoint`, the ASGI app the daemon mounts at `/mcp` (streamable
HTTP, stateless, JSON answers, over the in-process service, behind the daemon's boundary).

A result's text is its JSON answer on one line with `<`, `>` and every invisible character
escaped (`json_text`): the same data for a client that parses it, and nothing a model reading
it pasted into its context could take as a tag, a `<<<` fence or a line of its own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from mnemonist import __version__
from mnemonist.api.tokens import principal_of
from mnemonist.mcp.backends import Backend, ToolError
from mnemonist.mcp.tools import BY_NAME, INSTRUCTIONS, TOOLS, ToolSpec, call_tool
from mnemonist.service.principal import Principal

log = logging.getLogger(__name__)

#: the identity the /mcp request's X-Mnemonist-Agent / X-Mnemonist-User headers name
REQUEST_IDENTITY: ContextVar[dict[str, Any] | None] = ContextVar("mcp_identity", default=None)
#: the /mcp request's token where named tokens are in use (`service/principal.py`)
REQUEST_PRINCIPAL: ContextVar[Principal | None] = ContextVar("mcp_principal", default=None)
IDENTITY_HEADERS = {b"x-mnemonist-agent": "agent_id", b"x-mnemonist-user": "user_id"}


def mcp_tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def json_text(data: Any) -> str:
    """`data` as one line of JSON that holds no `<` or `>` and no control, format or separator
    character raw (each as its `\\uXXXX` escape): `json.loads` reads back the same data."""
    text = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else json.dumps(ch)[1:-1] for ch in text)


def _text(data: Any) -> types.TextContent:
    return types.TextContent(type="text", text=json_text(data))


async def run_tool(backend: Backend, name: str, arguments: dict[str, Any] | None,
                   identity: dict[str, Any] | None = None,
                   principal: Principal | None = None) -> types.CallToolResult:
    """One tool call as an MCP result: the daemon's JSON answer, or a tool error carrying its
    error code and message (`isError`); never an exception. `identity`: who the server
    reads as where the call names nobody; `principal`: the request's token, which every
    identity is held against."""
    try:
        data = await call_tool(backend, name, arguments, identity, principal)
    except ToolError as exc:
        log.info("MCP tool %s failed: %s", name, exc)
        return types.CallToolResult(content=[_text(exc.to_dict())], is_error=True)
    except Exception as exc:  # a bug in the tool layer still answers, as a tool error
        log.exception("MCP tool %s crashed", name)
        err = ToolError("internal_error", f"{type(exc).__name__}: {exc}")
        return types.CallToolResult(content=[_text(err.to_dict())], is_error=True)
    return types.CallToolResult(content=[_text(data)], structured_content=data)


def build_server(backend: Backend, identity: dict[str, Any] | None = None) -> Server[Any]:
    """`identity`: the agent / user this server reads as (`mnemonist mcp --agent/--user`);
    on /mcp the request's identity headers name it instead."""
    tools = [mcp_tool(spec) for spec in TOOLS]

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await run_tool(backend, params.name, params.arguments,
                              identity or REQUEST_IDENTITY.get(), REQUEST_PRINCIPAL.get())

    def input_schema(name: str) -> dict[str, Any] | None:
        spec = BY_NAME.get(name)
        return spec.input_schema if spec else None

    return Server(
        "mnemonist",
        version=__version__,
        title="mnemonist memory",
        description="Long-term memory for AI agents.",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call,
    )


# -- stdio -------------------------------------------------------------------------------------


async def serve_stdio(backend: Backend, identity: dict[str, Any] | None = None) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(backend, identity)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(backend: Backend, identity: dict[str, Any] | None = None) -> None:
    import anyio

    anyio.run(serve_stdio, backend, identity)


# -- streamable HTTP on the daemon ---------------------------------------------------------------

#: Host and Origin are checked by the daemon's trust boundary (`api/boundary.py`), the same
#: policy as every other route, from the address actually bound; the SDK's own check knows
#: neither that address nor `server.allowed_hosts`, so it stays off here.
NO_SDK_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)


class McpHttpEndpoint:
    """The ASGI app for `/mcp`. Enter `run()` in the web app's lifespan: it owns the SDK's
    session manager (a fresh one per run, as the SDK requires)."""

    def __init__(self, backend: Backend) -> None:
        self.server = build_server(backend)
        self.security = NO_SDK_HOST_CHECK
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        manager = StreamableHTTPSessionManager(
            app=self.server,
            stateless=True,  # tools only: no server-to-client requests, survives restarts
            json_response=True,
            security_settings=self.security,
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:
            response = JSONResponse(
                {"error": "unavailable", "message": "the MCP endpoint is not running"},
                status_code=503,
            )
            await response(scope, receive, send)
            return
        named = {IDENTITY_HEADERS[k]: v.decode("latin-1").strip()
                 for k, v in scope.get("headers", ()) if k.lower() in IDENTITY_HEADERS}
        # the tool calls of this request read them
        token = REQUEST_IDENTITY.set(named or None)
        who = REQUEST_PRINCIPAL.set(principal_of(scope))  # found by the daemon's boundary
        try:
            await manager.handle_request(scope, receive, send)
        finally:
            REQUEST_PRINCIPAL.reset(who)
            REQUEST_IDENTITY.reset(token)
