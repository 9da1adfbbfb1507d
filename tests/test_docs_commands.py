"""Every shell command in docs/*.md runs verbatim against a real daemon.

The README's commands are run by test_readme_commands.py; this is the same for the docs, one
test per doc that holds a ```bash / ```sh / ```shell block. Each doc gets its own daemon,
started as the README starts it (`./dev serve`, with `--port`: a free port, and a temporary
home), and its shell blocks run in order in one bash session, as a reader pastes them into one
terminal: `set -euo pipefail`, from a fresh project folder that holds a link to the project's
`.venv`, with `.venv/bin` first on PATH (the README's quick start puts it there), HOME and
MNEMONIST_HOME in the temporary folder and MNEMONIST_URL pointing at the daemon.

The only change to a command is the port: `3850` becomes the test daemon's. `curl` runs with
`--fail-with-body`, so an HTTP error (a 404 for an id that does not exist) fails the command
as it would fail a reader. Files a reader brings (`conversations.json`, a ChatGPT export) are
written first, and where a doc's prose states a precondition (a project root in `agent.yaml`),
the home is set up that way before the daemon starts (AGENT_YAML). The commands not run are in
SKIP, by doc, each with its reason; test_the_skipped_commands_are_in_the_docs keeps the list
from going stale.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import free_port
from shell_session import ROOT, VENV, dev_serve, reader_env, reader_folders, run_script
from test_readme_commands import _split, commands, shell_blocks

DOCS = ROOT / "docs"

_MINUTES = "runs for minutes (a benchmark)"
_POSTGRES = "needs a PostgreSQL server (db.internal, or one on 127.0.0.1:5432) that is not here"
_RUNBOOK = "run by test_postgres_runbook.py, in order, against a new PostgreSQL"

#: commands of the docs this test does not run, and why (matched at the start of a command)
SKIP: dict[str, dict[str, str]] = {
    "benchmarks.md": {
        "mnemonist bench scale --n 1000000": _MINUTES,
        "mnemonist bench sessions": _MINUTES,
        "mnemonist bench locomo": _MINUTES,
        "mnemonist bench agent-memory": _MINUTES,
        "mnemonist bench relevance": _MINUTES,
        "mnemonist bench feedback": _MINUTES,
    },
    "postgres.md": {
        # the set-up, migration and backup runbook: test_postgres_runbook.py runs these
        # verbatim and in order, against a new server (`mnemonist postgres init`, and one
        # that stands for the team's), around the daemons they set up
        **{start: _RUNBOOK for start in (
            "mnemonist postgres ", "URL=", "eval ", "export PGHOST=", "export PATH=", "psql ",
            "PASSWORD=", "createdb ", "mnemonist migrate ", "pg_dump ", "pg_restore ")},
        "mnemonist bench team --storage postgresql://": _POSTGRES + "; " + _MINUTES,
    },
    "sessions.md": {
        "mnemonist sessions show SESSION_ID": "needs the id of a session that a coding agent"
                                              " (Claude Code, Codex, OpenCode) recorded",
    },
}

#: the home's agent.yaml, by doc, where the doc's prose presupposes one
AGENT_YAML = {
    # "With `~/code/shop` among the project roots (below: in `files.roots`, ...)"
    "files.md": "files:\n  roots:\n    - ~/code/shop\n",
}


def _complete(command: str) -> bool:
    """Whether bash reads `command` as whole: no quote left open, no `do` without its `done`."""
    return subprocess.run(["bash", "-n", "-c", command], capture_output=True).returncode == 0


def block_commands(block: str) -> list[str]:
    """`commands` of the README's test, with a command that runs over several lines without a
    backslash (a quoted JSON body on two lines, a `for` loop) kept whole, as bash reads it."""
    out: list[str] = []
    for command in commands(block):
        if out and not _complete(out[-1]):
            out[-1] += "\n" + command
        else:
            out.append(command)
    assert not out or _complete(out[-1]), f"bash cannot read this command: {out[-1]!r}"
    return out


def doc_commands(doc: str) -> list[str]:
    text = (DOCS / doc).read_text(encoding="utf-8")
    return [c for block in shell_blocks(text) for c in block_commands(block)]


def docs_with_commands() -> list[str]:
    return sorted(p.name for p in DOCS.glob("*.md") if doc_commands(p.name))


def skipped(doc: str, command: str) -> str | None:
    return next((why for start, why in SKIP.get(doc, {}).items() if command.startswith(start)),
                None)


def docs_to_run() -> list[str]:
    """The docs with a command that runs here (benchmarks.md holds only benchmarks that run
    for minutes: its commands are all in SKIP, which the staleness test checks)."""
    return [d for d in docs_with_commands()
            if any(skipped(d, c) is None for c in doc_commands(d))]


def _path_with_venv() -> str:
    rest = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and Path(p).resolve() != (VENV / "bin").resolve()]
    return os.pathsep.join([str(VENV / "bin"), *rest])


@pytest.mark.parametrize("doc", docs_to_run())
def test_every_command_of_the_doc_runs(doc: str, tmp_path: Path) -> None:
    home, user_home, work = reader_folders(tmp_path, "project")
    if doc in AGENT_YAML:
        (home / "agent.yaml").write_text(AGENT_YAML[doc], encoding="utf-8")
    port = free_port()
    env = reader_env(home, user_home, port, _path_with_venv())
    ran = [c for c in doc_commands(doc) if skipped(doc, c) is None]
    with dev_serve(env, port):
        # curl fails on an HTTP error: a documented call answered 404 is a failure too
        done = run_script(ran, port, work, env,
                          prelude=['curl() { command curl --fail-with-body "$@"; }'])
    if done.returncode != 0:
        failed = max(_split(done.stderr), default=-1)
        command = ran[failed] if failed >= 0 else "(before the first command)"
        out = _split(done.stdout).get(failed, "")
        err = _split(done.stderr).get(failed, done.stderr)
        pytest.fail(f"{doc}: command failed (exit {done.returncode}): {command}\n"
                    f"stdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}")
    assert len(_split(done.stdout)) == len(ran)


def test_the_skipped_commands_are_in_the_docs() -> None:
    """SKIP names only commands the docs hold (a stale entry would hide nothing)."""
    for doc, entries in SKIP.items():
        held = doc_commands(doc)
        for start in entries:
            assert any(c.startswith(start) for c in held), (doc, start)



def unmarked_blocks(markdown: str) -> list[str]:
    """The code blocks that open with a bare ``` (no language)."""
    out: list[str] = []
    fence: str | None = None  # the open block's language
    for line in markdown.splitlines():
        if line.startswith("```"):
            if fence is None:
                fence, body = line[3:].strip(), []
            else:
                if fence == "":
                    out.append("\n".join(body))
                fence = None
        elif fence is not None:
            body.append(line)
    return out


def test_no_command_hides_in_an_unmarked_block() -> None:
    """A command in a ``` block without a language would escape this test: the docs mark every
    block of commands `bash` (or `sh`)."""
    starts = ("mnemonist ", "curl ", "./dev ", ".venv/", "pg_dump ", "export ")
    for path in sorted(DOCS.glob("*.md")):
        for block in unmarked_blocks(path.read_text(encoding="utf-8")):
            assert not block.lstrip().startswith(starts), (path.name, block[:200])
