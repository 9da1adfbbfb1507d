"""SQLite connections: one writer behind a process-wide lock, one reader per thread.

WAL mode lets readers run while the writer commits. `write_tx()` is the only way to write:
`BEGIN IMMEDIATE`, commit on success, roll back on any exception, and it marks the thread so
that providers refuse to do I/O inside it (see `guards/write_tx.py`).

A write that fails because the disk is full or the database is read-only raises `StorageFault`
(`storage_full` / `storage_read_only`) and leaves `Database.storage_fault` set until a later
write commits a change: the faces answer 507/503 and `/health` shows it.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from mnemonist.guards import write_tx as txguard
from mnemonist.guards.private_files import FOLDER_MODE, private_database
from mnemonist.store import context, entity_links
from mnemonist.store.checkpointer import JOURNAL_SIZE_LIMIT, SAFETY_PAGES, Checkpointer
from mnemonist.store.loop_health import LoopHealth

log = logging.getLogger(__name__)

STORAGE_FULL = "storage_full"
STORAGE_READ_ONLY = "storage_read_only"
#: PostgreSQL does not answer (stopped, restarting, unreachable): requests get a 503 at once
STORAGE_UNAVAILABLE = "storage_unavailable"


def storage_fault_kind(exc: BaseException) -> str | None:
    """`storage_full` / `storage_read_only` when `exc` says the disk cannot take a write."""
    if isinstance(exc, StorageFault):
        return exc.kind
    if isinstance(exc, sqlite3.Error):
        name = getattr(exc, "sqlite_errorname", "") or ""
        text = str(exc).lower()
        if name == "SQLITE_FULL" or "database or disk is full" in text:
            return STORAGE_FULL
        if name.startswith("SQLITE_READONLY") or "readonly database" in text:
            return STORAGE_READ_ONLY
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return STORAGE_FULL
        if exc.errno == errno.EROFS:
            return STORAGE_READ_ONLY
    return None


class StorageFault(sqlite3.OperationalError):
    """A write the storage refused: the disk is full or the database read-only."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class StorageUnavailable(StorageFault):
    """The database server does not answer: nothing was read or written (a 503; the daemon
    tries again on its own and recovers when the server is back)."""

    def __init__(self, detail: str) -> None:
        super().__init__(STORAGE_UNAVAILABLE, detail)


class Connection(sqlite3.Connection):
    """sqlite3's connection, able to carry a small per-connection cache as an attribute (a
    plain one has no `__dict__`): search.dampening keeps its hub threshold on the reader."""


def _connect(path: Path, durability: str) -> sqlite3.Connection:
    conn = sqlite3.connect(
        str(path), isolation_level=None, check_same_thread=False, timeout=30.0,
        factory=Connection,
    )
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
    conn.execute("PRAGMA foreign_keys=ON")
    # deleted and overwritten content is zeroed in the file, not left in free space (purge)
    conn.execute("PRAGMA secure_delete=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA cache_size=-8000")  # 8 MB per connection; one reader per thread
    return conn


class WriterHooks:
    """What both stores' databases do the same way around their one writer: callbacks after a
    commit, and the two switches the service turns at start. The class using it sets
    `_after_commit`, `_lock` and `_writer`, and provides `write_tx()`."""

    _after_commit: list[Callable[[], None]]
    _lock: threading.RLock
    _writer: Any

    def write_tx(self) -> AbstractContextManager[Any]:
        """One atomic write transaction (each store's own)."""
        raise NotImplementedError

    def on_commit(self, fn: Callable[[], None]) -> None:
        """Run `fn` right after the current write transaction commits (never on rollback).

        Used to keep in-memory structures (the vector index) in step with the database.
        """
        if not txguard.in_write_tx():
            raise RuntimeError("on_commit() outside a write transaction")
        self._after_commit.append(fn)

    def use_context_window(self, window: int) -> bool:
        """Maintain the context index with ±`window` neighbours (0: off); rebuild if changed."""
        with self.write_tx() as conn:
            return context.ensure(conn, window)

    def use_entity_linker(self, enabled: bool) -> None:
        """Link the entities a memory names inside the write transaction (see entity_links)."""
        with self._lock:
            entity_links.configure(self._writer, enabled)


