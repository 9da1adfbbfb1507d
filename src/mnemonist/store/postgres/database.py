"""The PostgreSQL store: the surface of `store.db.Database` over a psycopg 3 connection pool.

- `write_tx()`: one transaction on this daemon's writer connection, behind a process-wide lock
  (as on SQLite: after-commit callbacks run in commit order, in-memory indexes stay in step);
  several daemons write at once, PostgreSQL orders them (READ COMMITTED, unique constraints).
- `reader()`: a stand-in whose every statement borrows a pooled connection in autocommit and
  returns it with the rows already fetched, so no thread holds a connection between
  statements. A `BEGIN` on it pins one connection to the thread until `COMMIT`/`ROLLBACK`.
- `snapshot()`: a connection of its own in one read-only REPEATABLE READ transaction (the
  export: one consistent state however long it streams).
- LISTEN/NOTIFY (notify.py): what other daemons change that this one keeps in memory.
- storage faults: PostgreSQL's disk-full and read-only errors set `storage_fault` like SQLite's.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from mnemonist.store import context, entity_links, txguard
from mnemonist.store.db import (
    STORAGE_FULL,
    STORAGE_READ_ONLY,
    StorageFault,
    StorageUnavailable,
    WriterHooks,
)
from mnemonist.store.loop_health import LoopHealth
from mnemonist.store.postgres import notify, preflight
from mnemonist.store.postgres.availability import (
    CONNECT_TIMEOUT_S,
    POOL_WAIT_S,
    Availability,
    connection_lost,
)
from mnemonist.store.postgres.connection import DIALECT, Cursor, PgConnection, prepare

log = logging.getLogger(__name__)

POOL_MAX = 16


def pg_fault_kind(exc: BaseException) -> str | None:
    cause = exc.__cause__ if isinstance(exc, sqlite3.Error) else exc
    if isinstance(cause, pg_errors.DiskFull):
        return STORAGE_FULL
    if isinstance(cause, pg_errors.ReadOnlySqlTransaction):
        return STORAGE_READ_ONLY
    return None


def _keys_of(conn: psycopg.Connection) -> tuple[Any, ...]:
    """Primary keys and identity columns of the schema's tables (the dialect needs them)."""
    keys: dict[str, list[str]] = {}
    for table, column in conn.execute(
        "SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc"
        " JOIN information_schema.key_column_usage kcu"
        "   ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema"
        " WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = current_schema()"
        " ORDER BY tc.table_name, kcu.ordinal_position"
    ).fetchall():
        keys.setdefault(table, []).append(column)
    for table, column in conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND is_identity = 'YES'"
        " AND column_name <> 'rowid'"
    ).fetchall():
        keys["#identity:" + table] = [column]
    return tuple(sorted((k, tuple(v)) for k, v in keys.items()))


def _types_of(conn: psycopg.Connection) -> dict[str, dict[str, str]]:
    """table -> column -> SQL type, of the schema's tables (what executemany's arrays are)."""
    out: dict[str, dict[str, str]] = {}
    for table, column, kind in conn.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = current_schema()"
    ).fetchall():
        out.setdefault(table.lower(), {})[column.lower()] = kind
    return out


