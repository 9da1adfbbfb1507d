"""`mnemonist serve` says where it listens once it answers, and a taken port in one line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import yaml

MNEMONIST = [sys.executable, "-c", "from mnemonist.cli.main import cli; cli()"]
NO_MODEL = {"embedding": {"provider": "none"}}


def _serve(home: Path, *args: str) -> subprocess.Popen[str]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "agent.yaml").write_text(yaml.safe_dump(NO_MODEL))
    env = {k: v for k, v in os.environ.items() if k != "MNEMONIST_TOKEN"}
    env["MNEMONIST_HOME"] = str(home)
    return subprocess.Popen([*MNEMONIST, "serve", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_serve_prints_where_it_listens_once_it_answers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _serve(home, "--port", str(port))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the line, or EOF if serve died
        assert line == (f"mnemonist listening on http://127.0.0.1:{port} (home {home},"
                        f" database {home / 'memory' / 'memories.db'})\n"), (
            line, proc.poll() is not None and proc.communicate()[1])
        # printed once the server is up: it answers now
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=30).status_code == 200
    finally:
        _stop(proc)


def test_a_taken_port_is_one_line_suggesting_port(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = _serve(tmp_path / "home", "--port", str(port))
        try:
            out, err = proc.communicate(timeout=120)
        finally:
            _stop(proc)
    assert proc.returncode == 1 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"port {port} on 127.0.0.1 is already in use" in err and "--port" in err
    # it gave up before touching the home: no database, no lock
    assert not (tmp_path / "home" / "memory" / "memories.db").exists()
