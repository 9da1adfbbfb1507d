"""`mnemonist backup` over a real daemon: SQLite's online backup while writers keep writing,
a file that opens and passes the integrity check, and paths refused for the right reasons."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time

from click.testing import CliRunner

from conftest import run_daemon
from mnemonist.cli.main import cli


def test_a_backup_taken_while_writers_run_is_whole_and_current(live, tmp_path):
    for i in range(50):
        live.remember(f"Seed memory number {i} about the warehouse inventory")
    stop = threading.Event()
    written: list[int] = []

    def writer(n: int) -> None:
        i = 0
        while not stop.is_set():
            resp = live.http.post("/api/memory/remember",
                                  json={"content": f"writer {n} note {i} on shelf {i * 7}"})
            assert resp.status_code in (200, 201)
            written.append(1)
            i += 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    try:
        while len(written) < 30:  # the writers are well under way
            threading.Event().wait(0.01)
        before = live.service.db.reader().execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        target = tmp_path / "snap.db"
        out = CliRunner().invoke(cli, ["--url", live.url, "backup", "--json", str(target)])
        assert out.exit_code == 0, out.output
        answer = json.loads(out.stdout)
        during = len(written)
        deadline = time.monotonic() + 60
        while len(written) < during + 10 and time.monotonic() < deadline:
            time.sleep(0.01)  # the daemon still serves writes after the backup
        assert len(written) >= during + 10
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert answer["path"] == str(target) and answer["size"] == target.stat().st_size
    assert answer["pages"] > 0 and answer["took_ms"] >= 0
    conn = sqlite3.connect(target)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        copied = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        assert conn.execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0] == copied
    finally:
        conn.close()
    assert copied >= before and copied == answer["memories"]
    assert not list(tmp_path.glob(".snap.db.*"))  # no temporary file left behind


def test_backup_refuses_bad_paths_and_keeps_existing_files(live, tmp_path):
    existing = tmp_path / "there.db"
    existing.write_text("keep me")
    cases = {
        "relative.db": (400, "absolute"),
        str(existing / "x.db"): (400, "cannot create folder"),
        str(tmp_path): (400, "folder"),
        str(live.daemon.paths.database): (400, "live database"),
        str(existing): (409, "already exists"),
    }
    for path, (status, words) in cases.items():
        resp = live.http.post("/api/backup", json={"path": path})
        assert resp.status_code == status, (path, resp.text)
        assert words in resp.json()["message"]
    assert existing.read_text() == "keep me"
    assert live.http.post("/api/backup", json={}).status_code == 400
    forced = live.http.post("/api/backup", json={"path": str(existing), "force": True})
    assert forced.status_code == 200, forced.text
    assert sqlite3.connect(existing).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    out = CliRunner().invoke(cli, ["--url", live.url, "backup", str(existing)])
    assert out.exit_code == 1 and "already exists" in out.output


def test_a_backup_into_a_new_folder_makes_the_folder(live, tmp_path):
    live.remember("Backups of the memory go to a folder that does not exist yet")
    target = tmp_path / "backups" / "nightly" / "memories.db"
    out = CliRunner().invoke(cli, ["--url", live.url, "backup", str(target)])
    assert out.exit_code == 0, out.output
    assert target.is_file() and (target.parent.stat().st_mode & 0o777) == 0o700
    conn = sqlite3.connect(target)
    try:
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] >= 1
    finally:
        conn.close()


def test_a_backup_restored_as_the_docs_say_starts_with_every_memory(live, tmp_path):
    made = live.remember("The restore drill happens every first Monday of the quarter")
    live.flush()
    snap = tmp_path / "restore-me.db"
    assert live.http.post("/api/backup", json={"path": str(snap)}).status_code == 200
    home = tmp_path / "restored"
    (home / "memory").mkdir(parents=True)
    shutil.copyfile(snap, home / "memory" / "memories.db")  # steps 2-3: no -wal / -shm
    with run_daemon(home) as restored:
        got = restored.http.get(f"/api/memory/{made['id']}")
        assert got.status_code == 200 and got.json()["content"] == made["content"]
        restored.flush()
        found = restored.recall("when is the restore drill?")["results"]
        assert found and found[0]["id"] == made["id"]
