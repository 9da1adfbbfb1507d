"""Every shell command in the README's code blocks runs verbatim against a real daemon.

The daemon is the README's own first command, `./dev serve` (with `--port`: a free port, and
a temporary home), started as a subprocess. The README's shell blocks then run in order in one
bash session, as a reader pastes them into one terminal: `set -e`, from a folder that holds
the project's `.venv` (a link to it; `mnemonist` is NOT on PATH until the quick start's
`export` line puts it there), with HOME and MNEMONIST_HOME in the temporary folder. The only
change to a command is the port: `3850` becomes the test daemon's, and MNEMONIST_URL points
the CLI there. Files a reader brings (`conversations.json`, a ChatGPT export) are written
first. The commands not run are listed in NOT_RUN, each with the reason.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from conftest import free_port
from shell_session import MARK, ROOT, VENV, dev_serve, reader_env, reader_folders, run_script

README = ROOT / "README.md"

#: commands of the README this test does not run, and why (matched at the start of a line)
NOT_RUN = {
    "./dev serve": "the daemon this test starts is exactly this command (with --port)",
    "./dev test": "runs the whole suite, this test included",
    "mnemonist sessions show SESSION_ID": "needs the id of a session that a coding agent"
                                          " (Claude Code, Codex, OpenCode) recorded",
}


def shell_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", markdown, re.M | re.S)


def commands(block: str) -> list[str]:
    """The block's command lines: continuation lines joined, comment-only and blank lines
    left out (a trailing comment stays: bash ignores it)."""
    out: list[str] = []
    pending = ""
    for line in block.splitlines():
        if pending:
            pending += "\n" + line
        elif line.strip() and not line.lstrip().startswith("#"):
            pending = line
        else:
            continue
        if not line.endswith("\\"):
            out.append(pending)
            pending = ""
    assert not pending, f"a command ends with a backslash: {pending!r}"
    return out


def readme_commands() -> list[str]:
    return [c for block in shell_blocks(README.read_text(encoding="utf-8"))
            for c in commands(block)]


def not_run(command: str) -> str | None:
    return next((why for start, why in NOT_RUN.items() if command.startswith(start)), None)


@dataclass
class Session:
    """What the README's commands printed, by command."""

    commands: list[str]
    out: dict[int, str]
    returncode: int
    stderr: str
    port: int


def _split(text: str) -> dict[int, str]:
    parts: dict[int, str] = {}
    current = -1
    for line in text.splitlines(keepends=True):
        if line.startswith(MARK):
            current = int(line[len(MARK):])
            parts[current] = ""
        elif current >= 0:
            parts[current] += line
    return parts


def _path_without_venv() -> str:
    keep = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and Path(p).resolve() != (VENV / "bin").resolve()]
    return os.pathsep.join(keep) or "/usr/bin:/bin"


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    base = tmp_path_factory.mktemp("readme")
    home, user_home, work = reader_folders(base, "clone")  # "from the clone": its .venv
    port = free_port()
    env = reader_env(home, user_home, port, _path_without_venv())
    first = readme_commands()[0]
    assert first.split("#")[0].strip() == "./dev serve", first  # the README opens with it
    with dev_serve(env, port):
        ran = [c for c in readme_commands() if not_run(c) is None]
        done = run_script(ran, port, work, env)
        yield Session(ran, _split(done.stdout), done.returncode, done.stderr, port)

def test_every_readme_command_runs(session: Session) -> None:
    if session.returncode != 0:
        failed = max(_split(session.stderr), default=-1)
        command = session.commands[failed] if failed >= 0 else "(before the first command)"
        pytest.fail(f"README command failed (exit {session.returncode}): {command}\n"
                    f"stderr:\n{_split(session.stderr).get(failed, session.stderr)[-3000:]}")
    assert len(session.out) == len(session.commands)


def test_the_commands_not_run_are_in_the_readme() -> None:
    """NOT_RUN names only commands the README holds (a stale entry would hide nothing)."""
    all_commands = readme_commands()
    for start in NOT_RUN:
        assert any(c.startswith(start) for c in all_commands), start


def _output_of(session: Session, start: str) -> str:
    found = [i for i, c in enumerate(session.commands) if c.startswith(start)]
    assert found, f"no README command starts with {start!r}"
    return session.out.get(found[0], "")


def test_the_first_example_recalls_what_it_remembered(session: Session) -> None:
    """The curl recall right after its remember finds the memory by meaning alone."""
    out = json.loads(_output_of(session, "curl -s localhost:3850/api/memory/recall"))
    contents = [r["content"] for r in out["results"]]
    assert "production runs PostgreSQL 16" in contents, out
    hit = out["results"][contents.index("production runs PostgreSQL 16")]
    assert hit["scores"]["keyword"] is None  # no word in common: its vector found it
    assert out["pending_embeddings"] == 0


def test_the_quick_start_recall_finds_it_at_once(session: Session) -> None:
    out = _output_of(session, 'mnemonist recall "what version of postgres is in prod?"')
    assert "production runs PostgreSQL 16" in out, out


def test_the_daemon_kept_what_the_commands_did(session: Session) -> None:
    url = f"http://127.0.0.1:{session.port}"
    listed = httpx.get(f"{url}/api/memories", params={"limit": 200}, timeout=30).json()
    contents = {m["content"] for m in listed["memories"]}
    assert "production runs PostgreSQL 16" in contents
    # forget --query forgot the staging notes; the purged memory is gone for good
    assert not any("staging deploys" in c for c in contents)
    assert not any("4 spaces" in c for c in contents)
    sessions = httpx.get(f"{url}/api/sessions", timeout=30)
    assert sessions.status_code == 200
