"""`mnemonist hook <event>` (what harness hooks run) and `mnemonist connect | disconnect
claude-code` (the one-command connector). Imports stay light: the hook path loads neither
FastAPI nor the embedding model."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

HARNESSES = ("claude-code",)


@click.command(
    "hook",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("event", required=False, default="")
@click.option("--timeout", "timeout_ms", type=int, default=None,
              help="hard deadline in ms (default hooks.timeoutMs, 5000)")
@click.option("--format", "fmt", default="claude-code",
              help="claude-code (JSON hookSpecificOutput) | text | json")
@click.option("--harness", default="claude-code", help="harness name stored with the session")
@click.pass_context
def hook(ctx: click.Context, event: str, timeout_ms: int | None, fmt: str,
         harness: str) -> None:
    """Run a harness hook: session-start, user-prompt-submit, pre-compaction (pre-compact),
    compaction-complete, session-end. Reads the hook JSON on stdin; always exits 0."""
    from mnemonist.hooks.runner import emit, load_settings, log_line, run_hook

    url = (ctx.obj or {}).get("url")
    try:
        settings = load_settings(url, timeout_ms)
    except Exception as exc:  # even a broken installation must not block the agent
        click.echo(f"mnemonist hook: {exc}", err=True)
        return
    try:
        out = run_hook(event, settings, fmt=fmt, harness=harness)
    except Exception as exc:
        log_line(settings, event, f"hook failed: {type(exc).__name__}: {exc}")
        out = ""
    if out:
        emit(out)


def _paths(settings: Path | None, mcp_config: Path | None) -> tuple[Path, Path, Path]:
    from mnemonist.hooks.claude_code import default_mcp_config_path, default_settings_path
    from mnemonist.settings import home_dir

    return (settings or default_settings_path(), mcp_config or default_mcp_config_path(),
            home_dir() / "connectors" / "claude-code.json")


def _hook_timeout_s() -> int:
    """Claude Code's own timeout for our hooks: our deadline plus room to start Python."""
    from mnemonist.settings import ConfigError, Paths, home_dir, load_config

    try:
        ms = load_config(Paths(home_dir())).hooks.timeout_ms
    except ConfigError:
        ms = 5000
    return math.ceil(ms / 1000) + 5


_settings_opt = click.option("--settings", "settings_path", type=click.Path(path_type=Path),
                             default=None, help="Claude Code settings (~/.claude/settings.json)")
_mcp_opt = click.option("--mcp-config", "mcp_path", type=click.Path(path_type=Path),
                        default=None, help="where the MCP server goes (~/.claude.json)")


@click.command("connect")
@click.argument("harness", type=click.Choice(HARNESSES))
@_settings_opt
@_mcp_opt
@click.option("--no-mcp", is_flag=True, help="only the hooks, no MCP server")
@click.option("--command", "executable", default=None,
              help="the mnemonist program the hooks run (default: this installation's)")
def connect(harness: str, settings_path: Path | None, mcp_path: Path | None, no_mcp: bool,
            executable: str | None) -> None:
    """Add mnemonist's hooks and MCP server to a harness (idempotent)."""
    from mnemonist.hooks import claude_code as cc
    from mnemonist.hooks.jsonfile import SettingsError

    settings, mcp, record = _paths(settings_path, mcp_path)
    exe = executable or cc.mnemonist_executable()
    try:
        changes = cc.connect_hooks(settings, exe, _hook_timeout_s(), record)
        click.echo(f"{settings}: " + (", ".join(changes) if changes else "hooks already there"))
        if not no_mcp:
            done = cc.connect_mcp(mcp, exe, record)
            click.echo(f"{mcp}: " + (", ".join(done) if done else "MCP server already there"))
    except (SettingsError, OSError) as exc:
        click.echo(f"mnemonist: {exc}", err=True)
        sys.exit(1)
    click.echo("Restart Claude Code to load them; the daemon must run (mnemonist serve).")


@click.command("disconnect")
@click.argument("harness", type=click.Choice(HARNESSES))
@_settings_opt
@_mcp_opt
@click.option("--no-mcp", is_flag=True, help="leave the MCP server registered")
def disconnect(harness: str, settings_path: Path | None, mcp_path: Path | None,
               no_mcp: bool) -> None:
    """Remove exactly what `connect` added."""
    from mnemonist.hooks import claude_code as cc
    from mnemonist.hooks.jsonfile import SettingsError

    settings, mcp, record = _paths(settings_path, mcp_path)
    try:
        changes = cc.disconnect_hooks(settings, record)
        click.echo(f"{settings}: " + (", ".join(changes) if changes else "no mnemonist hooks"))
        if not no_mcp:
            done = cc.disconnect_mcp(mcp, record)
            click.echo(f"{mcp}: " + (", ".join(done) if done else "no mnemonist MCP server"))
    except (SettingsError, OSError) as exc:
        click.echo(f"mnemonist: {exc}", err=True)
        sys.exit(1)


COMMANDS = (hook, connect, disconnect)
