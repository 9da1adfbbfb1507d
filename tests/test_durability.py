"""kill -9 in the middle of concurrent writes: every acknowledged memory is there after a
restart, and the database passes `PRAGMA integrity_check`.

A real `mnemonist serve` process (its own MNEMONIST_HOME, a free loopback port), eight writer
threads posting remember, SIGKILL while they write, a second daemon on the same home."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import httpx

from conftest import free_port
from hook_payloads import MNEMONIST
from mnemonist.settings import Paths

WRITERS = 8
KILL_AFTER_ACKS = 300  # acknowledged writes before the kill (or KILL_AFTER_S, if sooner)
KILL_AFTER_S = 20.0


def start(home: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "MNEMONIST_HOME": str(home)}
    env.pop("MNEMONIST_URL", None)
    log = home / f"serve-{port}.log"
    with log.open("wb") as out:  # a file, not a pipe: a full pipe would block the daemon
        proc = subprocess.Popen([*MNEMONIST, "serve", "--port", str(port)], env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("daemon did not answer /health within 90 s")


def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    proc, url = start(tmp_path)
    acked: dict[str, str] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def writer(n: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as http:
            i = 0
            while not stop.is_set():
                content = f"writer {n} note {i}: the build cache lives on volume {n * 1000 + i}"
                try:
                    resp = http.post("/api/memory/remember",
                                     json={"content": content, "project": f"w{n}"})
                except httpx.HTTPError:
                    return  # the daemon is gone: this write was never acknowledged
                if resp.status_code == 201:
                    with lock:
                        acked[resp.json()["id"]] = content
                i += 1

    threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(WRITERS)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + KILL_AFTER_S
        while len(acked) < KILL_AFTER_ACKS and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)  # mid-stream: the writers are still posting
        proc.wait(10)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
    for t in threads:
        t.join(30)
    with lock:
        survivors = dict(acked)
    assert len(survivors) >= 50, f"only {len(survivors)} writes were acknowledged"

    proc, url = start(tmp_path)  # the same home, after the crash
    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            missing = []
            for mid, content in survivors.items():
                resp = http.get(f"/api/memory/{mid}")
                if resp.status_code != 200 or resp.json()["content"] != content:
                    missing.append(mid)
            assert missing == [], f"{len(missing)} of {len(survivors)} acknowledged writes lost"
        db = Paths(tmp_path).database
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] >= len(survivors)
        finally:
            conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
