"""`mnemonist mcp` (stdio) driven by the official MCP client against a running daemon."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from conftest import free_port, run_daemon
from mcp_flow import (
    TOOL_NAMES,
    check_bad_arguments,
    check_graph_tools,
    check_round_trip,
    check_tool_list,
)


@asynccontextmanager
async def stdio_session(home: Path, *args: str, env: dict[str, str] | None = None
                        ) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mnemonist.cli.main", "mcp", *args],
        env={"MNEMONIST_HOME": str(home), **(env or {})},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "mnemonist"
        assert init.instructions and "memory_search" in init.instructions
        yield session


def test_stdio_tools_round_trip_and_errors(live, tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_session(tmp_path, "--url", live.url) as session:
            await check_tool_list(session)
            await check_round_trip(session, live, "stdiotag")
            await check_bad_arguments(session, live)
            await check_graph_tools(session, live, "stdiograph")

    anyio.run(main)


def test_stdio_with_daemon_down_lists_tools_and_fails_calls(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there

    async def main() -> None:
        async with stdio_session(tmp_path, env={"MNEMONIST_URL": url}) as session:
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} == TOOL_NAMES
            for name, args in (("memory_store", {"content": "x"}),
                               ("memory_search", {"query": "x"})):
                result = await session.call_tool(name, args)
                assert result.is_error
                body = json.loads(result.content[0].text)
                assert body["error"] == "daemon_unavailable"
                assert "not running" in body["message"] and url in body["message"]

    anyio.run(main)


def test_stdio_sends_the_token(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home", {"server": {"token": "s3cret-token"}}) as daemon:
        async def main() -> None:
            async with stdio_session(tmp_path, "--url", daemon.url) as session:
                result = await session.call_tool("memory_search", {"query": "x"})
                assert result.is_error
                assert json.loads(result.content[0].text)["error"] == "unauthorized"
            async with stdio_session(tmp_path, "--url", daemon.url,
                                     env={"MNEMONIST_TOKEN": "s3cret-token"}) as session:
                result = await session.call_tool("memory_store", {"content": "token works"})
                assert not result.is_error, result.content

        anyio.run(main)
