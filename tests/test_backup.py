"""`mnemonist backup` over a real daemon: SQLite's online backup while writers keep writing,
a file that opens and passes the integrity check, and paths refused for the right reasons."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
from pathlib import Path

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
        before = live.service.core.db.reader().execute(
            "SELECT COUNT(*) FROM memories").fetchone()[0]
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


def test_the_cli_refuses_bad_paths_and_keeps_existing_files(live, tmp_path):
    existing = tmp_path / "there.db"
    existing.write_text("keep me")
    link = tmp_path / "link.db"
    link.symlink_to(existing)
    cases = {
        str(existing / "x.db"): "cannot create folder",
        str(link): "symbolic link",
        str(existing): "already exists",
    }
    for path, words in cases.items():
        out = CliRunner().invoke(cli, ["--url", live.url, "backup", path])
        assert out.exit_code == 1 and words in out.output, (path, out.output)
    out = CliRunner().invoke(cli, ["--url", live.url, "backup", str(tmp_path)])
    assert out.exit_code == 2 and "is a directory" in out.output  # click's own check
    assert existing.read_text() == "keep me"
    live_db = live.daemon.paths.database
    out = CliRunner().invoke(cli, ["--url", live.url, "backup", "--force", str(live_db)])
    assert out.exit_code == 1 and "live database" in out.output, out.output
    assert live.http.get("/api/status").status_code == 200
    assert sqlite3.connect(live_db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    out = CliRunner().invoke(cli, ["--url", live.url, "backup", "--force", str(existing)])
    assert out.exit_code == 0, out.output  # the local user may replace their own file
    assert sqlite3.connect(existing).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert not list(tmp_path.glob(".*.tmp"))
    assert nothing_left(live.daemon.paths.home / "backups")


def test_the_route_names_a_file_in_the_homes_backups_folder_never_a_path(live, tmp_path):
    """A request body never chooses the file the daemon writes: `path` is refused, `name` is
    a file name inside <home>/backups/, and `force` replaces only a previous backup."""
    victim = tmp_path / "bashrc"
    victim.write_text("export PATH=$PATH:~/bin\n")
    folder = live.daemon.paths.home / "backups"
    for body in ({"path": str(victim), "force": True}, {"path": "relative.db"}):
        resp = live.http.post("/api/backup", json=body)
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"] == "path_not_allowed"
        assert "backups" in resp.json()["message"]
    for name in (str(victim), "../bashrc", "..", ".hidden.db", "a/b.db", "a\\b.db",
                 "x.db\x00", "", "sneaky.db.tmp"):
        resp = live.http.post("/api/backup", json={"name": name, "force": True})
        assert resp.status_code == 400, (name, resp.text)
        assert "name" in resp.json()["message"]
    assert victim.read_text() == "export PATH=$PATH:~/bin\n"

    first = live.http.post("/api/backup", json={"name": "nightly.db"})
    assert first.status_code == 200, first.text
    made = first.json()
    assert made["path"] == str(folder / "nightly.db") and made["name"] == "nightly.db"
    assert (folder.stat().st_mode & 0o777) == 0o700
    again = live.http.post("/api/backup", json={"name": "nightly.db"})
    assert again.status_code == 409 and again.json()["error"] == "exists"
    assert live.http.post("/api/backup", json={"name": "nightly.db", "force": True}
                          ).status_code == 200  # a previous backup may be replaced

    (folder / "notes.txt").write_text("not a backup")
    plain_sqlite = folder / "other.db"
    sqlite3.connect(plain_sqlite).execute("CREATE TABLE t (x)").connection.close()
    (folder / "elsewhere.db").symlink_to(victim)
    for name, status, code in (("notes.txt", 409, "not_a_backup"),
                               ("other.db", 409, "not_a_backup"),
                               ("elsewhere.db", 400, "invalid_request")):
        resp = live.http.post("/api/backup", json={"name": name, "force": True})
        assert resp.status_code == status and resp.json()["error"] == code, (name, resp.text)
    assert (folder / "notes.txt").read_text() == "not a backup"
    assert victim.read_text() == "export PATH=$PATH:~/bin\n"
    assert sqlite3.connect(plain_sqlite).execute(
        "SELECT name FROM sqlite_master").fetchall() == [("t",)]

    default = live.http.post("/api/backup", json={})
    assert default.status_code == 200, default.text
    assert default.json()["name"].startswith("memories-") and Path(
        default.json()["path"]).parent == folder
    bad = live.http.post("/api/backup", json={"download": True, "name": "x.db"})
    assert bad.status_code == 400


def test_a_download_is_the_whole_database_and_leaves_nothing_behind(live):
    live.remember("The download route sends the backup and keeps no copy of it")
    resp = live.http.post("/api/backup", json={"download": True})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/vnd.sqlite3"
    assert resp.content.startswith(b"SQLite format 3\x00")
    assert int(resp.headers["x-mnemonist-backup-memories"]) >= 1
    assert nothing_left(live.daemon.paths.home / "backups")


def nothing_left(folder: Path) -> bool:
    """No download copy or temporary file stays (the copy goes once the answer is sent)."""
    deadline = time.monotonic() + 10
    while list(folder.glob(".download-*")) or list(folder.glob("*.tmp")):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


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
    copied = live.http.post("/api/backup", json={"name": "restore-me.db"})
    assert copied.status_code == 200, copied.text
    snap = Path(copied.json()["path"])
    assert snap == live.daemon.paths.home / "backups" / "restore-me.db"
    home = tmp_path / "restored"
    (home / "memory").mkdir(parents=True)
    shutil.copyfile(snap, home / "memory" / "memories.db")  # steps 2-3: no -wal / -shm
    with run_daemon(home) as restored:
        got = restored.http.get(f"/api/memory/{made['id']}")
        assert got.status_code == 200 and got.json()["content"] == made["content"]
        restored.flush()
        found = restored.recall("when is the restore drill?")["results"]
        assert found and found[0]["id"] == made["id"]
