"""A psycopg connection that behaves like the `sqlite3.Connection` the store code was written
for: `.execute(sql, params)` takes SQLite-dialect SQL (translated by `dialect`), rows answer
both `row["col"]` and `row[0]`, `cursor.lastrowid` / `rowcount` / `total_changes` work, and
driver errors arrive as the `sqlite3` exceptions the callers already handle."""

from __future__ import annotations

import contextlib
import functools
import math
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.adapt import Dumper
from psycopg.pq import Format

from mnemonist.store.postgres.dialect import translate

DIALECT = "postgresql"


class Row(tuple):
    """A result row: a tuple that also answers by column name, like `sqlite3.Row`."""

    __slots__ = ()
    _names: dict[str, int]

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


@functools.lru_cache(maxsize=1024)
def _row_class(columns: tuple[str, ...]) -> type[Row]:
    """One Row class per column list (making a class per statement cost an import a tenth
    of its time)."""
    names: dict[str, int] = {}
    for i, name in enumerate(columns):  # in column order (keys()); a repeated name: its first
        names.setdefault(name, i)
    return type("Row", (Row,), {"__slots__": (), "_names": names})


def _row_factory(cursor: psycopg.Cursor) -> Any:
    pgresult = cursor.pgresult
    if pgresult is None or not pgresult.nfields:
        return tuple
    columns = tuple((pgresult.fname(i) or b"").decode() for i in range(pgresult.nfields))
    return _row_class(columns)


class _BoolAsInt(Dumper):
    """SQLite has no booleans: the store code passes True/False for 0/1 columns."""

    oid = psycopg.adapters.types["int8"].oid
    format = Format.TEXT

    def dump(self, obj: bool) -> bytes:
        return b"1" if obj else b"0"


def prepare(conn: psycopg.Connection) -> None:
    """Adapters every connection of the store needs (the pool's `configure`)."""
    conn.adapters.register_dumper(bool, _BoolAsInt)
    conn.row_factory = _row_factory


def to_sqlite_error(exc: psycopg.Error, sql: str) -> sqlite3.Error:
    """The sqlite3 exception the callers handle for this PostgreSQL error."""
    text = f"{exc} (postgresql; {sql.strip()[:200]})"
    if isinstance(exc, pg_errors.UniqueViolation):
        return sqlite3.IntegrityError(f"UNIQUE constraint failed: {text}")
    if isinstance(exc, psycopg.IntegrityError):
        return sqlite3.IntegrityError(text)
    if isinstance(exc, psycopg.InterfaceError):
        return sqlite3.InterfaceError(text)
    if isinstance(exc, psycopg.DataError):
        return sqlite3.InterfaceError(text)
    if isinstance(exc, psycopg.OperationalError | pg_errors.QueryCanceled):
        return sqlite3.OperationalError(text)
    return sqlite3.OperationalError(text)


class Cursor:
    """The answer of one statement, already fetched (a client-side cursor)."""

    def __init__(self, rows: list[Row] | None, rowcount: int, lastrowid: int | None) -> None:
        self._rows = rows or []
        self._pos = 0
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    def fetchone(self) -> Row | None:
        if self._pos >= len(self._rows):
            return None
        self._pos += 1
        return self._rows[self._pos - 1]

    def fetchall(self) -> list[Row]:
        rest = self._rows[self._pos:]
        self._pos = len(self._rows)
        return rest

    def fetchmany(self, size: int = 1) -> list[Row]:
        page = self._rows[self._pos : self._pos + size]
        self._pos += len(page)
        return page

    def __iter__(self) -> Iterator[Row]:
        while (row := self.fetchone()) is not None:
            yield row

    def close(self) -> None:
        self._rows = []


_WRITES = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.I)
#: the statements that get a savepoint: the callers that go on after a failed statement catch
#: the unique-index IntegrityError of an INSERT (two round trips more each, so only those)
_GUARDED = re.compile(r"\s*(INSERT|REPLACE)\b", re.I)


