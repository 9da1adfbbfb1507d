"""Builds the keyword mirror (search/keyword_mirror.py) in the background and keeps it in
step with every commit, so that the keyword leg may rank with it instead of FTS5.

How it stays exact: before it reads anything, the keeper asks the database to report every
row of `memory_context` that a commit inserts, changes or deletes (`Database.watch_context`:
a temporary trigger on the daemon's one writer connection, reported after the commit, never
for a rolled-back transaction). Those seqs collect in a dirty set. The mirror is built from
one read of the whole table; the rows changed meanwhile are in the dirty set and are read
again, so nothing falls between the two. Before a recall uses the mirror, the dirty rows
are read (from the recall's own connection) and applied, up to `INLINE` of them — the few
rows a remember or a small import changes. Past that, the mirror is behind: the recall
ranks with FTS5, as it always could, and the keeper's thread catches up once writes pause.

When: `search.keyword_mirror` "on" always; "auto" once the context index holds
`AUTO_FROM` rows (below that FTS5 answers within recall's budget and the mirror would only
cost memory); "off" never. Only a started service keeps a mirror (a daemon, a bench run):
a one-shot CLI command ranks with FTS5.

On PostgreSQL the same mirror replaces the tsvector keyword leg (which scores every row
holding any query word, a network round trip away) from `AUTO_FROM_POSTGRES` rows. The
changes come from triggers (store/postgres/notify.py): this daemon's own with its commit
(`watch_context`), other daemons' through the change listener (`changed_elsewhere`), a few
milliseconds after they commit; a listener that lost its connection may have missed some,
so the mirror is built again (`gap`). The mirror ranks with FTS5's tokens and BM25 as on
SQLite, so a large team store ranks its keyword leg as a single user's does.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from mnemonist.search.keyword_mirror import KeywordMirror
from mnemonist.store import context
from mnemonist.store.backend import is_postgres
from mnemonist.store.db import Database

log = logging.getLogger(__name__)

#: context rows from which "auto" builds the mirror. At 100,000 FTS5 still meets recall's
#: 60 ms p95 and the mirror (with the words it learns) would take the process past 400 MB
AUTO_FROM = 150_000
#: on PostgreSQL the SQL keyword leg costs a round trip and scores every matching row: at
#: 10,000 memories recall took 6× SQLite's; the mirror (about 1 KiB a row) answers instead
AUTO_FROM_POSTGRES = 5_000
INLINE = 2_000  # changed rows a recall applies itself before using the mirror
#: writes are pausing when the dirty set grew by no more than this in `QUIET_S`
QUIET_S = 0.5
#: a build waits for writes to stop this long: an import's requests come with gaps between
#: them (the client preparing the next), too short for a step of the build to fit in
BUILD_QUIET_S = 2.0
CHUNK = 20_000  # rows read and applied at a time when catching up in the background
RECOUNT_EVERY = 5_000  # changes between two counts of the context rows (mode "auto")


class KeywordMirrorKeeper:
    def __init__(self, db: Database, mode: str = "auto") -> None:
        self._db = db
        self._mode = mode
        self._auto_from = AUTO_FROM_POSTGRES if is_postgres(db) else AUTO_FROM
        self.mirror: KeywordMirror | None = None
        self.state = "waiting"  # waiting (for enough rows) | building | ready | failed
        self.built_in_s: float | None = None
        self.builds = 0
        self._dirty: set[int] = set()
        self._dirty_lock = threading.Lock()
        self._apply_lock = threading.Lock()  # one catch-up at a time
        self._since_count = 0
        self._seen = 0  # rows reported changed, ever
        self._seen_at_step = 0  # `_seen` at the build's last chunk
        self.paused = 0  # times a build stepped aside for writes
        self._build_waited = 0.0  # seconds the current build has stood aside
        self.build_waited_s: float | None = None
        self._gaps = 0  # times changes may have been missed (`gap`)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._thread: threading.Thread | None = None

    # -- life -------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._db.watch_context(self._changed)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="keyword-mirror", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the mirror is caught up, or until the keeper has decided not to build
        one for now (too few rows); False on timeout."""
        deadline = time.monotonic() + timeout
        if self._dirty or (self.state == "waiting" and self._since_count):
            self._wake.set()  # rows to apply, or to count again
        while time.monotonic() < deadline:
            if self.state == "failed":
                return True
            settled = self._idle.is_set() and not self._wake.is_set() \
                and not self._apply_lock.locked()
            if settled:
                if self.state == "waiting" or (self.state == "ready" and not self._dirty):
                    return True
                self._wake.set()  # rows changed while it waited: apply them
            time.sleep(0.05)
        return False

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self._mode, "state": self.state, "behind": len(self._dirty),
                     "builds": self.builds, "build_pauses": self.paused}
        if self.built_in_s is not None:
            out["built_in_s"] = round(self.built_in_s, 1)
            out["build_waited_s"] = round(self.build_waited_s or 0.0, 1)
        if self.mirror is not None:
            out.update(self.mirror.stats())
        return out

    # -- the recall side ----------------------------------------------------------------------
    def usable(self) -> KeywordMirror | None:
        """The mirror with every commit so far applied, or None: not built (yet), or too
        far behind to catch up inside a recall (the caller ranks with FTS5)."""
        mirror = self.mirror
        if mirror is None or self.state != "ready":
            return None
        if not self._dirty:
            return mirror
        if len(self._dirty) > INLINE or not self._apply_lock.acquire(blocking=False):
            self._wake.set()
            return None
        try:
            self._catch_up(mirror, INLINE)
            return None if self._dirty else mirror
        finally:
            self._apply_lock.release()

    # -- changes --------------------------------------------------------------------------------
    def _changed(self, seqs: list[int]) -> None:
        """After a commit (under the writer's lock: only set operations here). Without a
        mirror being built or kept, there is nothing to follow: only the count grows."""
        with self._dirty_lock:
            self._seen += len(seqs)
            if self.mirror is not None or self.state == "building":
                self._dirty.update(seqs)
            self._since_count += len(seqs)
            many = len(self._dirty) > INLINE or (
                self.mirror is None and self._since_count >= RECOUNT_EVERY)
        if many:
            self._wake.set()

    def changed_elsewhere(self, seqs: list[int]) -> None:
        """Rows another daemon changed (PostgreSQL's change listener, after its commit)."""
        self._changed(seqs)

    def gap(self) -> None:
        """Changes may have been missed (the change listener reconnected): a kept mirror is
        let go and built again from the table."""
        with self._dirty_lock:
            self._gaps += 1  # a build under way when it happened is thrown away (`_build`)
            if self.mirror is None:
                return
            self.mirror, self.state = None, "waiting"
            self._dirty.clear()
        self._wake.set()

    def _take(self, limit: int) -> list[int]:
        with self._dirty_lock:
            if len(self._dirty) <= limit:
                taken, self._dirty = list(self._dirty), set()
            else:
                taken = [self._dirty.pop() for _ in range(limit)]
        return taken

    def _catch_up(self, mirror: KeywordMirror, limit: int) -> None:
        """Read and apply up to `limit` dirty rows (the caller holds `_apply_lock`)."""
        seqs = self._take(limit)
        if not seqs:
            return
        try:
            texts = _texts(self._db, seqs)
            mirror.apply([(seq, texts.get(seq)) for seq in seqs])
        except BaseException:
            with self._dirty_lock:  # read again next time
                self._dirty.update(seqs)
            raise

    # -- the keeper's thread ------------------------------------------------------------------
    def _run(self) -> None:
        """The keeper's loop; when a step raises (the database away, say) the mirror is let
        go (changes may have been missed meanwhile), and it is built again after a backoff:
        the keyword leg ranks with the index meanwhile."""
        while not self._stop.is_set():
            try:
                self._keep()
            except Exception as exc:
                with self._dirty_lock:
                    self.mirror, self.state = None, "waiting"
                    self._dirty.clear()
                self._idle.set()
                self._stop.wait(self._db.loops.failed("keyword mirror", exc))
            else:
                return

    def _keep(self) -> None:
        """Build the mirror when wanted, then keep it in step, until stopped."""
        while not self._stop.is_set():
            if self.mirror is None:
                if self._wanted():
                    self._quiet()
                    self._build()
                    continue
            elif len(self._dirty) > max(len(self.mirror), INLINE):
                # most of it changed (a bulk import): let it go now (its memory too),
                # and build it again once the writes pause
                with self._dirty_lock:
                    self.mirror, self.state = None, "waiting"
                    self._dirty.clear()
                continue
            else:
                self._quiet()
                with self._apply_lock:
                    while self._dirty and not self._stop.is_set():
                        self._catch_up(self.mirror, CHUNK)
            self._db.loops.succeeded("keyword mirror")
            self._idle.set()
            self._wake.wait()
            self._idle.clear()
            self._wake.clear()

    def _wanted(self) -> bool:
        if self._mode == "on":
            return True
        if self._mode != "auto":
            return False
        with self._dirty_lock:
            self._since_count = 0
        rows = context.row_count(self._db.reader())
        return rows >= self._auto_from

    def _quiet(self, quiet_s: float | None = None, allowed: int | None = None) -> None:
        """Wait while writes go on (an import has the machine): until no more than `allowed`
        (INLINE / 4) rows change in `quiet_s` (QUIET_S), or a kept mirror falls behind by
        more than it holds."""
        quiet_s = QUIET_S if quiet_s is None else quiet_s
        allowed = INLINE // 4 if allowed is None else allowed
        while not self._stop.is_set():
            before = self._seen
            time.sleep(quiet_s)
            if self._seen - before <= allowed:
                return
            if self.mirror is not None and len(self._dirty) > len(self.mirror):
                return

    def _step_aside(self, read_to: int) -> None:
        """Between two chunks of a build: if writes began meanwhile (an import), wait until
        they pause. The build shares the interpreter with the writer, and tokenizing a million
        rows beside an import halved the import's rate. Rows past `read_to` are still to be
        read, after every commit reported so far, so their dirty marks can go."""
        with self._dirty_lock:
            grew = self._seen - self._seen_at_step
        if grew <= INLINE // 4:
            return
        self.paused += 1
        waited = time.monotonic()
        self._quiet(BUILD_QUIET_S, 0)
        self._build_waited += time.monotonic() - waited
        if self._stop.is_set():
            raise _Stopped
        with self._dirty_lock:
            self._seen_at_step = self._seen
            self._dirty = {seq for seq in self._dirty if seq <= read_to}

    def _build(self) -> None:
        self.state = "building"
        started = time.monotonic()
        gaps = self._gaps
        mirror = KeywordMirror()
        with self._dirty_lock:  # rows changed from here on are read again after the build
            self._dirty.clear()
            self._seen_at_step = self._seen
        self._build_waited = 0.0
        try:
            mirror.load(_all_rows(self._db, self._step_aside))
        except _Stopped:
            return
        with self._apply_lock:
            while self._dirty and not self._stop.is_set():
                self._catch_up(mirror, CHUNK)
            if self._gaps != gaps:  # changes may have been missed while it was read
                self.state = "waiting"
                return
            self.mirror = mirror
        # the work, not the time it stood aside for writes (reported apart)
        self.build_waited_s = self._build_waited
        self.built_in_s = time.monotonic() - started - self._build_waited
        _release_freed_memory()
        self.builds += 1
        self.state = "ready"
        log.info("keyword mirror built: %s in %.1f s", mirror.stats(), self.built_in_s)


def _release_freed_memory() -> None:
    """Hand the build's freed transient memory back to the system (glibc keeps freed heap
    memory for reuse: measured at 100,000 rows, 80 MiB stayed resident after a build)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)


class _Stopped(Exception):
    """The service stops while a build waits."""


def _all_rows(db: Database, between: Callable[[int], None] | None = None
              ) -> Iterator[tuple[int, str]]:
    """Every context row in seq order, read `CHUNK` at a time (each read its own short
    transaction, so that the build never holds the WAL back for long; what changes between
    two reads is in the dirty set). `between(last seq read)` runs before each read after the
    first."""
    conn, last = db.reader(), -1
    while True:
        if between is not None and last >= 0:
            between(last)
        rows = context.texts_after(conn, last, CHUNK)
        if not rows:
            return
        yield from rows
        last = rows[-1][0]


def _texts(db: Database, seqs: list[int]) -> dict[int, str]:
    """The context texts of those rows that still exist (this thread's reader)."""
    conn = db.reader()
    out: dict[int, str] = {}
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        out.update(context.texts_of(conn, chunk))
    return out

