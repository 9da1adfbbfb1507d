"""Harness transcripts (Claude Code's JSONL and the like): flattened to text with roles, and
the working state a checkpoint keeps (recent prompts, files touched, tool actions, errors).

Claude Code writes one JSON object per line: `{"type": "user" | "assistant", "message":
{"role": ..., "content": str | [blocks]}, "timestamp": ...}` where blocks are `text`,
`thinking`, `tool_use` (`name`, `input`) and `tool_result` (`content`, `is_error`), plus
`summary` and `system` lines. Nothing is dropped from the flattened text but metadata-only
lines; a line that is not JSON is kept as it is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemonist.sessions.digest import clip
from mnemonist.text.scrub import scrub_credentials

#: a transcript larger than this is stored up to this size, with a marker saying so
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch"}
PATH_KEYS = ("file_path", "notebook_path", "path")


@dataclass
class Entry:
    role: str  # user | assistant | tool_use | tool_result | thinking | summary | system | raw
    text: str
    timestamp: str | None = None
    tool: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False
    is_prompt: bool = False  # typed by the user (not a tool result, not meta)


@dataclass
class Activity:
    prompts: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    last_reply: str | None = None


def _block_text(content: Any) -> str:
    """A tool result's or message's content as text (strings, text blocks, images)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "image":
                    parts.append("[image]")
                else:
                    parts.append(json.dumps(block, ensure_ascii=False))
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)


def _message_entries(line: dict[str, Any], ts: str | None) -> list[Entry]:
    message: dict[str, Any] = line["message"]  # a dict: the callers checked
    role = str(message.get("role") or line.get("type") or "unknown")
    content = message.get("content")
    meta = bool(line.get("isMeta"))
    if isinstance(content, str):
        return [Entry(role, content, ts, is_prompt=role == "user" and not meta)]
    out: list[Entry] = []
    for block in content if isinstance(content, list) else [content]:
        if not isinstance(block, dict):
            out.append(Entry(role, str(block), ts))
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(Entry(role, str(block.get("text", "")), ts,
                             is_prompt=role == "user" and not meta))
        elif kind == "thinking":
            out.append(Entry("thinking", str(block.get("thinking", "")), ts))
        elif kind == "tool_use":
            given = block.get("input")
            args = given if isinstance(given, dict) else {}
            out.append(Entry("tool_use", json.dumps(args, ensure_ascii=False), ts,
                             tool=str(block.get("name", "tool")), tool_input=args))
        elif kind == "tool_result":
            out.append(Entry("tool_result", _block_text(block.get("content")), ts,
                             is_error=bool(block.get("is_error"))))
        elif kind == "image":
            out.append(Entry(role, "[image]", ts))
        else:
            out.append(Entry(role, json.dumps(block, ensure_ascii=False), ts))
    return out


def parse_jsonl(text: str) -> list[Entry]:
    entries: list[Entry] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            entries.append(Entry("raw", raw))
            continue
        if not isinstance(line, dict):
            entries.append(Entry("raw", raw))
            continue
        ts = line.get("timestamp") if isinstance(line.get("timestamp"), str) else None
        if isinstance(line.get("message"), dict):
            entries += _message_entries(line, ts)
        elif line.get("type") == "summary" and line.get("summary"):
            entries.append(Entry("summary", str(line["summary"]), ts))
        elif line.get("type") == "system" and line.get("content"):
            entries.append(Entry("system", _block_text(line["content"]), ts))
        elif isinstance(line.get("role"), str) and "content" in line:  # {"role", "content"}
            entries += _message_entries({"message": line}, ts)
    return entries


def looks_like_jsonl(text: str) -> bool:
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return first.lstrip().startswith("{")


def flatten(entries: list[Entry]) -> str:
    """One block per entry: `[timestamp] role: text` (tool calls name their tool)."""
    out = []
    for e in entries:
        stamp = f"[{e.timestamp}] " if e.timestamp else ""
        if e.role == "tool_use":
            label = f"assistant → {e.tool}"
        elif e.role == "tool_result":
            label = "tool error" if e.is_error else "tool result"
        elif e.role == "raw":
            out.append(e.text)
            continue
        else:
            label = e.role
        out.append(f"{stamp}{label}: {e.text}")
    return "\n".join(out) + ("\n" if out else "")


def flatten_transcript(text: str) -> str:
    """JSONL becomes role-labelled text; anything else is kept as it is."""
    return flatten(parse_jsonl(text)) if looks_like_jsonl(text) else text


def _scrubbed(text: str) -> str:
    return scrub_credentials(text).text


def _describe_tool(e: Entry) -> str:
    """The call in a line; credentials scrubbed before it is cut (a cut key block no longer
    looks like one)."""
    args = e.tool_input
    for key in ("command", *PATH_KEYS, "pattern", "url", "query", "description"):
        if args.get(key):
            return clip(_scrubbed(f"{e.tool}: {args[key]}"), 160)
    return clip(_scrubbed(f"{e.tool}: {json.dumps(args, ensure_ascii=False)}"), 160)


_COMMAND_NOISE = re.compile(r"^\s*<(command-|local-command-|system-reminder)")


def activity(entries: list[Entry]) -> Activity:
    """The working state at the end of a transcript, newest last; every text has its
    credentials scrubbed before it is clipped."""
    act = Activity()
    files: dict[str, str] = {}
    prompts: list[str] = []
    tools: list[Entry] = []
    errors: list[str] = []
    last_reply: str | None = None
    for e in entries:
        if e.is_prompt and e.text.strip() and not _COMMAND_NOISE.match(e.text):
            prompts.append(e.text)
        elif e.role == "tool_use":
            tools.append(e)
            path = next((e.tool_input[k] for k in PATH_KEYS if e.tool_input.get(k)), None)
            if isinstance(path, str):
                how = "edited" if e.tool in EDIT_TOOLS else "read"
                if files.get(path) == "edited":
                    how = "edited"
                files.pop(path, None)
                files[path] = how
        elif e.role == "tool_result" and e.is_error:
            errors.append(e.text)
        elif e.role == "assistant" and e.text.strip():
            last_reply = e.text
    act.prompts = [clip(_scrubbed(t)) for t in prompts[-10:]]
    act.tools = [_describe_tool(e) for e in tools[-10:]]
    act.errors = [clip(_scrubbed(t)) for t in errors[-3:]]
    act.last_reply = _scrubbed(last_reply).strip() if last_reply is not None else None
    act.files = [_scrubbed(f"{p} ({how})") for p, how in list(files.items())[-20:]]
    return act


def project_of(cwd: str | None) -> tuple[str | None, str | None, str | None]:
    """(project name, normalised name, root folder) for a working directory: the name of
    the enclosing git repository, else of the folder itself."""
    if not cwd:
        return None, None, None
    start = Path(cwd).expanduser()
    root = start
    try:
        for candidate in (start, *start.parents):
            if (candidate / ".git").exists():
                root = candidate
                break
    except OSError:
        root = start
    name = root.name or str(root)
    return name, normalize_project(name), str(root)


def normalize_project(name: str | None) -> str | None:
    if not name:
        return None
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or name.lower()