class _Reader:
    """`Database.reader()` on PostgreSQL (see the module docstring)."""

    dialect = DIALECT

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db
        self._local = threading.local()
        self.store_key = db.url

    def execute(self, sql: str, params: Any = None) -> Cursor:
        word = sql.strip().split(None, 1)[0].upper() if sql.strip() else ""
        pinned: tuple[Any, PgConnection] | None = getattr(self._local, "pinned", None)
        if pinned is None and word in ("COMMIT", "ROLLBACK", "END"):
            return Cursor(None, -1, None)  # its BEGIN's connection was lost (an outage)
        try:
            return self._execute(word, pinned, sql, params)
        except (sqlite3.Error, psycopg.Error) as exc:
            if not connection_lost(exc):
                raise
            self._forget_pinned()
            lost = self._db.available.lost(exc)
            if pinned is not None or isinstance(exc, StorageUnavailable):
                raise lost from None
        # the connection died under a read (a restart, a dropped link): if the server
        # answers again, once more on a fresh pool (a read is safe to repeat)
        self._db.available.check()
        try:
            return self._execute(word, None, sql, params)
        except (sqlite3.Error, psycopg.Error) as exc:
            if not connection_lost(exc):
                raise
            raise self._db.available.lost(exc) from None

    def _execute(self, word: str, pinned: tuple[Any, PgConnection] | None, sql: str,
                 params: Any) -> Cursor:
        if pinned is None:
            self._db.available.check()
        if word == "BEGIN":
            if pinned is None:
                raw = self._db.getconn()
                raw.autocommit = False
                conn = PgConnection(raw, self._db.keys, savepoints=False)
                conn.set_deadline(getattr(self._local, "deadline", None))
                self._local.pinned = (raw, conn)
            return Cursor(None, -1, None)
        if pinned is not None:
            raw, conn = pinned
            if word in ("COMMIT", "ROLLBACK", "END"):
                self._local.pinned = None
                try:
                    raw.rollback()
                finally:
                    raw.autocommit = True
                    self._db.putconn(raw)
                return Cursor(None, -1, None)
            return conn.execute(sql, params)
        raw = self._db.getconn()
        try:
            conn = PgConnection(raw, self._db.keys, savepoints=False)
            conn.set_deadline(getattr(self._local, "deadline", None))
            return conn.execute(sql, params)
        finally:
            self._db.putconn(raw)

    def _forget_pinned(self) -> None:
        pinned = getattr(self._local, "pinned", None)
        if pinned is None:
            return
        self._local.pinned = None
        with contextlib.suppress(Exception):  # a dead connection: the pool discards it
            self._db.putconn(pinned[0])

    def executemany(self, sql: str, seq: Any) -> Cursor:
        total = 0
        for params in seq:
            total += max(self.execute(sql, params).rowcount, 0)
        return Cursor(None, total, None)

    @property
    def in_transaction(self) -> bool:
        return getattr(self._local, "pinned", None) is not None

    def set_deadline(self, deadline: float | None) -> None:
        """This thread's statements stop at `deadline` (store.deadline); None: no limit."""
        self._local.deadline = deadline
        pinned = getattr(self._local, "pinned", None)
        if pinned is not None:
            pinned[1].set_deadline(deadline)

    def close(self) -> None:
        pass


