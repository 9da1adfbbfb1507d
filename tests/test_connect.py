"""`mnemonist connect | disconnect claude-code`: hooks in settings.json and the MCP server in
~/.claude.json, idempotent, every other setting kept, and a round trip byte-for-byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemonist.cli.main import cli
from mnemonist.hooks.claude_code import HOOK_EVENTS, is_our_hook

EXE = "/opt/mnemonist/bin/mnemonist"

SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "model": "opus",
    "permissions": {"allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
                    "deny": ["Read(./.env)"]},
    "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0", "GREETING": "héllo wörld ✓"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 ~/.claude/hooks/check_bash.py"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [
            {"type": "command", "command": "cat ~/notes/today.md", "timeout": 3}]}],
        "UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "~/.claude/hooks/prompt_guard.sh"}]}],
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
    "includeCoAuthoredBy": False,
}

CLAUDE_JSON = {
    "numStartups": 42,
    "theme": "dark",
    "projects": {"/home/me/app": {"allowedTools": [], "mcpServers": {}, "history": []}},
    "mcpServers": {"github": {"type": "stdio", "command": "npx",
                              "args": ["-y", "@modelcontextprotocol/server-github"],
                              "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}},
    "hasCompletedOnboarding": True,
}


def write(path: Path, data: dict, ensure_ascii: bool = True) -> bytes:
    """As Claude Code does: two-space indent and a final newline."""
    text = json.dumps(data, indent=2, ensure_ascii=ensure_ascii) + "\n"
    path.write_text(text, encoding="utf-8")
    return path.read_bytes()


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMONIST_HOME", str(tmp_path / "home"))

    def invoke(*args: str):
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    return invoke


def connect(run, settings: Path, mcp: Path, *extra: str):
    return run("connect", "claude-code", "--settings", str(settings), "--mcp-config", str(mcp),
               "--command", EXE, *extra)


def disconnect(run, settings: Path, mcp: Path, *extra: str):
    return run("disconnect", "claude-code", "--settings", str(settings), "--mcp-config",
               str(mcp), *extra)


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_round_trip_is_byte_for_byte_and_keeps_everything_else(run, tmp_path, ensure_ascii):
    settings, mcp = tmp_path / "settings.json", tmp_path / ".claude.json"
    before = write(settings, SETTINGS, ensure_ascii)
    mcp_before = write(mcp, CLAUDE_JSON, ensure_ascii)

    out = connect(run, settings, mcp)
    assert out.exit_code == 0, out.output
    assert "added SessionStart" in out.output and "registered MCP server" in out.output
    data = json.loads(settings.read_text())
    assert list(data) == list(SETTINGS)  # key order kept
    for key in SETTINGS:
        if key != "hooks":
            assert data[key] == SETTINGS[key]
    hooks = data["hooks"]
    for event, groups in SETTINGS["hooks"].items():
        assert hooks[event][: len(groups)] == groups  # other hooks untouched, first
    for event, name in HOOK_EVENTS:
        ours = [h for g in hooks[event] for h in g["hooks"] if is_our_hook(h)]
        assert ours == [{"type": "command", "command": f"{EXE} hook {name}", "timeout": 10}]
        assert "matcher" not in hooks[event][-1]
    assert list(hooks)[:3] == ["PreToolUse", "SessionStart", "UserPromptSubmit"]
    assert (tmp_path / "settings.json.bak").read_bytes() == before

    servers = json.loads(mcp.read_text())["mcpServers"]
    assert servers["github"] == CLAUDE_JSON["mcpServers"]["github"]
    assert servers["mnemonist"] == {"type": "stdio", "command": EXE, "args": ["mcp"], "env": {}}

    # connecting again changes nothing
    connected, mcp_connected = settings.read_bytes(), mcp.read_bytes()
    again = connect(run, settings, mcp)
    assert again.exit_code == 0 and "already there" in again.output
    assert settings.read_bytes() == connected and mcp.read_bytes() == mcp_connected

    out = disconnect(run, settings, mcp)
    assert out.exit_code == 0 and "removed SessionStart" in out.output
    assert settings.read_bytes() == before
    assert mcp.read_bytes() == mcp_before
    # and a second disconnect finds nothing to do
    assert "no mnemonist hooks" in disconnect(run, settings, mcp).output
    assert settings.read_bytes() == before


def test_files_without_hooks_or_servers_round_trip(run, tmp_path):
    settings, mcp = tmp_path / "settings.json", tmp_path / ".claude.json"
    before = write(settings, {"model": "sonnet"})
    mcp_before = write(mcp, {"theme": "light", "mcpServers": {}})
    assert connect(run, settings, mcp).exit_code == 0
    data = json.loads(settings.read_text())
    assert list(data) == ["model", "hooks"]
    assert set(data["hooks"]) == {event for event, _ in HOOK_EVENTS}
    assert disconnect(run, settings, mcp).exit_code == 0
    assert settings.read_bytes() == before
    assert mcp.read_bytes() == mcp_before  # an empty mcpServers that was there stays


def test_missing_files_are_created(run, tmp_path):
    settings = tmp_path / "claude" / "settings.json"
    mcp = tmp_path / "claude.json"
    assert connect(run, settings, mcp).exit_code == 0
    assert set(json.loads(settings.read_text())["hooks"]) == {e for e, _ in HOOK_EVENTS}
    assert "mnemonist" in json.loads(mcp.read_text())["mcpServers"]
    assert disconnect(run, settings, mcp).exit_code == 0
    assert not settings.exists() and not mcp.exists()  # files connect created are gone again


def test_an_old_install_path_is_updated_not_duplicated(run, tmp_path):
    settings, mcp = tmp_path / "settings.json", tmp_path / ".claude.json"
    old = {"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "/old/venv/bin/mnemonist hook session-start",
         "timeout": 30},
        {"type": "command", "command": "echo keep-me"}]}]}}
    write(settings, old)
    out = connect(run, settings, mcp, "--no-mcp")
    assert "updated SessionStart" in out.output and not mcp.exists()
    groups = json.loads(settings.read_text())["hooks"]["SessionStart"]
    assert len(groups) == 1
    assert groups[0]["hooks"] == [
        {"type": "command", "command": f"{EXE} hook session-start", "timeout": 10},
        {"type": "command", "command": "echo keep-me"},
    ]
    disconnect(run, settings, mcp, "--no-mcp")
    assert json.loads(settings.read_text())["hooks"]["SessionStart"] == [
        {"hooks": [{"type": "command", "command": "echo keep-me"}]}]


def test_the_hook_timeout_follows_the_configured_deadline(run, tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "agent.yaml").write_text("hooks:\n  timeoutMs: 12500\n")
    settings = tmp_path / "settings.json"
    connect(run, settings, tmp_path / "c.json", "--no-mcp")
    entry = json.loads(settings.read_text())["hooks"]["PreCompact"][0]["hooks"][0]
    assert entry["timeout"] == 18 and entry["command"] == f"{EXE} hook pre-compaction"


def test_refuses_to_touch_what_it_cannot_read_or_does_not_own(run, tmp_path):
    settings, mcp = tmp_path / "settings.json", tmp_path / ".claude.json"
    settings.write_text("{ not json")
    out = connect(run, settings, mcp)
    assert out.exit_code == 1 and "not valid JSON" in out.output
    assert settings.read_text() == "{ not json" and not mcp.exists()

    write(settings, {})
    theirs = {"mcpServers": {"mnemonist": {"type": "http", "url": "http://elsewhere/mcp"}}}
    mcp_before = write(mcp, theirs)
    out = connect(run, settings, mcp)
    assert out.exit_code == 1 and "not mnemonist's" in out.output
    assert mcp.read_bytes() == mcp_before
    assert disconnect(run, settings, mcp).exit_code == 0
    assert mcp.read_bytes() == mcp_before  # not ours: left alone


def test_untouched_files_are_not_rewritten(run, tmp_path):
    settings, mcp = tmp_path / "settings.json", tmp_path / ".claude.json"
    before = write(settings, SETTINGS)
    out = disconnect(run, settings, mcp)
    assert out.exit_code == 0 and "no mnemonist hooks" in out.output
    assert settings.read_bytes() == before and not (tmp_path / "settings.json.bak").exists()


def test_a_symlinked_settings_file_stays_a_symlink(run, tmp_path):
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    before = write(real, SETTINGS)
    link = tmp_path / "settings.json"
    os.symlink(real, link)
    connect(run, link, tmp_path / "c.json", "--no-mcp")
    assert link.is_symlink() and "mnemonist" in real.read_text()
    disconnect(run, link, tmp_path / "c.json", "--no-mcp")
    assert link.is_symlink() and real.read_bytes() == before
