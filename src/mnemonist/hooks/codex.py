"""The Codex connector: hooks in `~/.codex/hooks.json` (Claude Code's shape, with
`PostCompact`; `Stop` ends a turn, which stands in for a session end), the MCP server in
`~/.codex/config.toml` (`$CODEX_HOME` moves both).

TOML is edited as text: connect appends one clearly delimited block and disconnect removes
exactly that block (and the blank line connect put before it), so every other byte of the
file stays as it was; a file connect created is removed again."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from mnemonist.hooks import claude_code as cc
from mnemonist.hooks.jsonfile import SettingsError, write_atomic

HARNESS = "codex"
HOOK_EVENTS = (
    ("SessionStart", "session-start"),
    ("UserPromptSubmit", "user-prompt-submit"),
    ("PreCompact", "pre-compaction"),
    ("PostCompact", "compaction-complete"),
    ("Stop", "session-end"),
)
BEGIN = ("# >>> mnemonist: added by `mnemonist connect codex`;"
         " `mnemonist disconnect codex` removes it\n")
END = "# <<< mnemonist\n"
_BLOCK = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
_FOREIGN = re.compile(r"^\s*\[\s*mcp_servers\s*\.\s*[\"']?mnemonist[\"']?\s*\]", re.M)


def codex_dir() -> Path:
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def default_hooks_path() -> Path:
    return codex_dir() / "hooks.json"


def default_config_path() -> Path:
    return codex_dir() / "config.toml"


def mcp_block(executable: str) -> str:
    # a JSON string is a valid TOML basic string (same escapes)
    return (f"{BEGIN}[mcp_servers.mnemonist]\ncommand = {json.dumps(executable)}\n"
            f'args = ["mcp"]\n{END}')


def connect_hooks(path: Path, executable: str, timeout_s: int,
                  record: Path | None = None) -> list[str]:
    return cc.connect_hooks(path, executable, timeout_s, record, events=HOOK_EVENTS,
                            harness=HARNESS)


def connect_mcp(path: Path, executable: str, record: Path | None = None) -> list[str]:
    existed = path.exists()
    text = path.read_text(encoding="utf-8") if existed else ""
    block = mcp_block(executable)
    found = _BLOCK.search(text)
    if found:
        if found.group(0) == block:
            return []
        write_atomic(path, text[: found.start()] + block + text[found.end():])
        return ["updated MCP server mnemonist"]
    if _FOREIGN.search(text):
        raise SettingsError(f"{path}: an MCP server named 'mnemonist' exists and is not"
                            " mnemonist's; left as it is")
    sep = "" if not text else "\n" if text.endswith("\n") else "\n\n"  # a blank line before
    cc.note_created_folders(record, path)
    write_atomic(path, text + sep + block)
    created = (["file"] if not existed else []) + [f"separator:{len(sep)}"]
    cc._record_update(record, cc._key(path, "mcp"), created)
    return ["registered MCP server mnemonist"]


def disconnect_mcp(path: Path, record: Path | None = None) -> list[str]:
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    found = _BLOCK.search(text)
    if not found:
        return []
    created = cc._created(record, cc._key(path, "mcp")) or set()
    sep = next((int(c.split(":")[1]) for c in created if c.startswith("separator:")), 0)
    start = found.start()
    if text[max(start - sep, 0): start] == "\n" * sep:
        start -= sep
    rest = text[:start] + text[found.end():]
    if not rest and "file" in created:
        path.unlink()
    else:
        write_atomic(path, rest)
    cc._record_update(record, cc._key(path, "mcp"), None)
    cc.drop_created_folders(record)
    return ["removed MCP server mnemonist"]
