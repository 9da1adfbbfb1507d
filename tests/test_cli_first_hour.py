"""The CLI as a newcomer meets it in the first hour: global options before the command, a
forget that cannot ask from a pipe, ids for scripts, what `list` dates, who a change is
recorded as, and `--help` that explains every option."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

from click.testing import CliRunner

from conftest import LiveDaemon
from mnemonist.cli.main import cli

MNEMONIST = [sys.executable, "-c", "from mnemonist.cli.main import cli; cli()"]


def run(live: LiveDaemon, *args: str):
    return CliRunner().invoke(cli, ["--url", live.url, *args], catch_exceptions=False)


def _env(live: LiveDaemon) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMONIST_")}
    return {**env, "MNEMONIST_URL": live.url}


def test_global_options_go_before_the_command(live: LiveDaemon) -> None:
    out = CliRunner().invoke(cli, ["--url", live.url, "--timeout", "5", "status"])
    assert out.exit_code == 0, out.output
    assert "memories:" in out.output


def test_a_timeout_before_the_command_is_the_one_used() -> None:
    """A daemon that accepts and never answers: `--timeout 0.5 status` gives up in about
    half a second (the default would wait 30)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        held: list[socket.socket] = []
        accepting = threading.Thread(
            target=lambda: held.append(server.accept()[0]), daemon=True)
        accepting.start()
        started = time.monotonic()
        out = CliRunner().invoke(cli, ["--url", f"http://127.0.0.1:{port}", "--timeout", "0.5",
                                       "status"])
        took = time.monotonic() - started
        for conn in held:
            conn.close()
    assert out.exit_code == 1 and took < 10, (took, out.output)
    assert "--timeout" in out.output


def test_forget_from_a_pipe_names_yes_and_forgets_nothing(live: LiveDaemon) -> None:
    made = live.remember("the pipe test note about the blue bicycle shed")
    cmd = [*MNEMONIST, "forget", "--query", "blue bicycle shed", "--reason", "gone"]
    done = subprocess.run(cmd, input="y\n", capture_output=True, text=True, env=_env(live),
                          timeout=60)
    assert done.returncode == 1
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 1 and "--yes" in errors[0] and "not a terminal" in errors[0], (
        done.stderr)
    assert "Aborted" not in done.stderr and "Traceback" not in done.stderr
    assert live.http.get(f"/api/memory/{made['id']}").json()["is_deleted"] in (0, False)
    # with --yes it forgets
    done = subprocess.run([*cmd, "--yes"], capture_output=True, text=True, env=_env(live),
                          stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 0, done.stderr
    assert live.http.get(f"/api/memory/{made['id']}").json()["is_deleted"] in (1, True)


def test_forget_help_says_it_asks_and_what_yes_does() -> None:
    out = CliRunner().invoke(cli, ["forget", "--help"])
    assert "[y/N]" in out.output and "--yes" in out.output
    assert "stdin is not a terminal" in out.output or "pipe" in out.output


def test_remember_quiet_prints_only_the_id(live: LiveDaemon) -> None:
    out = run(live, "remember", "-q", "a memory whose id a script keeps")
    assert out.exit_code == 0, out.output
    memory_id = out.output.strip()
    assert "\n" not in memory_id and len(memory_id) == 36
    assert live.http.get(f"/api/memory/{memory_id}").json()["content"] == (
        "a memory whose id a script keeps")
