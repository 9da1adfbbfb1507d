"""`mnemonist hook <event>`: read the harness's hook JSON on stdin, post it to the daemon and
print what the harness expects — never blocking the agent.

One hard deadline (`hooks.timeoutMs`, or `--timeout`) covers reading stdin, connecting and
reading the answer: the work runs in a daemon thread and the command returns when the
deadline passes, whatever the thread is stuck on. On any failure (daemon down or slow, bad
stdin, an error answer) it prints nothing and exits 0, and the cause goes to
`<home>/logs/hooks.log`. Kept light: no FastAPI, no embedding model in this path.

Output (`--format`):
- `claude-code` (default): for SessionStart and UserPromptSubmit the JSON answer
  `{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`; for
  pre-compaction the instructions as plain text; nothing for the other events;
- `text`: the context (or instructions) as plain text, for harnesses that take stdout;
- `json`: the daemon's whole answer.

The daemon quotes every stored text in what it answers (`text/framing.py`); the text the hook
prints passes `escape_markup` once more on the way out, so even an older or a foreign daemon
cannot close the harness's block (`</system-reminder>`), open a tag or hide characters in it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: event -> (route, Claude Code's hook event name)
EVENTS: dict[str, tuple[str, str]] = {
    "session-start": ("/api/hooks/session-start", "SessionStart"),
    "user-prompt-submit": ("/api/hooks/user-prompt-submit", "UserPromptSubmit"),
    "pre-compaction": ("/api/hooks/pre-compaction", "PreCompact"),
    "compaction-complete": ("/api/hooks/compaction-complete", "PostCompact"),
    "session-end": ("/api/hooks/session-end", "SessionEnd"),
}
ALIASES = {
    "pre-compact": "pre-compaction",
    "post-compact": "compaction-complete",
    "prompt-submit": "user-prompt-submit",
    **{claude.lower(): event for event, (_, claude) in EVENTS.items()},
}
CONTEXT_EVENTS = ("session-start", "user-prompt-submit")
FORMATS = ("claude-code", "text", "json")
LOG_MAX_BYTES = 1_000_000


@dataclass
class HookSettings:
    url: str
    token: str
    timeout_s: float
    enabled: bool
    log_path: Path


def canonical_event(name: str) -> str | None:
    key = name.strip().lower()
    if key in EVENTS:
        return key
    return ALIASES.get(key) or ALIASES.get(key.replace("_", "-"))


def load_settings(url: str | None, timeout_ms: int | None) -> HookSettings:
    """Daemon URL, token and deadline from the flags, the environment and agent.yaml.

    An agent.yaml that cannot be read or holds a bad value turns the hook off for this run
    (`enabled` False: it prints nothing and contacts no daemon) and the cause goes to
    hooks.log: with the configuration unknown, so are the daemon's port and token and whether
    hooks are on at all, and guessing the defaults would talk to whatever listens there."""
    from mnemonist.client import default_url
    from mnemonist.settings import ConfigError, Paths, home_dir, load_config

    home = home_dir()
    settings = HookSettings(url=(url or "").rstrip("/"), token="",
                            timeout_s=max(0.05, (timeout_ms or 5000) / 1000.0),
                            enabled=False, log_path=home / "logs" / "hooks.log")
    try:
        cfg = load_config(Paths(home)).hooks
        base, token = default_url()
    except Exception as exc:  # ConfigError, or anything else: never a guess, never output
        problem = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
        log_line(settings, "config", f"configuration error, the hook did nothing: {problem}")
        return settings
    settings.url = (url or base).rstrip("/")
    settings.token = token
    settings.timeout_s = max(0.05, (timeout_ms or cfg.timeout_ms) / 1000.0)
    settings.enabled = cfg.enabled
    return settings


def log_line(settings: HookSettings, event: str, message: str) -> None:
    """Append one line to hooks.log (rotated at 1 MB); never raises."""
    try:
        from mnemonist.guards.private_files import open_private, private_folder

        path = settings.log_path
        private_folder(path.parent)  # 0700 / 0600: the log names sessions, paths and errors
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        with open_private(path, "a") as fh:
            fh.write(f"{stamp} {event}: {' '.join(message.split())[:2000]}\n")
    except Exception:  # logging must not be the failure
        pass


def read_stdin() -> bytes:
    """All of stdin. Reads the file descriptor directly where there is one, so that a thread
    left blocked here holds no lock of `sys.stdin` when the process exits."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        data = sys.stdin.read()
        return data.encode("utf-8") if isinstance(data, str) else data
    if os.isatty(fd):
        raise ValueError("stdin is a terminal: pipe the harness's hook JSON in")
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def parse_payload(raw: bytes, harness: str) -> dict[str, Any]:
    if not raw.strip():
        raise ValueError("stdin is empty: the harness sent no hook JSON")
    try:
        payload = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError as exc:
        raise ValueError(f"stdin is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise ValueError("stdin is not a JSON object")
    payload.setdefault("harness", harness)
    if not payload.get("cwd"):
        payload["cwd"] = os.getcwd()
    return payload


def post(settings: HookSettings, route: str, payload: dict[str, Any],
         deadline: float) -> dict[str, Any]:
    import httpx

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("deadline passed before the request")
    headers = {"Authorization": f"Bearer {settings.token}"} if settings.token else {}
    resp = httpx.post(settings.url + route, json=payload, headers=headers,
                      timeout=httpx.Timeout(remaining))
    if resp.status_code >= 400:
        raise RuntimeError(f"daemon answered {resp.status_code}: {resp.text[:500]}")
    body = resp.json()
    if not isinstance(body, dict):
        raise RuntimeError("daemon answer is not a JSON object")
    return body


def render(event: str, answer: dict[str, Any], fmt: str) -> str:
    from mnemonist.text.framing import escape_markup

    if fmt == "json":
        return json.dumps(answer, ensure_ascii=False)
    if event in CONTEXT_EVENTS:
        context = escape_markup(str(answer.get("context") or ""))
        if not context.strip():
            return ""
        if fmt == "text":
            return context.rstrip("\n")
        return json.dumps({"hookSpecificOutput": {"hookEventName": EVENTS[event][1],
                                                  "additionalContext": context}},
                          ensure_ascii=False)
    if event == "pre-compaction":
        return escape_markup(str(answer.get("instructions") or "")).rstrip("\n")
    return ""


def emit(text: str) -> None:
    """Print the answer; a harness that stopped reading gets nothing and no error."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        try:  # keep the interpreter's final flush from failing too
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass


def run_hook(event_name: str, settings: HookSettings, *, fmt: str = "claude-code",
             harness: str = "claude-code", stdin: Any = read_stdin,
             agent: str | None = None, user: str | None = None) -> str:
    """What to print for this hook ("" on any failure); returns within the deadline.
    `agent` / `user`: who the hook reads as (its private memories are offered too); none:
    global memories only."""
    started = time.monotonic()
    deadline = started + settings.timeout_s
    event = canonical_event(event_name)
    if event is None:
        log_line(settings, event_name, "unknown hook event")
        return ""
    if not settings.enabled:
        return ""
    if fmt not in FORMATS:
        fmt = "claude-code"
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            payload = parse_payload(stdin(), harness)
            for field, value in (("agent_id", agent), ("user_id", user)):
                if value:
                    payload.setdefault(field, value)
            answer = post(settings, EVENTS[event][0], payload, deadline)
            result["out"] = render(event, answer, fmt)
        except Exception as exc:
            result["error"] = f"{type(exc).__name__}: {exc}"

    thread = threading.Thread(target=work, name="mnemonist-hook", daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        log_line(settings, event, f"no answer within {settings.timeout_s * 1000:.0f} ms"
                 f" from {settings.url}; printed nothing")
        return ""
    if "error" in result:
        log_line(settings, event, f"{result['error']} (daemon {settings.url})")
        return ""
    return str(result.get("out") or "")
