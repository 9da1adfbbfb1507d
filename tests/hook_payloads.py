"""Realistic Claude Code hook inputs: the JSON objects its hooks receive on stdin and a
session transcript in its JSONL format (messages with content arrays, thinking, tool_use and
tool_result blocks, a summary line and a metadata-only line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ALNUM = "aB3dE5fG7hJ9kL2mN4pQ6rS8tV0wX1yZ"
FAKE_KEY = "sk-" + "ant-" + "api03-" + ALNUM + ALNUM + "-AA"  # assembled: no literal secret

_script = Path(sys.executable).parent / "mnemonist"
MNEMONIST = [str(_script)] if _script.exists() else [sys.executable, "-m", "mnemonist.cli.main"]


def payload(event: str, session_id: str, cwd: Path, transcript: Path | None = None,
            **extra: Any) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": str(transcript or cwd / f"{session_id}.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **extra,
    }


def _line(kind: str, session_id: str, cwd: Path, n: int, message: dict[str, Any],
          **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": f"uuid-{n - 1}" if n else None, "isSidechain": False,
        "userType": "external", "cwd": str(cwd), "sessionId": session_id,
        "version": "2.0.14", "gitBranch": "main", "type": kind, "message": message,
        "uuid": f"uuid-{n}", "timestamp": f"2025-10-01T10:{n:02d}:00.000Z", **extra,
    }


def write_transcript(path: Path, session_id: str, cwd: Path) -> Path:
    src = cwd / "src"
    lines = [
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {"trackedFiles": {}}},
        _line("user", session_id, cwd, 1, {"role": "user", "content":
              "Add rate limiting to the login endpoint"}),
        _line("assistant", session_id, cwd, 2, {
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "Look at the handler first.", "signature": "s"},
                {"type": "text", "text": "I'll read the login handler."},
                {"type": "tool_use", "id": "toolu_01", "name": "Read",
                 "input": {"file_path": str(src / "login.py")}},
            ],
            "stop_reason": "tool_use", "usage": {"input_tokens": 1200, "output_tokens": 80}}),
        _line("user", session_id, cwd, 3, {"role": "user", "content": [
            {"tool_use_id": "toolu_01", "type": "tool_result",
             "content": "def login(request):\n    return authenticate(request)"}]},
            toolUseResult={"type": "text"}),
        _line("assistant", session_id, cwd, 4, {
            "id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [
                {"type": "tool_use", "id": "toolu_02", "name": "Edit",
                 "input": {"file_path": str(src / "login.py"), "old_string": "return",
                           "new_string": "limiter.check(request)\n    return"}},
            ]}),
        _line("user", session_id, cwd, 5, {"role": "user", "content": [
            {"tool_use_id": "toolu_02", "type": "tool_result", "content": "ok"}]}),
        _line("assistant", session_id, cwd, 6, {
            "id": "msg_03", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": "toolu_03", "name": "Bash",
                         "input": {"command": "pytest -q tests/test_login.py"}}]}),
        _line("user", session_id, cwd, 7, {"role": "user", "content": [
            {"tool_use_id": "toolu_03", "type": "tool_result", "is_error": True,
             "content": "FAILED tests/test_login.py::test_limit - NameError: limiter"}]}),
        _line("user", session_id, cwd, 8, {"role": "user", "content": [
            {"type": "text", "text": f"Use this key for the staging test: {FAKE_KEY}"}]}),
        _line("assistant", session_id, cwd, 9, {
            "id": "msg_04", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text":
                         "Next step: import the limiter in login.py and rerun the tests."}]}),
        {"type": "summary", "summary": "Rate limiting the login endpoint", "leafUuid": "uuid-9"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def run_hook(event: str, body: Any, *, url: str, home: Path, timeout_ms: int = 5000,
             extra_args: tuple[str, ...] = (), raw: bytes | None = None,
             wait_s: float = 60) -> tuple[int, str, float]:
    """Run `mnemonist hook <event>` as Claude Code does: JSON on stdin, stdout captured."""
    env = {**os.environ, "MNEMONIST_HOME": str(home)}
    env.pop("MNEMONIST_URL", None)
    data = raw if raw is not None else json.dumps(body).encode()
    started = time.monotonic()
    proc = subprocess.run(
        [*MNEMONIST, "--url", url, "hook", event, "--timeout", str(timeout_ms), *extra_args],
        input=data, capture_output=True, env=env, timeout=wait_s,
    )
    return proc.returncode, proc.stdout.decode(), time.monotonic() - started


def hook_log(home: Path) -> str:
    path = home / "logs" / "hooks.log"
    return path.read_text() if path.exists() else ""
