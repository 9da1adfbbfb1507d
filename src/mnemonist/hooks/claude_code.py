"""The Claude Code connector: hooks in `~/.claude/settings.json`, the MCP server in
`~/.claude.json` (user scope: every project sees it).

Hooks follow Claude Code's schema, one group of ours per event:
`"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "<mnemonist> hook
session-start", "timeout": 10}]}], ...}` (no matcher: every source, every trigger). An entry
is ours when its command runs a program named `mnemonist` with the `hook` sub-command, so a
new install path replaces the old entry instead of adding one. The MCP server is
`"mcpServers": {"mnemonist": {"type": "stdio", "command": "<mnemonist>", "args": ["mcp"]}}`.

Connecting twice changes nothing the second time. Disconnecting removes exactly our entries,
and the containers (`hooks`, an event's list, `mcpServers`) that connecting created, which a
small record in `<home>/connectors/<harness>.json` remembers (with the original text of a
hand-formatted file, and whether connect created the file): a file connected and then
disconnected is byte-for-byte what it was, and one connect created is removed. Every other
key, hook and server stays as it was. The Codex and OpenCode connectors reuse these.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from mnemonist.hooks.jsonfile import SettingsError, load, save, write_atomic

HOOK_EVENTS = (
    ("SessionStart", "session-start"),
    ("UserPromptSubmit", "user-prompt-submit"),
    ("PreCompact", "pre-compaction"),
    ("SessionEnd", "session-end"),
)
SERVER_NAME = "mnemonist"


def claude_dir() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def default_settings_path() -> Path:
    return claude_dir() / "settings.json"


def default_mcp_config_path() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() / ".claude.json" if env else Path.home() / ".claude.json"


def mnemonist_executable() -> str:
    """The `mnemonist` script of this installation (absolute), else the one on PATH."""
    beside = Path(sys.executable).parent / ("mnemonist.exe" if os.name == "nt" else "mnemonist")
    if beside.exists():
        return str(beside.absolute())
    found = shutil.which("mnemonist")
    return str(Path(found).absolute()) if found else "mnemonist"


def hook_command(executable: str, event: str, harness: str | None = None) -> str:
    tail = f" --harness {harness}" if harness else ""
    return f"{shlex.quote(executable)} hook {event}{tail}"


def _argv(command: Any) -> list[str]:
    if not isinstance(command, str):
        return []
    try:
        return shlex.split(command)
    except ValueError:
        return []


def is_our_hook(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    argv = _argv(entry.get("command"))
    return len(argv) >= 2 and Path(argv[0]).name in ("mnemonist", "mnemonist.exe") and (
        argv[1] == "hook")


def is_our_server(server: Any) -> bool:
    """`{"command": "<mnemonist>", "args": ["mcp"]}` or `{"command": ["<mnemonist>", "mcp"]}`."""
    if not isinstance(server, dict):
        return False
    command, args = server.get("command"), server.get("args") or []
    argv = command if isinstance(command, list) else [command, *args] if (
        isinstance(args, list)) else []
    return len(argv) >= 2 and isinstance(argv[0], str) and argv[1] == "mcp" and (
        Path(argv[0]).name in ("mnemonist", "mnemonist.exe"))


# --- the record of containers connect created ----------------------------------------------


def _record_load(record: Path | None) -> dict[str, Any]:
    if record is None or not record.exists():
        return {"files": {}}
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else {
            "files": {}}
    except (OSError, ValueError):
        return {"files": {}}


def drop_created_file(path: Path, data: dict[str, Any], created: set[str] | None) -> bool:
    """Remove a file connect created once nothing is left in it; True when it did."""
    if data or created is None or "file" not in created:
        return False
    path.unlink(missing_ok=True)
    return True


def note_created_folders(record: Path | None, path: Path) -> None:
    """Before `path` is written: remember the folders above it that do not exist yet (writing
    it creates them), so that disconnect can remove them again once they are empty."""
    missing: list[str] = []
    folder = path.absolute().parent
    while not folder.exists():
        missing.append(str(folder))
        folder = folder.parent
    if record is None or not missing:
        return
    data = _record_load(record)
    folders = data.get("folders")
    known = folders if isinstance(folders, list) else []
    data["folders"] = list(dict.fromkeys([*known, *missing]))
    write_atomic(record, json.dumps(data, indent=2) + "\n")


def drop_created_folders(record: Path | None) -> None:
    """After a disconnect: remove the folders connect created that are empty now (deepest
    first); one that still holds anything (the other part of the harness's setup, or a file
    of the user's) stays, and stays recorded."""
    if record is None or not record.exists():
        return
    data = _record_load(record)
    folders = data.get("folders")
    if not isinstance(folders, list) or not folders:
        return
    kept = []
    for name in sorted((f for f in folders if isinstance(f, str)), key=len, reverse=True):
        folder = Path(name)
        try:
            folder.rmdir()
        except FileNotFoundError:
            continue
        except OSError:  # not empty, or not ours to remove
            kept.append(name)
    data["folders"] = kept
    write_atomic(record, json.dumps(data, indent=2) + "\n")


def _key(path: Path, part: str) -> str:
    return f"{path.resolve()}#{part}"


def _record_update(record: Path | None, key: str, created: list[str] | None,
                   original: str | None = None) -> None:
    """Remember (or, with None, forget) the containers connect created (`key`: file#part),
    and the file's text when its own style cannot be re-created (a hand-formatted file)."""
    if record is None:
        return
    data = _record_load(record)
    if created is None:
        data["files"].pop(key, None)
    else:
        entry = data["files"].get(key, {})
        before = entry.get("created", [])
        entry = {**entry, "created": list(dict.fromkeys([*before, *created]))}
        if original is not None and "original" not in entry:
            entry["original"] = original
        data["files"][key] = entry
    write_atomic(record, json.dumps(data, indent=2) + "\n")


def _original(path: Path, existed: bool) -> str | None:
    """The file's text when writing its data back in its detected style would not give it."""
    if not existed:
        return None
    text = path.read_text(encoding="utf-8")
    data, style, _ = load(path)
    return None if style.dumps(data) == text or not text.strip() else text


def _save_back(path: Path, data: dict[str, Any], style: Any, record: Path | None,
               key: str) -> None:
    """Write `data`; when it is what the file held before connect, the very text it had."""
    entry = _record_load(record)["files"].get(key) or {}
    original = entry.get("original")
    if isinstance(original, str):
        try:
            same = json.loads(original) == data
        except ValueError:
            same = False
        if same:
            write_atomic(path, original)
            return
    save(path, data, style)


def _created(record: Path | None, key: str) -> set[str] | None:
    """Containers connect created (`key`: file#part); None when nothing was recorded."""
    entry = _record_load(record)["files"].get(key)
    return None if entry is None else set(entry.get("created", []))


# --- hooks ---------------------------------------------------------------------------------


def connect_hooks(path: Path, executable: str, timeout_s: int, record: Path | None = None,
                  *, events: tuple[tuple[str, str], ...] = HOOK_EVENTS,
                  harness: str | None = None) -> list[str]:
    """Add (or update) our hook under each event; returns what changed."""
    data, style, existed = load(path)
    created: list[str] = [] if existed else ["file"]
    hooks = data.get("hooks")
    if hooks is None:
        hooks = data["hooks"] = {}
        created.append("hooks")
    if not isinstance(hooks, dict):
        raise SettingsError(f"{path}: `hooks` is not an object")
    changes: list[str] = []
    for event, name in events:
        want = {"type": "command", "command": hook_command(executable, name, harness),
                "timeout": timeout_s}
        groups = hooks.get(event)
        if groups is None:
            groups = hooks[event] = []
            created.append(f"hooks.{event}")
        if not isinstance(groups, list):
            raise SettingsError(f"{path}: `hooks.{event}` is not a list")
        ours = [(g, h) for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                for h in g["hooks"] if is_our_hook(h)]
        if not ours:
            groups.append({"hooks": [want]})
            changes.append(f"added {event}")
            continue
        first = ours[0][1]
        if any(first.get(k) != v for k, v in want.items()):
            first.update(want)
            changes.append(f"updated {event}")
        for group, extra in ours[1:]:
            group["hooks"].remove(extra)
            if not group["hooks"]:
                groups.remove(group)
            changes.append(f"removed a duplicate {event} hook")
    if changes:
        original = _original(path, existed)
        note_created_folders(record, path)
        save(path, data, style)
        _record_update(record, _key(path, "hooks"), created, original)
    return changes


def _remove_ours(container: dict[str, Any], key: str, created: set[str] | None,
                 path: str) -> bool:
    """Drop `container[key]` when our removal emptied it and connect had created it."""
    if created is None or path in created:
        del container[key]
        return True
    return False


def disconnect_hooks(path: Path, record: Path | None = None) -> list[str]:
    """Remove our hook entries (and the containers connect created); returns what changed."""
    if not path.exists():
        return []
    data, style, _ = load(path)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    created = _created(record, _key(path, "hooks"))
    changes: list[str] = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        removed = False
        for group in list(groups):
            if not (isinstance(group, dict) and isinstance(group.get("hooks"), list)):
                continue
            kept = [h for h in group["hooks"] if not is_our_hook(h)]
            if len(kept) == len(group["hooks"]):
                continue
            removed = True
            if kept:
                group["hooks"] = kept
            else:
                groups.remove(group)
        if removed:
            changes.append(f"removed {event}")
            if not groups:
                _remove_ours(hooks, event, created, f"hooks.{event}")
    if changes and not hooks:
        _remove_ours(data, "hooks", created, "hooks")
    if changes:
        if not drop_created_file(path, data, created):
            _save_back(path, data, style, record, _key(path, "hooks"))
        _record_update(record, _key(path, "hooks"), None)
        drop_created_folders(record)
    return changes


# --- the MCP server ------------------------------------------------------------------------


def server_entry(executable: str) -> dict[str, Any]:
    return {"type": "stdio", "command": executable, "args": ["mcp"], "env": {}}


def connect_mcp(path: Path, executable: str, record: Path | None = None, *,
                container: str = "mcpServers", entry: dict[str, Any] | None = None) -> list[str]:
    """Register our MCP server as `container.mnemonist` (`entry`, default Claude Code's)."""
    data, style, existed = load(path)
    created: list[str] = [] if existed else ["file"]
    servers = data.get(container)
    if servers is None:
        servers = data[container] = {}
        created.append(container)
    if not isinstance(servers, dict):
        raise SettingsError(f"{path}: `{container}` is not an object")
    want = entry or server_entry(executable)
    current = servers.get(SERVER_NAME)
    if current == want:
        return []
    if current is not None and not is_our_server(current):
        raise SettingsError(
            f"{path}: an MCP server named {SERVER_NAME!r} exists and is not mnemonist's;"
            " left as it is")
    servers[SERVER_NAME] = want
    original = _original(path, existed)
    note_created_folders(record, path)
    save(path, data, style)
    _record_update(record, _key(path, "mcp"), created, original)
    return [f"{'updated' if current else 'registered'} MCP server {SERVER_NAME}"]


def disconnect_mcp(path: Path, record: Path | None = None, *,
                   container: str = "mcpServers") -> list[str]:
    if not path.exists():
        return []
    data, style, _ = load(path)
    servers = data.get(container)
    if not isinstance(servers, dict) or not is_our_server(servers.get(SERVER_NAME)):
        return []
    created = _created(record, _key(path, "mcp"))
    del servers[SERVER_NAME]
    if not servers:
        _remove_ours(data, container, created, container)
    if not drop_created_file(path, data, created):
        _save_back(path, data, style, record, _key(path, "mcp"))
    _record_update(record, _key(path, "mcp"), None)
    drop_created_folders(record)
    return [f"removed MCP server {SERVER_NAME}"]
