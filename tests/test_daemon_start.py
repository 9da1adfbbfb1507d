"""Starting the daemon: one per home (a lock names the first one), weak tokens refused, and the
Host policy follows the address actually bound (`--host` over `server.host`). Real processes
where it matters."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from conftest import free_port, run_daemon
from mnemonist.daemon import AlreadyRunning, Daemon, open_memory
from mnemonist.settings import Paths, load_config

NO_MODEL = {"embedding": {"provider": "none"}}
SERVE = [sys.executable, "-c", "from mnemonist.cli.main import cli; cli()", "serve"]


def serve(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    environ = {k: v for k, v in os.environ.items() if k != "MNEMONIST_TOKEN"}
    environ.update(MNEMONIST_HOME=str(home), **(env or {}))
    return subprocess.Popen([*SERVE, *args], env=environ, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def write_config(home: Path, config: dict) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "agent.yaml").write_text(yaml.safe_dump(config))


def wait_up(url: str, proc: subprocess.Popen[str], headers: dict[str, str] | None = None) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited: {proc.communicate()[1]}")
        try:
            if httpx.get(f"{url}/health", headers=headers or {}, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("serve did not come up")


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# -- item 9: one daemon per home -------------------------------------------------------------------


def test_a_second_daemon_on_the_same_home_is_refused(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    first = Daemon(paths, load_config(paths, NO_MODEL), workers=False).start()
    try:
        with pytest.raises(AlreadyRunning) as err:
            Daemon(paths, load_config(paths, NO_MODEL), workers=False)
        assert f"pid {os.getpid()}" in str(err.value) and str(tmp_path) in str(err.value)
        with pytest.raises(AlreadyRunning):
            open_memory(tmp_path, NO_MODEL)
    finally:
        first.stop()
    again = open_memory(tmp_path, NO_MODEL)  # released on stop
    again.stop()


def test_serve_on_a_home_in_use_exits_naming_the_first_daemon(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, NO_MODEL)
    port = free_port()
    first = serve(home, "--port", str(port))
    try:
        wait_up(f"http://127.0.0.1:{port}", first)
        second = serve(home, "--port", str(free_port()))
        try:
            _, err = second.communicate(timeout=90)
        finally:
            stop(second)
        assert second.returncode != 0
        assert f"pid {first.pid}" in err and f"port {port}" in err, err
        assert "already using" in err
        # the first one is untouched
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
    finally:
        stop(first)


def test_an_in_process_daemon_holds_the_home_against_serve(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with run_daemon(home, NO_MODEL):
        proc = serve(home, "--port", str(free_port()))
        try:
            _, err = proc.communicate(timeout=90)
        finally:
            stop(proc)
        assert proc.returncode != 0 and f"pid {os.getpid()}" in err, err


# -- item 11: weak tokens -----------------------------------------------------------------------


@pytest.mark.parametrize(("token", "why"), [
    ("x", "at least 16"),
    ("fifteen-chars-x", "at least 16"),
    ("a token with spaces in it", "whitespace"),
    ("0123456789abcdef\n", "whitespace"),
])
def test_weak_tokens_are_refused_at_start(tmp_path: Path, token: str, why: str) -> None:
    home = tmp_path / "home"
    write_config(home, NO_MODEL)
    proc = serve(home, "--port", str(free_port()), env={"MNEMONIST_TOKEN": token})
    try:
        _, err = proc.communicate(timeout=90)
    finally:
        stop(proc)
    assert proc.returncode != 0
    assert "MNEMONIST_TOKEN" in err and why in err, err
    write_config(home, {**NO_MODEL, "server": {"token": token}})
    proc = serve(home, "--port", str(free_port()))
    try:
        _, err = proc.communicate(timeout=90)
    finally:
        stop(proc)
    assert proc.returncode != 0 and "server.token" in err and why in err, err
    assert token.strip() not in err or len(token) < 8  # the secret itself is never echoed


# -- item 3: the policy follows the bound address --------------------------------------------------


def test_the_host_policy_follows_the_bound_address_not_the_configured_one(
        tmp_path: Path) -> None:
    """`server.host: 0.0.0.0` but `--host 127.0.0.1`: the daemon is on loopback, so a token
    does not make a foreign Host acceptable (it would if it were bound to 0.0.0.0)."""
    home = tmp_path / "home"
    token = "a-sixteen-plus-character-token"
    write_config(home, {**NO_MODEL, "server": {"host": "0.0.0.0", "token": token}})
    port = free_port()
    proc = serve(home, "--host", "127.0.0.1", "--port", str(port))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(url, proc)
        auth = {"authorization": f"Bearer {token}"}
        assert httpx.get(f"{url}/api/memories", headers=auth).status_code == 200
        resp = httpx.get(f"{url}/api/memories", headers={**auth, "host": "attacker.example"})
        assert resp.status_code == 421 and resp.json()["error"] == "forbidden_host"
        resp = httpx.post(f"{url}/api/memory/remember", json={"content": "x"},
                          headers={**auth, "origin": "http://evil.example"})
        assert resp.status_code == 403
    finally:
        stop(proc)
