"""Streamable HTTP at /mcp on the daemon, driven by the official MCP client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import run_daemon
from mcp_flow import (
    TOOL_NAMES,
    check_bad_arguments,
    check_graph_tools,
    check_round_trip,
    check_tool_list,
)
from mnemonist.mcp.backends import ServiceBackend
from mnemonist.mcp.server import build_server
from mnemonist.mcp.tools import BY_NAME
from mnemonist.model.graph import ExpandRequest, ExpandSessionRequest, ImpactRequest
from mnemonist.model.memory import MEMORY_TYPES
from mnemonist.model.requests import (
    Caller,
    ForgetRequest,
    ListRequest,
    MemoryPatch,
    RecallRequest,
    RememberRequest,
)

pytestmark = pytest.mark.both_stores


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        assert init.server_info.name == "mnemonist"
        yield session


def test_http_tools_round_trip_and_errors(live) -> None:
    async def main() -> None:
        async with http_session(live.url) as session:
            await check_tool_list(session)
            await check_round_trip(session, live, "httptag")
            await check_bad_arguments(session, live)
            await check_graph_tools(session, live, "httpgraph")

    anyio.run(main)


def test_http_modern_protocol_client(live) -> None:
    """The SDK's high-level Client negotiates the newest protocol (server/discover)."""
    async def main() -> None:
        async with httpx2.AsyncClient(timeout=60) as http, Client(
            streamable_http_client(f"{live.url}/mcp", http_client=http)
        ) as client:
            listed = await client.list_tools()
            assert {t.name for t in listed.tools} == TOOL_NAMES
            stored = await client.call_tool("memory_store", {"content": "modern clients work"})
            assert not stored.is_error and stored.structured_content["created"] is True
            got = await client.call_tool("memory_get", {"id": stored.structured_content["id"]})
            assert got.structured_content["content"] == "modern clients work"
            missing = await client.call_tool("memory_history", {"id": "nope"})
            assert missing.is_error and "no memory nope" in missing.content[0].text

    anyio.run(main)


def test_http_requires_the_token_and_a_local_host(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home", {"server": {"token": "s3cret-token"}}) as daemon:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}
        headers = {"Accept": "application/json, text/event-stream"}
        resp = httpx.post(f"{daemon.url}/mcp", json=init, headers=headers)
        assert resp.status_code == 401 and resp.json()["error"] == "unauthorized"
        auth = {**headers, "Authorization": "Bearer s3cret-token"}
        resp = httpx.post(f"{daemon.url}/mcp", json=init, headers=auth)
        assert resp.status_code == 200, resp.text
        assert resp.json()["result"]["serverInfo"]["name"] == "mnemonist"
        resp = httpx.post(f"{daemon.url}/mcp", json=init,
                          headers={**auth, "Host": "attacker.example"})
        assert resp.status_code == 421  # DNS rebinding protection on a loopback daemon
        assert httpx.get(f"{daemon.url}/health").status_code == 200  # still open

        async def main() -> None:
            async with http_session(daemon.url, "s3cret-token") as session:
                stored = await session.call_tool("memory_store", {"content": "behind a token"})
                assert not stored.is_error
                assert stored.structured_content["created"] is True

        anyio.run(main)


def test_existing_routes_still_served_and_mcp_is_post_only(live) -> None:
    assert live.http.get("/health").json()["status"] in ("ok", "degraded")
    assert "/mcp" not in live.http.get("/openapi.json").json()["paths"]
    # stateless: no standing SSE stream to GET (it would hang), no session to DELETE
    for method in ("GET", "DELETE"):
        resp = live.http.request(method, "/mcp", headers={"Accept": "text/event-stream"},
                                 timeout=5)
        assert resp.status_code == 405


MODELS: dict[str, Any] = {
    "memory_search": RecallRequest,
    "memory_store": RememberRequest,
    "memory_list": ListRequest,
    "memory_modify": MemoryPatch,
    "memory_forget": ForgetRequest,
    "knowledge_expand": ExpandRequest,
    "knowledge_expand_session": ExpandSessionRequest,
    "graph_impact": ImpactRequest,
}


def _bounds(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in [schema, *schema.get("anyOf", [])]:
        for key in ("minimum", "maximum", "minLength", "maxLength", "enum"):
            if key in part:
                out[key] = part[key]
    return out


@pytest.mark.parametrize("tool", sorted(MODELS))
def test_every_argument_is_a_field_of_the_request(tool: str) -> None:
    """Each tool argument is forwarded to the request field of the same name, with the same
    ranges and enums as the model that validates it."""
    model = MODELS[tool]
    fields = model.model_json_schema(by_alias=False)["properties"]
    if tool == "memory_modify":  # the reader's identity travels beside the patch
        fields = {**Caller.model_json_schema(by_alias=False)["properties"], **fields}
    for name, spec in BY_NAME[tool].input_schema["properties"].items():
        assert name in fields, f"{tool}.{name} is not a field of {model.__name__}"
        mine, theirs = _bounds(spec), _bounds(fields[name])
        for key in ("minimum", "maximum", "enum"):
            assert mine.get(key) == theirs.get(key), (tool, name, key)
        if theirs.get("maxLength", 2_000_000) < 2_000_000:  # below the global string cap
            assert mine.get("maxLength") == theirs["maxLength"], (tool, name)
    assert set(BY_NAME["memory_store"].input_schema["properties"]["type"]["enum"]) == set(
        MEMORY_TYPES)


class _ExplodingPart:
    """A part of the service whose every method fails the way a bug would."""

    def __getattr__(self, name: str):
        def boom(*_args: Any, **_kwargs: Any) -> Any:
            raise RuntimeError(f"{name} exploded")
        return boom


class _Exploding:
    """A service whose every part (`service.reads`, ...) is an `_ExplodingPart`."""

    def __getattr__(self, part: str) -> _ExplodingPart:
        return _ExplodingPart()


class _BrokenBackend(ServiceBackend):
    async def history(self, memory_id: str, caller: Any = None) -> dict[str, Any]:
        raise KeyError(memory_id)  # outside the backend's own guard


def test_failures_are_tool_errors_never_crashes() -> None:
    async def main() -> None:
        async with Client(build_server(_BrokenBackend(_Exploding()))) as client:
            result = await client.call_tool("memory_search", {"query": "x"})
            assert result.is_error
            assert json.loads(result.content[0].text) == {
                "error": "internal_error", "message": "RuntimeError: recall exploded"}
            result = await client.call_tool("memory_history", {"id": "abc"})
            assert result.is_error
            assert json.loads(result.content[0].text)["error"] == "internal_error"
            result = await client.call_tool("memory_store", {"content": 3})
            assert result.is_error  # validated before the service is reached
            assert json.loads(result.content[0].text)["message"].startswith("content:")

    anyio.run(main)