class PostgresDatabase(WriterHooks):
    """`Database` for `storage.url: postgresql://…` (same methods, same semantics)."""

    dialect = DIALECT

    def __init__(self, url: str, *, pool_max: int = POOL_MAX) -> None:
        # what the server, the extension and the role must offer, before the pool opens:
        # StorageNotReady, one line, rather than a failing statement's traceback
        preflight.check(url)
        self.url = url
        self.path = None
        self.durability = "full"
        self._pool_max = pool_max
        self._connect_args: dict[str, Any] = ({} if "connect_timeout" in url
                              else {"connect_timeout": CONNECT_TIMEOUT_S})
        self.pool = self._open_pool()
        self.pool.wait(timeout=30)
        #: up or down; a dead server answers 503 at once and the way back needs no restart
        self.available = Availability(self._probe, self._reopen_pool)
        #: background loops retrying after a failure (`/health`)
        self.loops = LoopHealth()
        self._lock = threading.RLock()
        self._writer_raw = psycopg.connect(url, autocommit=False, **self._connect_args)
        prepare(self._writer_raw)
        self.keys: tuple[Any, ...] = ()
        self.column_types: dict[str, dict[str, str]] = {}
        self.refresh_keys()
        self._writer = PgConnection(self._writer_raw, self.keys, savepoints=True,
                                    column_types=self.column_types)
        self._reader = _Reader(self)
        self._closed = False
        self._after_commit: list[Callable[[], None]] = []
        self.storage_fault: str | None = None
        self._context_watch: Callable[[list[int]], None] | None = None

    @property
    def location(self) -> str:
        """The database's URL without its password (status, the start line)."""
        return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", self.url)

    def _open_pool(self) -> ConnectionPool:
        return ConnectionPool(
            self.url, min_size=1, max_size=self._pool_max, open=True,
            configure=self._configure, kwargs={"autocommit": True, **self._connect_args},
            name="mnemonist",
        )

    def _probe(self) -> None:
        psycopg.connect(self.url, autocommit=True, **self._connect_args).close()

    def _reopen_pool(self) -> None:
        """After an outage: a fresh pool (the old one holds dead connections and may wait
        out its reconnection backoff); the old one closes in the background."""
        old, self.pool = self.pool, self._open_pool()
        threading.Thread(target=old.close, kwargs={"timeout": 5.0}, name="pg-pool-close",
                         daemon=True).start()

    def getconn(self) -> psycopg.Connection:
        """A pooled connection: waits at most POOL_WAIT_S, then longer only if the server
        answers (the pool is busy, not the server gone)."""
        pool = self.pool
        try:
            return pool.getconn(timeout=POOL_WAIT_S)
        except PoolClosed:
            if pool is self.pool:
                raise
            return self.getconn()  # replaced meanwhile (the server came back): the new one
        except PoolTimeout as exc:
            if not self.available.reachable():
                raise self.available.lost(exc) from None
        return pool.getconn()

    def putconn(self, raw: psycopg.Connection) -> None:
        """Give `raw` back to the pool it came from (after a reopen: the old one)."""
        (getattr(raw, "_pool", None) or self.pool).putconn(raw)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection for raw psycopg work (the vector queries): a lost server is
        `StorageUnavailable`, at once while it stays away."""
        self.available.check()
        raw = self.getconn()
        try:
            yield raw
        except psycopg.Error as exc:
            if connection_lost(exc):
                raise self.available.lost(exc) from None
            raise
        finally:
            self.putconn(raw)

    @staticmethod
    def _configure(conn: psycopg.Connection) -> None:
        prepare(conn)
        # readers only read, as SQLite's reader connections are query_only
        conn.execute("SET default_transaction_read_only = on")

    def refresh_keys(self) -> None:
        """Re-read the schema's keys (after migrations changed it)."""
        with self.connection() as raw:
            self.keys = _keys_of(raw)
            self.column_types = _types_of(raw)
        if hasattr(self, "_writer"):
            self._writer._keys = self.keys
            self._writer.column_types = self.column_types

    def reader(self) -> _Reader:
        if self._closed:
            raise sqlite3.ProgrammingError("database is closed")
        return self._reader

    @contextmanager
    def write_tx(self) -> Iterator[PgConnection]:
        """One atomic write transaction. Nested calls join the outer transaction."""
        with self._lock:
            if txguard.in_write_tx():
                yield self._writer
                return
            if self._closed:
                raise sqlite3.ProgrammingError("database is closed")
            self.available.check()
            if self._writer_raw.closed or self._writer_raw.broken:
                try:
                    self._reconnect_writer()  # the server restarted, or the network dropped
                except psycopg.Error as exc:
                    raise self.available.lost(exc) from None
            txguard.enter()
            self._after_commit = []
            try:
                changes = self._writer.total_changes
                try:
                    try:
                        yield self._writer
                        self._writer_raw.commit()
                    except BaseException:
                        self._rollback()
                        raise
                except psycopg.Error as exc:
                    raise self._fault(exc) from exc
                except sqlite3.Error as exc:
                    if isinstance(exc, StorageUnavailable):
                        raise
                    if pg_fault_kind(exc) is None and not connection_lost(exc):
                        raise
                    raise self._fault(exc) from exc
                if self._writer.total_changes != changes:
                    self.storage_fault = None
                callbacks, self._after_commit = self._after_commit, []
                for fn in callbacks:
                    try:
                        fn()
                    except Exception:
                        log.exception("after-commit callback failed")
            finally:
                self._after_commit = []
                txguard.leave()

    def watch_context(self, fn: Callable[[list[int]], None]) -> None:
        """Call `fn` after each commit of this daemon with the seqs of the `memory_context`
        rows it inserted, changed or deleted (the keyword mirror follows the context index
        this way). The writer connection listens to the context trigger's channel
        (store/postgres/notify.py): PostgreSQL hands a session its own notifications with
        its commit, so `fn` runs inside `commit()`, before the write's answer; nothing for a
        rolled-back transaction. Other daemons' changes come through the change listener."""
        with self._lock:
            self._context_watch = fn
            self._listen_context(self._writer_raw)

    def _listen_context(self, raw: psycopg.Connection) -> None:
        fn = self._context_watch
        if fn is None:
            return
        raw.execute(f"LISTEN {notify.CONTEXT_CHANNEL}")
        raw.commit()
        pid = raw.info.backend_pid

        def own(note: psycopg.Notify) -> None:
            if note.channel == notify.CONTEXT_CHANNEL and note.pid == pid:
                fn(notify.context_seqs(note.payload))

        raw.add_notify_handler(own)

    @property
    def writer_pid(self) -> int | None:
        """The writer session's backend pid (the change listener skips its notifications)."""
        raw = self._writer_raw
        return None if raw.closed else raw.info.backend_pid

    def _reconnect_writer(self) -> None:
        log.warning("the PostgreSQL writer connection was lost: reconnecting")
        windows = context.window_of(self._writer)
        linker = entity_links.enabled(self._writer)
        raw = psycopg.connect(self.url, autocommit=False, **self._connect_args)
        prepare(raw)
        self._writer_raw = raw
        self._writer = PgConnection(raw, self.keys, savepoints=True,
                                    column_types=self.column_types)
        context.configure(self._writer, windows)
        entity_links.configure(self._writer, linker)
        self._listen_context(raw)

    def _fault(self, exc: BaseException) -> BaseException:
        if connection_lost(exc):
            return self.available.lost(exc)
        kind = pg_fault_kind(exc)
        if kind is None:
            return exc if isinstance(exc, sqlite3.Error) else sqlite3.OperationalError(str(exc))
        if self.storage_fault != kind:
            log.error("write refused by the storage (%s): %s", kind, exc)
        self.storage_fault = kind
        return StorageFault(kind, str(exc))

    def _rollback(self) -> None:
        try:
            self._writer_raw.rollback()
        except psycopg.Error:
            if not self._writer_raw.broken:  # a lost connection rolled back on its own
                log.exception("rollback failed")

    @contextmanager
    def snapshot(self) -> Iterator[PgConnection]:
        """A consistent read of many statements on a connection of its own: one read-only
        REPEATABLE READ transaction, its snapshot taken by a first read before this yields
        (the export: the state at its start however long the stream takes; pooled
        connections stay free for the requests meanwhile)."""
        self.available.check()
        try:
            raw = psycopg.connect(self.url, autocommit=False, **self._connect_args)
        except psycopg.Error as exc:
            raise self.available.lost(exc) from None
        try:
            prepare(raw)
            raw.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            raw.read_only = True
            conn = PgConnection(raw, self.keys, savepoints=False)
            conn.execute("SELECT 1 FROM memories LIMIT 1")  # the snapshot starts here
            yield conn
        finally:
            with contextlib.suppress(psycopg.Error):
                raw.rollback()
            raw.close()

    def checkpoint(self, wait_ms: int = 30000) -> bool:
        """PostgreSQL checkpoints on its own (and CHECKPOINT needs superuser): a no-op."""
        return True

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._writer_raw.close()
            finally:
                self.pool.close()
