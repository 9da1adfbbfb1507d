"""An agent.yaml of the wrong shape or encoding: `serve` and `config show` stop with one line
naming the file and the key, never a traceback; a hook prints nothing, exits 0, contacts no
daemon (it does not guess the port) and logs the cause."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import free_port
from loopback import JsonHandler, LoopbackServer
from mnemonist.cli.main import cli

MNEMONIST = [sys.executable, "-c", "from mnemonist.cli.main import cli; cli()"]

#: (agent.yaml bytes, what the one line must name)
BAD = [
    pytest.param(b"memory: [1, 2]\n", ["memory = [1, 2]", "must be a mapping"], id="list"),
    pytest.param(b"search: 5\n", ["search = 5", "must be a mapping"], id="number"),
    pytest.param(b"memory:\n  pipelineV2: [on]\n",
                 ["memory.pipelineV2", "must be a mapping"], id="nested-list"),
    pytest.param(b"memory:\n  decay_rate: 0.9\n# caf\xe9 in Latin-1\n",
                 ["not UTF-8", "line 3"], id="latin-1"),
    pytest.param(b"memory:\n  since: 2024-13-45\n", ["not valid YAML", "month must be in"],
                 id="bad-date"),
    pytest.param(b"- just\n- a list\n", ["top level must be a mapping"], id="top-list"),
]
#: what serve and config show named already before (the hook did not stop for them)
HOOK_ONLY = {"top-list"}
STARTS = [case for case in BAD if case.id not in HOOK_ONLY]


def _home(tmp_path: Path, raw: bytes) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "agent.yaml").write_bytes(raw)
    return home


@pytest.mark.parametrize(("raw", "names"), STARTS)
def test_serve_stops_with_one_line_naming_the_problem(tmp_path: Path, raw: bytes,
                                                      names: list[str]) -> None:
    home = _home(tmp_path, raw)
    env = {k: v for k, v in os.environ.items() if k not in ("MNEMONIST_TOKEN", "MNEMONIST_URL")}
    env["MNEMONIST_HOME"] = str(home)
    out = subprocess.run([*MNEMONIST, "serve", "--port", str(free_port())], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stdout == "" and "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"mnemonist: configuration error: {home / 'agent.yaml'}: ")
    for name in names:
        assert name in lines[0]
    assert not (home / "memory").exists()  # stopped before touching anything


@pytest.mark.parametrize(("raw", "names"), STARTS)
def test_config_show_names_the_problem(tmp_path: Path, raw: bytes, names: list[str]) -> None:
    home = _home(tmp_path, raw)
    result = CliRunner().invoke(cli, ["config", "show", "--home", str(home)])
    assert result.exit_code == 2, result.output
    assert "configuration error" in result.output
    for name in names:
        assert name in result.output


class _Counting(JsonHandler):
    def _handle(self, method: str) -> None:
        with self.fake.lock:
            self.fake.hits.append(self.path)
        body = b'{"context": "from a daemon the hook guessed"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class CountingDaemon(LoopbackServer):
    """Answers every hook like a daemon would, and counts who asked."""

    handler_base = _Counting

    def __init__(self) -> None:
        self._httpd = None
        self._thread = None
        self.hits: list[str] = []
        self.lock = threading.Lock()


@pytest.mark.parametrize(("raw", "names"), BAD)
def test_a_hook_with_a_bad_config_prints_nothing_and_asks_no_daemon(
        tmp_path: Path, raw: bytes, names: list[str]) -> None:
    home = _home(tmp_path, raw)
    env = {k: v for k, v in os.environ.items() if k not in ("MNEMONIST_TOKEN", "MNEMONIST_URL")}
    env["MNEMONIST_HOME"] = str(home)
    hook = [*MNEMONIST, "hook", "user-prompt-submit", "--format", "text"]
    stdin = '{"session_id": "s1", "prompt": "hello"}'
    with CountingDaemon() as daemon:
        env["MNEMONIST_URL"] = daemon.url  # where a guess would go
        out = subprocess.run(hook, input=stdin, env=env, capture_output=True, text=True,
                             timeout=60)
        assert daemon.hits == []
        assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
        log = (home / "logs" / "hooks.log").read_text()
        assert "configuration error, the hook did nothing" in log
        for name in names:
            assert name in log
        # the control: with agent.yaml mended, the same hook reaches the same daemon
        (home / "agent.yaml").write_text("memory:\n  decay_rate: 0.9\n")
        out = subprocess.run(hook, input=stdin, env=env, capture_output=True, text=True,
                             timeout=60)
        assert daemon.hits == ["/api/hooks/user-prompt-submit"]
        assert out.returncode == 0 and "from a daemon the hook guessed" in out.stdout
