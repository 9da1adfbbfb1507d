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

import click
import pytest
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


def test_list_shows_and_sorts_by_when_it_happened(live: LiveDaemon) -> None:
    """A 2024 chat message imported today lists under 2024, after what happened since;
    when it was stored stays visible."""
    new = live.remember("order test: a note about something that happened today",
                        project="order-test")
    old = live.remember("order test: a chat message from March 2024", project="order-test",
                        occurred_at="2024-03-05T10:20:00Z")  # imported after it
    out = run(live, "list", "--project", "order-test")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].split()[:2] == ["when", "stored"]
    assert new["id"][:8] in lines[1] and old["id"][:8] in lines[2]  # newest event first
    assert lines[2].startswith("2024-03-05 10:20") and old["created_at"][:10] in lines[2]
    # stored first: the old message was stored last, so it leads
    stored = run(live, "list", "--project", "order-test", "--order", "created_at")
    assert old["id"][:8] in stored.output.splitlines()[1]
    body = live.http.get("/api/memories", params={"project": "order-test"}).json()
    assert [m["id"] for m in body["memories"]] == [new["id"], old["id"]]


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


def test_every_option_is_described_and_types_list_their_values() -> None:
    undescribed = [f"{' '.join(path)} {p.opts[0]}" for path, command in _commands(cli)
                   for p in command.params
                   if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert undescribed == []
    for path, command in _commands(cli):
        for p in command.params:
            if "--type" in getattr(p, "opts", []):
                assert isinstance(p.type, click.Choice), path
                assert "decision" in p.type.choices and "rule" in p.type.choices, path
    help_text = CliRunner().invoke(cli, ["recall", "--help"]).output
    assert "[fact|preference|decision|rule" in help_text


def test_command_listings_are_not_cut() -> None:
    """`mnemonist --help` and every group's --help list whole descriptions, not "..."."""
    groups = [((), cli), *((path, c) for path, c in _commands(cli)
                           if isinstance(c, click.Group))]
    for path, _group in groups:
        out = CliRunner().invoke(cli, [*path, "--help"], terminal_width=80)
        assert out.exit_code == 0, out.output
        listing = out.output.split("Commands:")[1]
        assert "..." not in listing and "…" not in listing, (path, listing)


@pytest.mark.parametrize("harness, folders", [
    ("claude-code", [".claude"]),
    ("codex", [".codex"]),
    ("opencode", [".config"]),
])
def test_disconnect_removes_the_folders_connect_created(tmp_path, monkeypatch, harness,
                                                        folders) -> None:
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("MNEMONIST_HOME", str(tmp_path / "agents"))
    before = sorted(p.relative_to(user) for p in user.rglob("*"))
    out = CliRunner().invoke(cli, ["connect", harness, "--command", "/opt/bin/mnemonist"])
    assert out.exit_code == 0, out.output
    assert all((user / f).is_dir() for f in folders)
    out = CliRunner().invoke(cli, ["disconnect", harness])
    assert out.exit_code == 0, out.output
    assert sorted(p.relative_to(user) for p in user.rglob("*")) == before  # nothing left


def test_disconnect_keeps_a_folder_that_holds_something_else(tmp_path, monkeypatch) -> None:
    user = tmp_path / "user"
    (user / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("MNEMONIST_HOME", str(tmp_path / "agents"))
    (user / ".claude" / "notes.md").write_text("mine")
    for verb in ("connect", "disconnect"):
        out = CliRunner().invoke(cli, [verb, "claude-code", *(
            ("--command", "/opt/bin/mnemonist") if verb == "connect" else ())])
        assert out.exit_code == 0, out.output
    assert sorted(p.name for p in (user / ".claude").iterdir()) == ["notes.md"]


def test_changes_made_from_the_cli_are_recorded_as_cli(live: LiveDaemon) -> None:
    made = live.remember("who-made-it test: the build runs on Fridays")
    mid = made["id"]
    assert run(live, "modify", mid, "--content", "who-made-it test: the build runs on Mondays",
               "--reason", "moved").exit_code == 0
    assert run(live, "pin", mid).exit_code == 0
    assert run(live, "unpin", mid, "--agent", "agent-7").exit_code == 0
    assert run(live, "forget", mid, "--yes", "--reason", "gone").exit_code == 0
    assert run(live, "recover", mid, "--reason", "back").exit_code == 0
    events = live.http.get(f"/api/memory/{mid}/history").json()["events"]
    by = [(e["event"], e["changed_by"]) for e in events]
    assert by[1:] == [("modified", "cli"), ("modified", "cli"), ("modified", "agent-7"),
                      ("deleted", "cli"), ("recovered", "cli")], by
