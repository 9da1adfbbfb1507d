"""`mnemonist mcp`: the MCP server on stdio, for Claude Code, Codex, OpenCode or any MCP client.

It talks to the running daemon over HTTP (the daemon stays the only writer). When the daemon is
down the server still starts and lists its tools; each call answers a tool error saying so.
"""

from __future__ import annotations

import logging

import click


@click.command("mcp")
@click.option("--url", envvar="MNEMONIST_URL", default=None,
              help="daemon URL (default: MNEMONIST_URL or the config's server section)")
@click.option("--token", envvar="MNEMONIST_TOKEN", default=None,
              help="daemon token (default: MNEMONIST_TOKEN or server.token)")
@click.option("--timeout", type=float, default=30.0, show_default=True,
              help="seconds to wait for the daemon per call")
@click.option("--agent", envvar="MNEMONIST_AGENT", default=None,
              help="read as this agent: global memories and its own (default: MNEMONIST_AGENT;"
                   " none: global memories only); stores name it as `who`")
@click.option("--user", envvar="MNEMONIST_USER", default=None,
              help="read as this user (default: MNEMONIST_USER)")
@click.option("-v", "--verbose", is_flag=True, help="log tool calls on stderr")
@click.pass_context
def mcp(ctx: click.Context, url: str | None, token: str | None, timeout: float,
        agent: str | None, user: str | None, verbose: bool) -> None:
    """Serve the memory tools over MCP on stdio (talks to the running daemon)."""
    from mnemonist.client import Client, default_url
    from mnemonist.mcp.backends import HttpBackend
    from mnemonist.mcp.server import run_stdio

    # stdout carries the protocol: logs go to stderr only
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    base, configured_token = default_url()
    url = url or (ctx.obj or {}).get("url") or base
    identity = {k: v for k, v in (("agent_id", agent), ("user_id", user)) if v}
    run_stdio(HttpBackend(Client(url, token or configured_token, timeout=timeout)),
              identity or None)
