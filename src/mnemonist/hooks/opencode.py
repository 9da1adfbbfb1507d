"""The OpenCode connector: the MCP server in `opencode.json` (`"mcp": {"mnemonist": {"type":
"local", "command": [<mnemonist>, "mcp"], "enabled": true}}`) and a plugin file in the global
plugins folder that pipes session events to `mnemonist hook <event> --format text --harness
opencode` and adds what the hooks print to the conversation. Both live in
`$XDG_CONFIG_HOME/opencode` (default `~/.config/opencode`). Disconnect removes exactly what
connect added: the server entry (and a file or `mcp` object connect created) and the plugin
(and a plugins folder connect created)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mnemonist.hooks import claude_code as cc
from mnemonist.hooks.jsonfile import SettingsError, write_atomic
from mnemonist.hooks.opencode_plugin import TEMPLATE

MARKER = "// mnemonist: added by `mnemonist connect opencode`"


def config_dir() -> Path:
    env = os.environ.get("XDG_CONFIG_HOME")
    return (Path(env).expanduser() if env else Path.home() / ".config") / "opencode"


def default_config_path() -> Path:
    return config_dir() / "opencode.json"


def default_plugin_path() -> Path:
    return config_dir() / "plugins" / "mnemonist.js"


def server_entry(executable: str) -> dict[str, Any]:
    return {"type": "local", "command": [executable, "mcp"], "enabled": True}


def plugin_text(executable: str) -> str:
    return TEMPLATE.replace("__MNEMONIST__", json.dumps(executable))


def connect_mcp(path: Path, executable: str, record: Path | None = None) -> list[str]:
    return cc.connect_mcp(path, executable, record, container="mcp",
                          entry=server_entry(executable))


def disconnect_mcp(path: Path, record: Path | None = None) -> list[str]:
    return cc.disconnect_mcp(path, record, container="mcp")


def connect_plugin(path: Path, executable: str, record: Path | None = None) -> list[str]:
    want = plugin_text(executable)
    if path.exists():
        current = path.read_text(encoding="utf-8")
        if current == want:
            return []
        if MARKER not in current:
            raise SettingsError(f"{path} exists and is not mnemonist's plugin; left as it is")
    else:
        created = [] if path.parent.exists() else ["folder"]
        cc._record_update(record, cc._key(path, "plugin"), created)
        cc.note_created_folders(record, path)
    updated = path.exists()
    write_atomic(path, want)
    path.with_name(path.name + ".bak").unlink(missing_ok=True)  # only ever our own text
    return [f"{'updated' if updated else 'added'} plugin"]


def disconnect_plugin(path: Path, record: Path | None = None) -> list[str]:
    if not path.exists() or MARKER not in path.read_text(encoding="utf-8"):
        return []
    path.unlink()
    created = cc._created(record, cc._key(path, "plugin")) or set()
    if "folder" in created and not any(path.parent.iterdir()):
        path.parent.rmdir()
    cc._record_update(record, cc._key(path, "plugin"), None)
    cc.drop_created_folders(record)
    return ["removed plugin"]
