"""A transcript's lines as the turns that become memories: what the user and the assistant
said, in order, each with its own time; tool calls as one short line at most; tool output,
thinking, compaction summaries and harness metadata left out. Pure, no I/O.

Tool noise is not memory: a file read or a search the assistant ran tells a later question
nothing, and a tool's output (a file dump, a test log) would crowd out what was said. What a
tool *did* can matter ("when did we change login.py?"), so an edit or a shell command becomes
one line: "edited src/login.py", "ran `pytest -q`: failed".

Each turn has a key from its position (the line's `uuid` when the harness writes one, else
the session and line number), so reading a transcript again, or a resumed session's copy of
earlier lines, adds nothing twice.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from mnemonist.sessions.digest import clip
from mnemonist.text.entity_words import COMMON, GENERIC_ALONE, TIME_WORDS

EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch", "str_replace_editor"}
SHELL_TOOLS = {"Bash", "shell", "exec_command", "run_terminal_cmd", "local_shell"}
PATH_KEYS = ("file_path", "notebook_path", "path")
TEXT_BLOCKS = ("text", "input_text", "output_text")  # Claude Code; Codex's rollout files
TOOL_LINE_CHARS = 200
#: harness chatter typed into the user's channel: slash-command echoes, reminders, caveats
_NOISE = re.compile(
    r"^\s*<(command-|local-command-|system-reminder|user-prompt-submit-hook)|"
    r"^\s*Caveat: The messages below were generated",
)
_COUNTS = re.compile(r"\b(\d+) (failed|passed|errors?)\b")


@dataclass(frozen=True)
class SessionTurn:
    key: str  # stable across re-reads: the line's uuid, or session + line + block
    line: int  # 0-based line number in the transcript
    role: str  # user | assistant | tool
    text: str
    timestamp: str | None
    speaker_override: str | None = None

    def speaker(self, names: set[str] | frozenset[str] = frozenset()) -> str:
        """Who said it: the name the message opens with ("Maria: the launch moved") when
        that name is one of the session's speakers (`names`), else the role."""
        if self.speaker_override:
            return self.speaker_override
        label = speaker_label(self.text)
        if label and label in names:
            return label
        return "assistant" if self.role == "tool" else self.role


def speakers(turns: list[SessionTurn], known: set[str] | frozenset[str] = frozenset()
             ) -> set[str]:
    """The names that open messages as a speaker's label: a name that opens at least two
    messages (a group chat, a pasted conversation), or one already known as a speaker of
    this session. A name opening one message alone ("Rotated: the key is in the vault") is
    more likely a word than a speaker."""
    counts: dict[str, int] = {}
    for t in turns:
        label = speaker_label(t.text)
        if label:
            counts[label] = counts.get(label, 0) + 1
    return {name for name, n in counts.items() if n >= 2 or name in known}


_LABEL = re.compile(r"^([A-Z][\w'’.-]{0,30}(?: [A-Z][\w'’.-]{0,30}){0,2}):[ \t]+\S")
_LABEL_WORDS = """
assistant human system ai bot claude codex gpt model q a re fw fwd cc edit edited pr output
input stdout stderr traceback exception
"""
_NOT_NAMES = COMMON | GENERIC_ALONE | TIME_WORDS | frozenset(_LABEL_WORDS.split())


def speaker_label(text: str) -> str | None:
    """The speaker's name a message opens with, if it opens with one: one to three
    capitalised words and a colon ("Maria:", "Jon Snow:"), none of them an ordinary word
    ("Note:", "Error:", "Update:", "Monday:" are labels of another kind)."""
    m = _LABEL.match(text)
    if m is None:
        return None
    name = m.group(1)
    if any(w.lower().strip("'’.-") in _NOT_NAMES for w in name.split()):
        return None
    return name