class PgConnection:
    """One psycopg connection with the sqlite3 surface the store code uses."""

    dialect = DIALECT

    def __init__(self, raw: psycopg.Connection, keys: tuple, *, savepoints: bool) -> None:
        self.raw = raw
        self._keys = keys
        #: inside a write transaction a failed statement would abort the whole transaction;
        #: SQLite's callers catch IntegrityError and go on, so each INSERT gets a savepoint
        self._savepoints = savepoints
        self.total_changes = 0
        #: time.monotonic() at which statements stop (store.deadline); None: no limit
        self.deadline: float | None = None

    @property
    def store_key(self) -> str:
        """Which database (caches of statistics are kept per store)."""
        return self.raw.info.dsn

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def _bind(self, sql: str, params: Any) -> tuple[str, Any, str | None]:
        t = translate(sql, self._keys)
        if params is None:
            params = ()
        if t.numbered and not isinstance(params, dict):
            params = {f"p{i + 1}": v for i, v in enumerate(params)}
        return t.sql, params, t.returning

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> Cursor:
        if self.deadline is None:
            return self._execute(sql, params)
        left = self.deadline - time.monotonic()
        if left < 0:
            raise sqlite3.OperationalError("interrupted: the statement's deadline has passed")
        # rounded up, at least 1 ms (0 would mean no limit): the callers (search.traversal,
        # graph_boost) take an interruption for the deadline only once it has passed
        left_ms = max(1, math.ceil(left * 1000))
        # the server cancels the statement when the time left is up (SQLite's progress
        # handler); set for this statement only, then back to what it was
        before = self.raw.execute(
            "SELECT current_setting('statement_timeout'),"
            " set_config('statement_timeout', %s, false)", [str(left_ms)]).fetchone()[0]
        try:
            return self._execute(sql, params)
        except sqlite3.OperationalError as exc:
            early = self.deadline - time.monotonic()
            if "statement timeout" in str(exc) and early >= 0:
                time.sleep(early + 0.001)  # the server's clock ran a hair ahead of ours
            raise
        finally:
            self._reset_timeout(before)

    def _reset_timeout(self, before: str) -> None:
        """Put `statement_timeout` back. The reset itself runs under the timeout it undoes
        (1 ms when the deadline is close): on a loaded machine it can be cancelled too, and a
        pooled connection would then keep the tiny timeout and cancel the next borrower's
        statements (seen as the embedder's sweep cancelled in `bench scale`). Outside a
        transaction such a connection is closed, so that the pool replaces it; inside one,
        its rollback restores the setting."""
        try:
            self.raw.execute("SELECT set_config('statement_timeout', %s, false)", [before])
        except psycopg.Error:
            if not self.in_transaction:
                self.raw.close()

    def set_deadline(self, deadline: float | None) -> None:
        """Statements from now on stop at `deadline` (time.monotonic()); None: no limit."""
        self.deadline = deadline

    def _execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None) -> Cursor:
        text, args, returning = self._bind(sql, params)
        guarded = self._savepoints and bool(_GUARDED.match(sql))
        try:
            if guarded:
                self.raw.execute("SAVEPOINT mnemonist_stmt")
            cur = self.raw.execute(text, args, prepare=False)  # never None: %% is read
            rows = cur.fetchall() if cur.description is not None else None
            if guarded:
                self.raw.execute("RELEASE SAVEPOINT mnemonist_stmt")
        except psycopg.Error as exc:
            if guarded and self.in_transaction:
                with contextlib.suppress(psycopg.Error):
                    self.raw.execute("ROLLBACK TO SAVEPOINT mnemonist_stmt")
            raise to_sqlite_error(exc, text) from exc
        count = cur.rowcount if cur.rowcount is not None else -1
        if count > 0 and _WRITES.match(sql):
            self.total_changes += count
        lastrowid = None
        if returning is not None:  # RETURNING was added for lastrowid: no rows for the caller
            lastrowid = rows[0][0] if rows else None
            rows = None
        return Cursor(rows, count, lastrowid)

    def executemany(self, sql: str, seq_of_params: Any) -> Cursor:
        """One statement over many rows, sent as one batch (psycopg's pipeline): an import's
        derived rows were a round trip each, three with the savepoint around every INSERT.
        A failing row undoes the whole batch (one savepoint around it) and raises, as
        SQLite's executemany raises at its first failing row."""
        batch = list(seq_of_params)
        if not batch:
            return Cursor(None, 0, None)
        if self.deadline is not None:  # each statement gets the time left: one by one
            total = 0
            for params in batch:
                total += max(self.execute(sql, params).rowcount, 0)
            return Cursor(None, total, None)
        t = translate(sql, self._keys)
        args = [{f"p{i + 1}": v for i, v in enumerate(p)}
                if t.numbered and not isinstance(p, dict) else (() if p is None else p)
                for p in batch]
        guarded = self._savepoints and bool(_GUARDED.match(sql))
        threshold = self.raw.prepare_threshold
        try:
            if guarded:
                self.raw.execute("SAVEPOINT mnemonist_stmt")
            self.raw.prepare_threshold = None  # as `execute`: never a server-side statement
            with self.raw.cursor() as cur:
                cur.executemany(t.sql, args)
                count = cur.rowcount
            if guarded:
                self.raw.execute("RELEASE SAVEPOINT mnemonist_stmt")
        except psycopg.Error as exc:
            if guarded and self.in_transaction:
                with contextlib.suppress(psycopg.Error):
                    self.raw.execute("ROLLBACK TO SAVEPOINT mnemonist_stmt")
            raise to_sqlite_error(exc, t.sql) from exc
        finally:
            self.raw.prepare_threshold = threshold
        count = count if count is not None and count >= 0 else 0
        if count > 0 and _WRITES.match(sql):
            self.total_changes += count
        return Cursor(None, count, None)

    def commit(self) -> None:
        self.raw.commit()

    def rollback(self) -> None:
        self.raw.rollback()
