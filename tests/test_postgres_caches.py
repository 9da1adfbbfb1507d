"""What a daemon keeps in memory follows the other daemons' writes on one PostgreSQL: the
known authors through LISTEN/NOTIFY (store/postgres/notify.py), recall's legs because they
read the database; the learned sparse leg, whose index is in-process, is refused there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import run_daemon
from mnemonist.settings import ConfigError, Paths, load_config
from mnemonist.text.tokens import tokenize
from pipeline_helpers import wait_for


def knows(daemon: Any, name: str) -> bool:
    words = set(tokenize(name))
    return words <= daemon.service.core.searcher.authors.named_in(f"what did {name} say")


def test_authors_written_or_changed_through_one_daemon_are_known_to_the_other(
    postgres_url: str, tmp_path: Path,
) -> None:
    config = {"storage": {"url": postgres_url}}
    with run_daemon(tmp_path / "a", config) as a, run_daemon(tmp_path / "b", config) as b:
        assert b.service.core.changes is not None and b.service.core.changes.listening.wait(30)
        made = a.remember("The kiln reached 1200 degrees on Tuesday", who="Melanie Okafor")
        assert wait_for(lambda: knows(b, "Melanie Okafor"), 60)
        # a modify of an old row's author: no new seq, only the notification tells B
        assert not knows(b, "Zbigniew Quartz")
        r = a.http.patch(f"/api/memory/{made['id']}", json={"who": "Zbigniew Quartz",
                                                             "reason": "wrong author"})
        assert r.status_code == 200, r.text
        assert wait_for(lambda: knows(b, "Zbigniew Quartz"), 60)
        assert b.service.core.changes.received >= 2


def test_after_its_connection_drops_the_listener_reconnects_and_rereads_the_authors(
    postgres_url: str, tmp_path: Path,
) -> None:
    config = {"storage": {"url": postgres_url}}
    with run_daemon(tmp_path / "a", config) as a, run_daemon(tmp_path / "b", config) as b:
        listener = b.service.core.changes
        assert listener is not None and listener.listening.wait(30)
        gaps, pid = listener.gaps, listener.pid
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        a.remember("Rotated the staging certificates", who="Ingrid Vasquez-Lund")
        assert wait_for(lambda: listener.gaps > gaps and listener.pid != pid, 60)
        assert wait_for(lambda: knows(b, "Ingrid Vasquez-Lund"), 60)
        a.remember("Renewed the wildcard domain", who="Tobiah Ferncastle")
        assert wait_for(lambda: knows(b, "Tobiah Ferncastle"), 60)


def test_a_memory_forgotten_or_moved_through_one_daemon_leaves_the_others_recall(
    postgres_url: str, tmp_path: Path,
) -> None:
    config = {"storage": {"url": postgres_url}}
    with run_daemon(tmp_path / "a", config) as a, run_daemon(tmp_path / "b", config) as b:
        made = a.remember("The hangar door sensor reports a false alarm at dawn",
                          project="ops")
        a.flush()
        query = "false alarm from the hangar door"
        assert made["id"] in [r["id"] for r in b.recall(query, project="ops")["results"]]
        r = a.http.patch(f"/api/memory/{made['id']}", json={"project": "hangar",
                                                             "reason": "moved"})
        assert r.status_code == 200, r.text
        assert made["id"] not in [r["id"] for r in b.recall(query, project="ops")["results"]]
        assert made["id"] in [r["id"] for r in b.recall(query, project="hangar")["results"]]
        r = a.http.request("DELETE", f"/api/memory/{made['id']}", json={"reason": "noise"})
        assert r.status_code == 200, r.text
        for leg_query in (query, "what wakes people up too early at the airfield?"):
            got = b.recall(leg_query, project="hangar")["results"]
            assert made["id"] not in [r["id"] for r in got]


def test_the_learned_sparse_leg_is_refused_on_postgresql(tmp_path: Path) -> None:
    from mnemonist.daemon import Daemon

    home = tmp_path / "h"
    home.mkdir()
    paths = Paths(home)
    config = load_config(paths, {"storage": {"url": "postgresql://nobody@127.0.0.1:1/x"},
                                 "sparse": {"enabled": True}})
    for _ in range(2):  # the home's lock is released: the second start is refused alike
        with pytest.raises(ConfigError, match=r"sparse\.enabled"):
            Daemon(paths, config)


def test_every_integer_column_holds_64_bits_on_postgresql(postgres_url: str,
                                                           tmp_path: Path) -> None:
    """SQLite's INTEGER is 64-bit: a file's mtime in nanoseconds must fit on PostgreSQL."""
    with run_daemon(tmp_path / "a", {"storage": {"url": postgres_url}}) as a:
        db = a.service.core.db
        narrow = db.reader().execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND data_type = 'integer'").fetchall()
        assert narrow == []
        with db.write_tx() as w:
            w.execute("INSERT INTO memory_files (path, root, mtime_ns, indexed_at, checked_at)"
                      " VALUES (?, ?, ?, ?, ?)", ("/p/MEMORY.md", "/p", 1_763_900_000 * 10**9,
                                                  "2025-11-23T00:00:00Z", "2025-11-23T00:00:00Z"))
        assert db.reader().execute("SELECT mtime_ns FROM memory_files").fetchone()[0] == (
            1_763_900_000 * 10**9)


def test_the_notification_trigger_is_made_once_and_left_alone_after(postgres_url: str) -> None:
    from mnemonist.store.migrations import migrate
    from mnemonist.store.postgres.database import PostgresDatabase
    from mnemonist.store.postgres.notify import install

    db = PostgresDatabase(postgres_url)
    try:
        migrate(db)
        with db.write_tx() as w:
            assert install(w.raw) is False  # made by the start already
            w.raw.execute("DROP TRIGGER memories_notify_author_update ON memories")
            assert install(w.raw) is True  # one missing: made again
            assert install(w.raw) is False
    finally:
        db.close()
