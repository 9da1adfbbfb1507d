"""The CLI made complete: list, --version, --url after the sub-command, exit codes when a
command did nothing, and one line (never a traceback) when the daemon does not answer."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from click.testing import CliRunner

from conftest import free_port
from mnemonist import __version__
from mnemonist.cli.main import cli

MNEMONIST = [sys.executable, "-c", "from mnemonist.cli.main import cli; cli()"]


def run(live, *args: str, env: dict[str, str] | None = None):
    return CliRunner(env=env).invoke(cli, [*args, "--url", live.url], catch_exceptions=False)


def test_version():
    out = CliRunner().invoke(cli, ["--version"])
    assert out.exit_code == 0 and out.output.strip() == f"mnemonist {__version__}"


def test_list_is_a_table_with_filters_and_json(live):
    a = live.remember("list table: the office moved to the fifth floor", project="list-a",
                      type="fact", who="alice")
    b = live.remember("list table: always run the linter before pushing", project="list-b",
                      type="rule", who="bob")
    out = run(live, "list", "--project", "list-a")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].split() == ["when", "stored", "project", "type", "who", "id", "content"]
    assert len(lines) == 2
    row = lines[1]
    assert a["created_at"][:10] in row and "list-a" in row and "fact" in row
    assert "alice" in row and a["id"][:8] in row and "fifth floor" in row
    assert b["id"][:8] not in out.output

    by_who = run(live, "list", "--who", "bob", "--type", "rule")
    assert b["id"][:8] in by_who.output and a["id"][:8] not in by_who.output
    data = json.loads(run(live, "list", "--project", "list-b", "--json").output)
    assert [m["id"] for m in data["memories"]] == [b["id"]]
    later = run(live, "list", "--project", "list-a", "--since", "2999-01-01")
    assert later.exit_code == 0 and "no memories" in later.output
    earlier = run(live, "list", "--project", "list-a", "--until", "2000-01-01", "--json")
    assert json.loads(earlier.output)["memories"] == []
    limited = run(live, "list", "--limit", "1")
    assert len(limited.output.splitlines()) == 3 and "in all (--limit)" in limited.output


def test_url_goes_before_or_after_the_sub_command_or_in_the_environment(live):
    live.remember("url placement: the coffee machine is on floor two")
    after = CliRunner().invoke(cli, ["status", "--url", live.url])
    before = CliRunner().invoke(cli, ["--url", live.url, "status"])
    env = CliRunner(env={"MNEMONIST_URL": live.url}).invoke(cli, ["status"])
    for out in (after, before, env):
        assert out.exit_code == 0 and "memories:" in out.output, out.output
    # the one after the sub-command wins
    dead = f"http://127.0.0.1:{free_port()}"
    wins = CliRunner().invoke(cli, ["--url", dead, "list", "--url", live.url])
    assert wins.exit_code == 0, wins.output


def test_commands_that_did_nothing_exit_nonzero(live):
    missing = "0" * 8 + "-0000-4000-8000-" + "0" * 12
    out = run(live, "forget", missing, "--yes", "--reason", "x")
    assert out.exit_code == 1 and "nothing to forget" in out.output
    assert missing in out.output
    nothing = run(live, "forget", "--query", "zyxwvut qqqq", "--yes", "--reason", "x")
    assert nothing.exit_code == 1 and "nothing to forget" in nothing.output
    assert run(live, "get", missing).exit_code == 1
    assert run(live, "history", missing).exit_code == 1
    assert run(live, "modify", missing, "--importance", "0.2", "--reason", "x").exit_code == 1
    assert run(live, "pin", missing).exit_code == 1
    assert run(live, "recover", missing, "--reason", "x").exit_code == 1
    made = live.remember("exit codes: modify with no change asked for")
    asked_nothing = run(live, "modify", made["id"], "--reason", "x")
    assert asked_nothing.exit_code == 1 and "--content" in asked_nothing.output
    not_deleted = run(live, "recover", made["id"], "--reason", "x")
    assert not_deleted.exit_code == 1 and "not_deleted" in not_deleted.output
    # one id found, one not: the found one goes, the command still says it fell short
    partial = run(live, "forget", made["id"], missing, "--yes", "--reason", "x")
    assert partial.exit_code == 1 and "forgot 1" in partial.output and missing in partial.output


@contextmanager
def silent_server() -> Iterator[str]:
    """A socket that accepts connections and never answers (a hung daemon)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        srv.close()


def test_a_hung_daemon_is_one_line_and_exit_1():
    with silent_server() as url:
        out = CliRunner().invoke(cli, ["recall", "anything", "--url", url, "--timeout", "0.5"])
        assert out.exit_code == 1
        assert out.output.count("\n") == 1, out.output
        assert url in out.output and "did not answer" in out.output
        assert "mnemonist serve" in out.output and "--url" in out.output
        # the real program, end to end: stderr is that one line, no traceback
        proc = subprocess.run([*MNEMONIST, "list", "--url", url],
                              env={**os.environ, "MNEMONIST_TIMEOUT": "0.5"},
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "did not answer within 0.5 s" in proc.stderr


def test_a_daemon_that_is_not_running_is_one_line_naming_the_url_and_the_fix():
    url = f"http://127.0.0.1:{free_port()}"
    out = CliRunner().invoke(cli, ["list", "--url", url])
    assert out.exit_code == 1 and len(out.output.splitlines()) == 1
    assert url in out.output and "mnemonist serve" in out.output
    bad = CliRunner().invoke(cli, ["list", "--url", "nonsense://x"])
    assert bad.exit_code == 1 and "check --url" in bad.output
    assert "Traceback" not in bad.output