class Database(WriterHooks):
    def __init__(self, path: Path, durability: str = "full") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        private_database(self.path)  # 0600 before SQLite makes its WAL and -shm beside it
        self.durability = durability
        self._lock = threading.RLock()
        self._waiting = 0  # threads waiting for `_lock` in write_tx
        self._waiting_lock = threading.Lock()
        self._writer = _connect(self.path, durability)
        # checkpoints run on their own thread after commits (store/checkpointer.py); the
        # writer's automatic one is only the net for when that thread falls behind
        self._writer.execute(f"PRAGMA wal_autocheckpoint={SAFETY_PAGES}")
        self._writer.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
        self._checkpointer = Checkpointer(lambda: _connect(self.path, durability))
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._after_commit: list[Callable[[], None]] = []
        #: `storage_full` / `storage_read_only` after a refused write, until a change commits
        self.storage_fault: str | None = None
        #: background loops retrying after a failure (`/health`)
        self.loops = LoopHealth()

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection (autocommit: each statement sees the latest commit)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise sqlite3.ProgrammingError("database is closed")
            conn = _connect(self.path, self.durability)
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def writers_waiting(self) -> int:
        """Threads waiting for the write lock now: a bulk import ends its transaction early
        for them, so that a remember sent during an import does not wait for a whole chunk."""
        return self._waiting

    @contextmanager
    def _write_turn(self) -> Iterator[None]:
        """The write lock, counted in `writers_waiting` while this thread waits for it."""
        if not self._lock.acquire(blocking=False):
            with self._waiting_lock:
                self._waiting += 1
            try:
                self._lock.acquire()
            finally:
                with self._waiting_lock:
                    self._waiting -= 1
        try:
            yield
        finally:
            self._lock.release()

    @contextmanager
    def write_tx(self) -> Iterator[sqlite3.Connection]:
        """One atomic write transaction. Nested calls join the outer transaction."""
        with self._write_turn():
            if txguard.in_write_tx():
                yield self._writer
                return
            txguard.enter()
            self._after_commit = []
            try:
                changes = self._writer.total_changes
                try:
                    self._writer.execute("BEGIN IMMEDIATE")
                    try:
                        yield self._writer
                        self._writer.execute("COMMIT")
                        self._checkpointer.committed(self._writer.total_changes - changes)
                    except BaseException:
                        self._rollback()
                        raise
                except Exception as exc:
                    kind = storage_fault_kind(exc)
                    if kind is None:
                        raise
                    if self.storage_fault != kind:
                        log.error("write refused by the storage (%s): %s", kind, exc)
                    self.storage_fault = kind
                    raise StorageFault(kind, str(exc)) from exc
                if self._writer.total_changes != changes:
                    self.storage_fault = None  # a change was committed: the storage is back
                callbacks, self._after_commit = self._after_commit, []
                for fn in callbacks:  # still under the lock: in-memory indexes stay in order
                    try:
                        fn()
                    except Exception:
                        log.exception("after-commit callback failed")
            finally:
                self._after_commit = []
                txguard.leave()

    def watch_context(self, fn: Callable[[list[int]], None]) -> None:
        """Call `fn` after each commit with the seqs of the `memory_context` rows it inserted,
        changed or deleted (the keyword mirror follows the context index this way). A
        temporary trigger on the writer connection reports each row to Python during the
        transaction; the seqs are handed on after the commit and dropped on a rollback."""
        pending: list[int] = []
        # the transaction's callback list, by identity
        current: list[list[Callable[[], None]]] = [[]]

        def flush() -> None:
            seqs = pending[:]
            pending.clear()
            fn(seqs)

        def changed(seq: int) -> None:
            if current[0] is not self._after_commit:  # the first row of this transaction
                pending.clear()
                current[0] = self._after_commit
                self._after_commit.append(flush)
            pending.append(seq)

        with self._lock:
            self._writer.create_function("mnemonist_context_changed", 1, changed)
            for name, event, row in (("ai", "INSERT", "new"), ("au", "UPDATE OF text", "new"),
                                     ("ad", "DELETE", "old")):
                self._writer.execute(
                    f"CREATE TEMP TRIGGER IF NOT EXISTS mnemonist_context_watch_{name}"
                    f" AFTER {event} ON main.memory_context"
                    f" BEGIN SELECT mnemonist_context_changed({row}.seq); END")

    def _rollback(self) -> None:
        if not self._writer.in_transaction:
            return  # SQLite already rolled back (a full disk does that)
        try:
            self._writer.execute("ROLLBACK")
        except sqlite3.Error:
            log.exception("rollback failed")

    def checkpoint(self, wait_ms: int = 30000) -> bool:
        """Copy the WAL into the database file and empty it; True when it completed. A reader
        in the middle of a statement holds it back: wait at most `wait_ms` for readers."""
        with self._lock:
            if wait_ms != 30000:
                self._writer.execute(f"PRAGMA busy_timeout={int(wait_ms)}")
            try:
                busy, _log, _done = self._writer.execute(
                    "PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                if wait_ms != 30000:
                    self._writer.execute("PRAGMA busy_timeout=30000")
            return busy == 0

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._checkpointer.stop()
            with self._readers_lock:
                for conn in self._readers:
                    conn.close()
                self._readers.clear()
            self._writer.execute("PRAGMA optimize")
            self._writer.close()
