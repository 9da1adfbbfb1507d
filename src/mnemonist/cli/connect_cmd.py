"""`mnemonist connect | disconnect claude-code | codex | opencode`: one command adds the
hooks and the MCP server to a harness, one removes exactly that again."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

HARNESSES = ("claude-code", "codex", "opencode")


@dataclass(frozen=True)
class Target:
    """Where one harness keeps its hooks (a settings file, or OpenCode's plugin) and its MCP
    servers, and how connect / disconnect edit them."""

    hooks: Path
    mcp: Path
    record: Path
    connect_hooks: Callable[[Path, str, Path], list[str]]
    disconnect_hooks: Callable[[Path, Path], list[str]]
    connect_mcp: Callable[[Path, str, Path], list[str]]
    disconnect_mcp: Callable[[Path, Path], list[str]]
    restart: str


def _hook_timeout_s() -> int:
    """The harness's own timeout for our hooks: our deadline plus room to start Python."""
    from mnemonist.settings import ConfigError, Paths, home_dir, load_config

    try:
        ms = load_config(Paths(home_dir())).hooks.timeout_ms
    except ConfigError:
        ms = 5000
    return math.ceil(ms / 1000) + 5


def target(harness: str, hooks: Path | None, mcp: Path | None) -> Target:
    from mnemonist.hooks import claude_code as cc
    from mnemonist.hooks import codex, opencode
    from mnemonist.settings import home_dir

    record = home_dir() / "connectors" / f"{harness}.json"
    if harness == "codex":
        return Target(
            hooks or codex.default_hooks_path(), mcp or codex.default_config_path(), record,
            lambda p, exe, r: codex.connect_hooks(p, exe, _hook_timeout_s(), r),
            cc.disconnect_hooks, codex.connect_mcp, codex.disconnect_mcp, "Restart Codex")
    if harness == "opencode":
        return Target(
            hooks or opencode.default_plugin_path(), mcp or opencode.default_config_path(),
            record, opencode.connect_plugin, opencode.disconnect_plugin, opencode.connect_mcp,
            opencode.disconnect_mcp, "Restart OpenCode")
    return Target(
        hooks or cc.default_settings_path(), mcp or cc.default_mcp_config_path(), record,
        lambda p, exe, r: cc.connect_hooks(p, exe, _hook_timeout_s(), r),
        cc.disconnect_hooks, cc.connect_mcp, cc.disconnect_mcp, "Restart Claude Code")


_settings_opt = click.option(
    "--settings", "settings_path", type=click.Path(path_type=Path), default=None,
    help="the hooks: Claude Code ~/.claude/settings.json, Codex ~/.codex/hooks.json,"
         " OpenCode's plugin ~/.config/opencode/plugins/mnemonist.js")
_mcp_opt = click.option(
    "--mcp-config", "--config", "mcp_path", type=click.Path(path_type=Path), default=None,
    help="where the MCP server goes: ~/.claude.json, ~/.codex/config.toml or"
         " ~/.config/opencode/opencode.json")


def _report(path: Path, changes: list[str], nothing: str) -> None:
    click.echo(f"{path}: " + (", ".join(changes) if changes else nothing))


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
    from mnemonist.hooks.claude_code import mnemonist_executable
    from mnemonist.hooks.jsonfile import SettingsError

    t = target(harness, settings_path, mcp_path)
    exe = executable or mnemonist_executable()
    try:
        _report(t.hooks, t.connect_hooks(t.hooks, exe, t.record), "hooks already there")
        if not no_mcp:
            _report(t.mcp, t.connect_mcp(t.mcp, exe, t.record), "MCP server already there")
    except (SettingsError, OSError) as exc:
        click.echo(f"mnemonist: {exc}", err=True)
        sys.exit(1)
    click.echo(f"{t.restart} to load them; the daemon must run (mnemonist serve).")


@click.command("disconnect")
@click.argument("harness", type=click.Choice(HARNESSES))
@_settings_opt
@_mcp_opt
@click.option("--no-mcp", is_flag=True, help="leave the MCP server registered")
def disconnect(harness: str, settings_path: Path | None, mcp_path: Path | None,
               no_mcp: bool) -> None:
    """Remove exactly what `connect` added."""
    from mnemonist.hooks.jsonfile import SettingsError

    t = target(harness, settings_path, mcp_path)
    try:
        _report(t.hooks, t.disconnect_hooks(t.hooks, t.record), "no mnemonist hooks")
        if not no_mcp:
            _report(t.mcp, t.disconnect_mcp(t.mcp, t.record), "no mnemonist MCP server")
    except (SettingsError, OSError) as exc:
        click.echo(f"mnemonist: {exc}", err=True)
        sys.exit(1)


COMMANDS = (connect, disconnect)
