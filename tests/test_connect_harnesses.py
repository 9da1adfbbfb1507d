"""`mnemonist connect | disconnect codex | opencode`: written and removed exactly like
claude-code: idempotent, every other byte kept, files connect created absent again."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemonist.cli.main import cli
from mnemonist.hooks import codex, opencode

EXE = "/opt/mnemonist/bin/mnemonist"

CODEX_TOML = """# my codex settings, hand formatted
model = "gpt-5-codex"   # pinned
approval_policy = "on-request"

[mcp_servers.github]
command = "npx"
args = [ "-y", "@modelcontextprotocol/server-github" ]

[profiles.fast]
model   = "o4-mini"
"""
HOOKS_JSON = """{
    "hooks": {
        "Stop": [ { "hooks": [ { "type": "command", "command": "say done" } ] } ]
    }
}"""
OPENCODE_JSON = """{
  "$schema": "https://opencode.ai/config.json",
  "theme": "tokyonight",
  "mcp": {
    "github": {"type": "local", "command": ["npx", "-y", "server-github"], "enabled": true}
  }
}
"""


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMONIST_HOME", str(tmp_path / "home"))

    def invoke(*args: str):
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    return invoke


def both(run, verb: str, harness: str, hooks: Path, config: Path):
    extra = ("--command", EXE) if verb == "connect" else ()
    out = run(verb, harness, "--settings", str(hooks), "--config", str(config), *extra)
    assert out.exit_code == 0, out.output
    return out


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_codex_round_trip_keeps_hand_formatted_files_byte_for_byte(run, tmp_path):
    hooks, config = tmp_path / "codex" / "hooks.json", tmp_path / "codex" / "config.toml"
    hooks.parent.mkdir()
    hooks.write_text(HOOKS_JSON)
    config.write_text(CODEX_TOML)
    both(run, "connect", "codex", hooks, config)

    data = json.loads(hooks.read_text())
    assert set(data["hooks"]) == {event for event, _ in codex.HOOK_EVENTS}
    ours = [h["command"] for event in data["hooks"] for g in data["hooks"][event]
            for h in g["hooks"] if h["command"].startswith(EXE)]
    assert sorted(ours) == sorted(f"{EXE} hook {name} --harness codex"
                                  for _, name in codex.HOOK_EVENTS)
    assert data["hooks"]["Stop"][0]["hooks"][0]["command"] == "say done"  # theirs first
    text = config.read_text()
    assert text.startswith(CODEX_TOML + "\n" + codex.BEGIN)
    assert f'[mcp_servers.mnemonist]\ncommand = "{EXE}"\nargs = ["mcp"]\n' in text
    import tomllib

    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["mnemonist"] == {"command": EXE, "args": ["mcp"]}
    assert parsed["profiles"]["fast"]["model"] == "o4-mini"

    connected = snapshot(tmp_path / "codex")
    again = both(run, "connect", "codex", hooks, config)  # twice changes nothing
    assert "already there" in again.output and snapshot(tmp_path / "codex") == connected

    both(run, "disconnect", "codex", hooks, config)
    assert config.read_text() == CODEX_TOML
    assert hooks.read_text() == HOOKS_JSON


def test_codex_files_connect_created_are_absent_after_disconnect(run, tmp_path):
    hooks, config = tmp_path / "c" / "hooks.json", tmp_path / "c" / "config.toml"
    both(run, "connect", "codex", hooks, config)
    assert config.read_text() == codex.mcp_block(EXE)
    assert hooks.exists()
    both(run, "disconnect", "codex", hooks, config)
    assert not hooks.exists() and not config.exists()


def test_codex_toml_without_final_newline_and_a_foreign_server(run, tmp_path):
    hooks, config = tmp_path / "hooks.json", tmp_path / "config.toml"
    config.write_text('model = "o3"')  # no final newline
    both(run, "connect", "codex", hooks, config)
    assert config.read_text().startswith('model = "o3"\n\n# >>> mnemonist')
    both(run, "disconnect", "codex", hooks, config)
    assert config.read_text() == 'model = "o3"'

    theirs = '[mcp_servers.mnemonist]\ncommand = "/somewhere/else"\n'
    config.write_text(theirs)
    out = CliRunner().invoke(cli, ["connect", "codex", "--settings", str(hooks), "--config",
                                   str(config), "--command", EXE])
    assert out.exit_code == 1 and "not mnemonist's" in out.output
    assert config.read_text() == theirs


def test_codex_default_paths_follow_codex_home(monkeypatch, tmp_path):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    assert codex.default_hooks_path() == tmp_path / "ch" / "hooks.json"
    assert codex.default_config_path() == tmp_path / "ch" / "config.toml"


def test_opencode_round_trip(run, tmp_path):
    folder = tmp_path / "opencode"
    folder.mkdir()
    config, plugin = folder / "opencode.json", folder / "plugins" / "mnemonist.js"
    config.write_text(OPENCODE_JSON)
    before = snapshot(folder)
    both(run, "connect", "opencode", plugin, config)

    data = json.loads(config.read_text())
    assert data["mcp"]["mnemonist"] == {"type": "local", "command": [EXE, "mcp"],
                                        "enabled": True}
    assert list(data["mcp"]) == ["github", "mnemonist"] and data["theme"] == "tokyonight"
    js = plugin.read_text()
    assert js.startswith(opencode.MARKER) and json.dumps(EXE) in js
    for event in ("session-start", "user-prompt-submit", "compaction-complete", "session-end"):
        assert f'"{event}"' in js
    assert '"--format", "text", "--harness", "opencode"' in js
    if shutil.which("node"):  # the plugin is valid JavaScript (an ES module)
        mjs = tmp_path / "check.mjs"
        mjs.write_text(js)
        checked = subprocess.run(["node", "--check", str(mjs)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr

    connected = snapshot(folder)
    again = both(run, "connect", "opencode", plugin, config)
    assert "already there" in again.output and snapshot(folder) == connected

    both(run, "disconnect", "opencode", plugin, config)
    # the hand-formatted file byte for byte; the plugin and the folder connect made are gone
    assert config.read_bytes() == before["opencode.json"]
    assert not plugin.exists() and not plugin.parent.exists()


def test_opencode_files_connect_created_are_absent_and_foreign_plugins_kept(run, tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert opencode.default_config_path() == tmp_path / "xdg" / "opencode" / "opencode.json"
    assert opencode.default_plugin_path() == (
        tmp_path / "xdg" / "opencode" / "plugins" / "mnemonist.js")
    assert run("connect", "opencode", "--command", EXE).exit_code == 0
    assert opencode.default_config_path().exists() and opencode.default_plugin_path().exists()
    assert run("disconnect", "opencode").exit_code == 0
    assert not opencode.default_config_path().exists()
    assert not opencode.default_plugin_path().parent.exists()

    theirs = opencode.default_plugin_path()
    theirs.parent.mkdir(parents=True)
    theirs.write_text("export const Mine = async () => ({})\n")
    out = CliRunner().invoke(cli, ["connect", "opencode", "--command", EXE])
    assert out.exit_code == 1 and "not mnemonist's plugin" in out.output
    assert run("disconnect", "opencode").exit_code == 0
    assert theirs.read_text() == "export const Mine = async () => ({})\n"
