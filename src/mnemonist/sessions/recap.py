"""A recap of the project's last session(s) for a new session's start, with no LLM: what was
worked on (the files edited, the last prompts), the decisions made and what was left open (the
errors not resolved, where the assistant stood), with each session's date.

It is built from what the daemon already keeps: the session's latest checkpoint digest (files
touched, where it stood, unresolved errors, recent prompts: `sessions/digest.py`), its state
row (the recent prompts the prompt hook saw, its times, its prompt count), the decisions,
constraints and rules stored during it, and its own turns (a turn stating a decision, "we went
with SQLite", counts as one; an "edited <path>" tool line names a file when no checkpoint
does). The caller reads those (only the project's sessions, never the running one, and only
memories the reader may see) and passes them here. Pure; no I/O.

Every stored text goes through `quote_text`: a prompt, a path or a decision can never open a
heading or claim a role in the block.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field

from mnemonist.model.memory import Memory, parse_ts
from mnemonist.sessions.construct import is_tool_line
from mnemonist.sessions.digest import clip, fit
from mnemonist.text.entities import is_decision_content
from mnemonist.text.framing import quote_text

#: the most sessions a recap covers, newest first
MAX_SESSIONS = 2
#: items of each kind shown per session
MAX_FILES = 8
MAX_DECISIONS = 4
MAX_PROMPTS = 3
MAX_ERRORS = 2
ITEM_CHARS = 200
STOOD_CHARS = 300
#: a recap squeezed below this is no recap: it is left out
MIN_CHARS = 160

_SECTION = re.compile(r"^#{2,3} (.+?)\s*$")
_EDITED = re.compile(r"^(.*) \(edited\)$")
_EDIT_TURN = re.compile(r"^edited (\S.*?)(?:: [^:]*)?$")


@dataclass
class PastSession:
    """What the store holds about one earlier session of the project."""

    key: str
    last_at: str  # its last activity (end, else last update)
    started_at: str | None = None
    ended: bool = False
    prompt_count: int = 0
    cwd: str | None = None
    recent_prompts: list[str] = field(default_factory=list)  # session state, oldest first
    digest: str | None = None  # its latest checkpoint's digest
    decisions: list[Memory] = field(default_factory=list)  # stored during it, newest first
    turns: list[Memory] = field(default_factory=list)  # its latest turns, in order


def digest_parts(digest: str | None) -> dict[str, list[str]]:
    """A checkpoint digest's `### Title` parts: title -> its lines (bullet marks removed,
    blank lines dropped)."""
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in (digest or "").splitlines():
        head = _SECTION.match(line)
        if head:
            current = parts.setdefault(head.group(1), [])
            continue
        if current is not None and line.strip():
            current.append(line.strip().removeprefix("- "))
    return parts


def _short_path(path: str, cwd: str | None) -> str:
    """A path under the session's folder, relative to it."""
    if cwd and os.path.isabs(path):
        with contextlib.suppress(ValueError):
            rel = os.path.relpath(path, cwd)
            if not rel.startswith(".."):
                return rel
    return path


def edited_files(s: PastSession, parts: dict[str, list[str]]) -> list[str]:
    """Files the session edited, newest last: the checkpoint's "Files touched" marked
    edited, and the `edited <path>` tool lines among its turns."""
    files = [m.group(1) for line in parts.get("Files touched", [])
             if (m := _EDITED.match(line))]
    for t in s.turns:
        if is_tool_line(t) and (m := _EDIT_TURN.match(t.content)):
            files.append(m.group(1))
    seen: dict[str, None] = {}
    for f in files:
        short = _short_path(f, s.cwd)
        seen.pop(short, None)
        seen[short] = None
    return list(seen)[-MAX_FILES:]


def decisions(s: PastSession) -> list[str]:
    """Decisions of the session: the ones stored (with their id), then turns that state one
    (newest first), each text once."""
    out: list[str] = []
    seen: set[str] = set()
    for m in s.decisions:
        key = " ".join(m.content.lower().split())
        if key not in seen:
            seen.add(key)
            out.append(f"{quote_text(clip(m.content, ITEM_CHARS))} ({m.type}, id {m.id})")
    for t in reversed(s.turns):
        if is_tool_line(t) or not is_decision_content(t.content):
            continue
        key = " ".join(t.content.lower().split())
        if key not in seen:
            seen.add(key)
            who = quote_text(clip(t.who or "someone", 40))
            out.append(f"{quote_text(clip(t.content, ITEM_CHARS))} (said by {who})")
    return out[:MAX_DECISIONS]


def _when(stamp: str | None) -> str:
    if not stamp:
        return "undated"
    with contextlib.suppress(ValueError):
        return parse_ts(stamp).strftime("%Y-%m-%d %H:%M UTC")
    return stamp[:16]


def session_block(s: PastSession) -> str:
    """One session's part of the recap: a sub-heading with its key, date and prompt count,
    then what was worked on, decided and left open (empty when there is nothing to say)."""
    parts = digest_parts(s.digest)
    lines: list[str] = []
    files = edited_files(s, parts)
    if files:
        lines.append("- Files edited: " + ", ".join(quote_text(clip(f, 120)) for f in files))
    made = decisions(s)
    if made:
        lines.append("- Decisions:")
        lines += [f"  - {d}" for d in made]
    prompts = s.recent_prompts or parts.get("Recent prompts", [])
    if prompts:
        lines.append("- Last prompts (newest last):")
        lines += [f"  - {quote_text(clip(p, ITEM_CHARS))}" for p in prompts[-MAX_PROMPTS:]]
    stood = " ".join(parts.get("Where it stood", []))
    errors = parts.get("Unresolved errors", [])[-MAX_ERRORS:]
    if stood or errors:
        lines.append("- Left open:")
        lines += [f"  - error: {quote_text(clip(e, ITEM_CHARS))}" for e in errors]
        if stood:
            lines.append(f"  - where it stood: {quote_text(clip(stood, STOOD_CHARS))}")
    if not lines:
        return ""
    state = "ended" if s.ended else "last active"
    count = f", {s.prompt_count} prompt{'s' if s.prompt_count != 1 else ''}" \
        if s.prompt_count else ""
    head = f"### Session {quote_text(s.key[:8])}, {state} {_when(s.last_at)}{count}"
    return "\n".join([head, *lines])


def recap(sessions: list[PastSession], budget: int) -> tuple[str, list[str]] | None:
    """The recap of `sessions` (newest first, at most `MAX_SESSIONS`) within `budget`
    characters: the newest cut at a line end if it must be, an older one only when it fits
    whole; with the ids of the stored decisions it shows. None when there is nothing to say
    or no room to say it."""
    if budget < MIN_CHARS:
        return None
    blocks = [b for b in (session_block(s) for s in sessions[:MAX_SESSIONS]) if b]
    if not blocks:
        return None
    title = "## Previous session in this project" if len(blocks) == 1 else \
        "## Previous sessions in this project (newest first)"
    text = fit(f"{title}\n{blocks[0]}", budget)
    for block in blocks[1:]:
        if len(text) + 2 + len(block) <= budget:
            text += "\n\n" + block
    if len(blocks) > 1 and "\n\n### " not in text:  # the older one did not fit
        text = text.replace(title, "## Previous session in this project", 1)
    shown = [m.id for s in sessions[:MAX_SESSIONS] for m in s.decisions
             if f"id {m.id})" in text]
    return text, list(dict.fromkeys(shown))