def _text_of(content: Any) -> list[str]:
    """The text blocks of a message's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [str(b.get("text", "")) for b in content
            if isinstance(b, dict) and b.get("type") in TEXT_BLOCKS]


def _tool_line(block: dict[str, Any], outcome: str | None) -> str | None:
    """One short line for an edit or a shell command; None for reads, searches and the rest."""
    name = str(block.get("name") or "")
    given = block.get("input")
    args = given if isinstance(given, dict) else {}
    if name in EDIT_TOOLS:
        path = next((args[k] for k in PATH_KEYS if isinstance(args.get(k), str)), None)
        line = f"edited {path}" if path else f"{name.lower()} (no path)"
    elif name in SHELL_TOOLS and isinstance(args.get("command"), str | list):
        command = args["command"]
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        line = f"ran `{' '.join(command.split())}`"
    else:
        return None
    if outcome:
        line += f": {outcome}"
    return clip(line, TOOL_LINE_CHARS)


def _outcome(block: dict[str, Any]) -> str:
    """A tool result in a few words: "failed", "3 failed, 12 passed", or "ok"."""
    text = "\n".join(_text_of(block.get("content"))) if not isinstance(
        block.get("content"), str) else block["content"]
    counts = ", ".join(dict.fromkeys(f"{n} {w}" for n, w in _COUNTS.findall(text or "")))
    if counts:
        return counts
    return "failed" if block.get("is_error") else "ok"


def parse_line(raw: str) -> dict[str, Any] | None:
    try:
        line = json.loads(raw)
    except ValueError:
        return None
    return line if isinstance(line, dict) else None


def _message_of(line: dict[str, Any]) -> dict[str, Any] | None:
    """The message a line carries: Claude Code's `message`, Codex's `response_item` payload
    of type `message` (a `function_call` payload becomes a tool_use block), or the line itself
    when it is a bare `{"role", "content"}`."""
    if isinstance(line.get("message"), dict):
        return line["message"]
    payload = line.get("payload")
    if line.get("type") == "response_item" and isinstance(payload, dict):
        if payload.get("type") == "message":
            return payload
        if payload.get("type") == "function_call":
            try:
                args = json.loads(payload.get("arguments") or "{}")
            except ValueError:
                args = {}
            return {"role": "assistant", "content": [
                {"type": "tool_use", "id": payload.get("call_id"), "name": payload.get("name"),
                 "input": args if isinstance(args, dict) else {}}]}
        return None
    return line if isinstance(line.get("role"), str) else None


def turns_of_lines(session_key: str, lines: list[tuple[int, str]]) -> list[SessionTurn]:
    """The turns of numbered transcript lines (Claude Code's JSONL and `{"role", "content"}`
    lines). A tool call's outcome is read from its result when that is among `lines`."""
    parsed = [(n, parse_line(raw)) for n, raw in lines]
    outcomes: dict[str, str] = {}
    for _, line in parsed:
        message = line.get("message") if line else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                outcomes[str(block.get("tool_use_id"))] = _outcome(block)
    out: list[SessionTurn] = []
    for n, line in parsed:
        if line is None or line.get("isMeta") or line.get("isSidechain"):
            continue
        message = _message_of(line)
        if message is None:
            continue
        role = str(message.get("role") or line.get("type") or "")
        if role not in ("user", "assistant"):
            continue
        ts = line.get("timestamp") if isinstance(line.get("timestamp"), str) else None
        base = str(line.get("uuid") or f"{session_key}:{n}")
        text = "\n".join(t for t in _text_of(message.get("content")) if t.strip()).strip()
        if text and not (role == "user" and _NOISE.match(text)):
            out.append(SessionTurn(f"turn:{base}", n, role, text, ts))
        if role != "assistant" or not isinstance(message.get("content"), list):
            continue
        for i, block in enumerate(message["content"]):
            if isinstance(block, dict) and block.get("type") == "tool_use":
                tool = _tool_line(block, outcomes.get(str(block.get("id"))))
                if tool:
                    out.append(SessionTurn(f"tool:{base}:{i}", n, "tool", tool, ts))
    return out


# -- significance -------------------------------------------------------------------------

#: words of greetings, thanks and acknowledgements: a turn made only of these says nothing
_PHATIC_WORDS = """
hi hello hey hiya howdy yo greetings morning afternoon evening night good day thanks thank
thx ty cheers welcome bye goodbye later see soon ok okay k kk sure yes yeah yep no nope
great cool nice awesome perfect fine alright right got it understood done please help today
how are you doing can i what may assist anything else glad happy to the a an is it all that
me we us for so just let know sounds lol haha np noted will do again there
"""
_PHATIC = frozenset(_PHATIC_WORDS.split())
_WORD = re.compile(r"[a-z0-9']+")


def is_substantive(turn: SessionTurn) -> bool:
    """A turn that says something: at least three words that are not greetings, thanks or
    acknowledgements ("Hello! How can I help you today?" is not; a tool line always is)."""
    if turn.role == "tool":
        return True
    words = [w for w in _WORD.findall(turn.text.lower()) if w.strip("'") not in _PHATIC]
    return len(words) >= 3
