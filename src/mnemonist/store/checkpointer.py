"""Background WAL checkpoints: the copy of committed pages into the database file runs on its
own connection and thread, not inside the commit that happened to cross SQLite's threshold.

SQLite checkpoints automatically on the committing connection once the WAL holds 1,000 pages,
so the writer pays for the copy: it reads every page back from the WAL, writes it into the
database file and syncs it before its caller gets control again. A remember that crosses the
threshold waits for it, and at a million memories a 1,000-memory import commit writes about
12,000 pages, every one of which the importer then copies itself.

Here the writer's own automatic checkpoint is raised to `SAFETY_PAGES` (a net for when this
thread falls behind), and this thread runs a PASSIVE checkpoint once the commits since the last
one have changed `ROWS` rows (SQLite's cadence, counted in rows: a remember changes a few dozen,
a 1,000-memory import chunk tens of thousands), at most once per `MIN_INTERVAL_S`. Small
commits, such as recall's access counts written every second, are not each followed by a
checkpoint and its fsyncs. PASSIVE never blocks the writer or a reader: it copies the frames
committed before it started and leaves the rest for the next round. SQLite's locking keeps the
two apart (one checkpoint at a time; a busy one is skipped), and durability is unchanged: a
commit is durable once its WAL frames are synced, whoever copies them later.

The WAL file starts over from its beginning at the first commit after a checkpoint has copied
everything; `journal_size_limit` then trims a file that a long import let grow.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

#: the writer's own automatic checkpoint (pages): only reached when this thread falls behind
SAFETY_PAGES = 40_000
#: a WAL file larger than this is truncated to it when the log starts over (bytes)
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
#: checkpoints follow commits at most this often (seconds)
MIN_INTERVAL_S = 0.25
#: rows changed by commits (triggers' rows included) that call for a checkpoint
ROWS = 1000


class Checkpointer:
    """A daemon thread that checkpoints when commits call for it (`committed`) or when asked
    (`nudge`), on its own connection from `connect()`."""

    def __init__(self, connect: Callable[[], sqlite3.Connection],
                 min_interval_s: float = MIN_INTERVAL_S) -> None:
        self._connect = connect
        self._min_interval_s = min_interval_s
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._rows = 0  # changed since the last nudge (the writer's lock serialises callers)
        #: checkpoints run and frames they found in the WAL / had copied (status and tests)
        self.runs = 0
        self.last: tuple[int, int, int] | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is None and not self._stop:
                self._thread = threading.Thread(target=self._run, name="mnemonist-checkpoint",
                                                daemon=True)
                self._thread.start()

    def committed(self, rows: int) -> None:
        """A commit changed `rows` rows: checkpoint soon once they add up to `ROWS`."""
        self._rows += rows
        if self._rows >= ROWS:
            self._rows = 0
            self.start()
            self.nudge()

    def nudge(self) -> None:
        """Checkpoint soon."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the checkpoint under way (if any) and end the thread."""
        with self._lock:
            self._stop = True
            thread, self._thread = self._thread, None
        self._wake.set()
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                if self._stop:
                    return
                self._wake.clear()
                started = time.monotonic()
                try:
                    if conn is None:
                        conn = self._connect()
                    row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.last = (int(row[0]), int(row[1]), int(row[2]))
                    self.runs += 1
                except sqlite3.Error as exc:  # a full disk, say: the writer reports it
                    log.warning("background checkpoint failed: %s", exc)
                rest = self._min_interval_s - (time.monotonic() - started)
                if rest > 0 and not self._stop:
                    time.sleep(rest)
        finally:
            if conn is not None:
                conn.close()
