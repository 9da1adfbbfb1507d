"""The WAL is checkpointed on a background thread after commits, not by the committing writer
(store/checkpointer.py), on a real SQLite file."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from mnemonist.store.checkpointer import ROWS, SAFETY_PAGES
from mnemonist.store.db import Database

BLOB = 4 * 1024 * 1024  # one transaction of about 1,000 pages, in ROWS rows


def _wait_copied(db: Database, runs_before: int, timeout: float = 60.0) -> tuple[int, int, int]:
    """The first background checkpoint after `runs_before` that copied every frame of a WAL
    holding at least one blob."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = db._checkpointer.last
        if (db._checkpointer.runs > runs_before and last is not None
                and last[1] >= BLOB // 4096 and last[1] == last[2]):
            return last
        time.sleep(0.05)
    raise AssertionError(f"no complete background checkpoint: {db._checkpointer.last}")


def _write_blob(db: Database, key: int) -> None:
    with db.write_tx() as conn:
        conn.executemany("INSERT OR REPLACE INTO t (k, v) VALUES (?, ?)",
                         [(key * ROWS + i, os.urandom(BLOB // ROWS)) for i in range(ROWS)])


def test_the_writer_leaves_checkpoints_to_the_background_thread(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    try:
        assert db._writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == SAFETY_PAGES
        with db.write_tx() as conn:
            conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
        runs = db._checkpointer.runs
        _write_blob(db, 1)
        busy, frames, copied = _wait_copied(db, runs)
        assert busy == 0 and copied == frames
        # what the thread copied is in the database file itself: a reader that ignores the
        # WAL (immutable) sees the row
        uri = f"file:{tmp_path / 'm.db'}?immutable=1"
        with sqlite3.connect(uri, uri=True) as raw:
            total = raw.execute("SELECT SUM(length(v)) FROM t").fetchone()[0]
            assert total == ROWS * (BLOB // ROWS)
    finally:
        db.close()


def test_the_wal_starts_over_after_a_complete_checkpoint(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    wal = tmp_path / "m.db-wal"
    try:
        with db.write_tx() as conn:
            conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
        for key in range(1, 6):
            runs = db._checkpointer.runs
            _write_blob(db, key % 2)
            _wait_copied(db, runs)
        # five 4 MiB transactions, each copied before the next began: the file holds about
        # one of them (it would hold five if the log never started over)
        assert wal.stat().st_size < 2.5 * BLOB
    finally:
        db.close()


def test_close_stops_the_thread_and_removes_the_wal(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    with db.write_tx() as conn:
        conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
    _write_blob(db, 1)
    thread = db._checkpointer._thread
    assert thread is not None and thread.is_alive()
    db.close()
    assert not thread.is_alive()
    # the last connection to close checkpoints and deletes the WAL: the thread's own
    # connection was closed first
    assert not (tmp_path / "m.db-wal").exists()
    with sqlite3.connect(tmp_path / "m.db") as raw:
        assert raw.execute("SELECT COUNT(*) FROM t").fetchone()[0] == ROWS


def test_small_commits_wait_until_their_rows_add_up(tmp_path: Path) -> None:
    """A commit of a few rows (recall's access counts, a remember) is not followed by a
    checkpoint of its own: the thread runs once the commits since the last one changed ROWS."""
    db = Database(tmp_path / "m.db")
    try:
        with db.write_tx() as conn:
            conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
        for key in range(ROWS // 10 - 1):
            with db.write_tx() as conn:
                conn.executemany("INSERT INTO t (k, v) VALUES (?, ?)",
                                 [(key * 10 + i, b"x") for i in range(10)])
        time.sleep(0.5)
        assert db._checkpointer.runs == 0 and db._checkpointer._thread is None
        with db.write_tx() as conn:  # the rows that make ROWS
            conn.executemany("INSERT INTO t (k, v) VALUES (?, ?)",
                             [(-i - 1, b"x") for i in range(10)])
        deadline = time.monotonic() + 60
        while db._checkpointer.runs == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert db._checkpointer.runs == 1
    finally:
        db.close()
