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
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import psycopg
from psycopg import errors as pg_errors
from psycopg.adapt import Dumper
from psycopg.pq import Format

from mnemonist.store.postgres.dialect import (
    array_form,
    as_arrays,
    rows_form,
    translate,
    unnest_sql,
)

DIALECT = "postgresql"


class Row(tuple[Any, ...]):
    """A result row: a tuple that also answers by column name, like `sqlite3.Row`."""

    __slots__ = ()
    _names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
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


#: planner settings of the daemon's sessions. Its statements are small lookups (a recall
#: makes a dozen, each reading a few hundred rows at most) over data the server holds in
#: memory, the kind PostgreSQL's defaults (tuned for spinning disks and reports) misjudge:
#: measured on a recall of 6,000 memories, two workers started for a statement that needed
#: 0.07 ms took 9.6 ms, and a join of 263 mentions to their entities read all 9,000 of
#: them (7 ms) because an index lookup was priced at four sequential reads.
SESSION_SETTINGS = {
    "max_parallel_workers_per_gather": "0",  # no parallel workers: their start costs more
    "jit": "off",  # no JIT compilation of a plan (tens of ms, for statements of one)
    "random_page_cost": "1.1",  # an index lookup costs about a sequential read (SSD, cache)
}


def prepare(conn: psycopg.Connection) -> None:
    """Adapters and settings every connection of the store needs (the pool's `configure`)."""
    conn.adapters.register_dumper(bool, _BoolAsInt)
    conn.row_factory = _row_factory
    for name, value in SESSION_SETTINGS.items():
        conn.execute("SELECT set_config(%s, %s, false)", (name, value))
    if not conn.autocommit:
        conn.commit()


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
#: an executemany of this many rows or more is sent as arrays, when it is an INSERT
ARRAYS_FROM = 2
_GUARDED = re.compile(r"\s*(INSERT|REPLACE)\b", re.I)


#: Python values → what an array of each SQL type is built from (anything else: row by row)
_ARRAY_OF: dict[str, Callable[[Any], Any]] = {
    "bigint": int, "integer": int, "smallint": int,
    "double precision": float, "real": float,
    "text": str, "character varying": str,
    "bytea": bytes,
}


def _plain(v: Any) -> Any:
    return int(v) if isinstance(v, bool) else v  # stored as 0/1, as _BoolAsInt sends it


def _type_of(values: tuple[Any, ...]) -> str | None:
    """The SQL type of a parameter inside an expression, from its values (what psycopg
    would have sent them as, one by one)."""
    kinds = {type(_plain(v)) for v in values if v is not None}
    if kinds <= {int}:
        return "bigint"
    if kinds <= {int, float}:
        return "double precision"
    by_kinds: dict[frozenset[type], str] = {frozenset({str}): "text", frozenset({bytes}): "bytea"}
    return by_kinds.get(frozenset(kinds))


def _as_arrays(t: Any, batch: list[Any], types: dict[str, dict[str, str]]
               ) -> tuple[str, list[list[Any]]] | None:
    """An INSERT's rows as one statement with one array a column (dialect.unnest_sql), when it
    can be sent so: pipelined one statement a row, an import's derived rows took about 60 µs
    each, mostly in the driver. None: send them row by row."""
    if t.numbered or len(batch) < 2:
        return None
    text = t.sql  # without the RETURNING added for lastrowid (executemany has none)
    if t.returning is not None:
        text = text.removesuffix(f" RETURNING {t.returning}")
    form = rows_form(text)
    if form is None:
        return None
    table = types.get(form.table.lower())
    if table is None or not all(isinstance(p, list | tuple) and len(p) == form.width
                                for p in batch):
        return None
    columns = list(zip(*batch, strict=True))
    names: list[str] = []
    for column, values in zip(form.params(), columns, strict=True):
        # a column's own type; a parameter inside an expression: its values' type
        name = table.get(column) if column is not None else _type_of(values)
        if name is None or name not in _ARRAY_OF:
            return None
        names.append(name)
    if form.keys is not None:  # the key's positions among the parameters (a literal part
        at = {c: i for i, c in enumerate(form.params()) if c is not None}  # is the same in
        key_params = [at[c] for k in form.keys if (c := form.columns[k]) in at]  # every row)
        if len({tuple(p[i] for i in key_params) for p in batch}) < len(batch):
            return None  # two rows would update one row: row by row
    try:
        arrays = [[None if v is None else _ARRAY_OF[name](_plain(v)) for v in column]
                  for name, column in zip(names, columns, strict=True)]
    except (TypeError, ValueError):
        return None  # a value that is not of its column's type: the server decides, row by row
    return unnest_sql(form, tuple(names)), arrays


class PgConnection:
    """One psycopg connection with the sqlite3 surface the store code uses."""

    dialect = DIALECT

    def __init__(self, raw: psycopg.Connection, keys: tuple[Any, ...], *, savepoints: bool,
                 column_types: dict[str, dict[str, str]] | None = None) -> None:
        self.raw = raw
        self._keys = keys
        #: table -> column -> SQL type: what an INSERT's rows are sent as arrays of
        self.column_types = column_types or {}
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
        elif not t.numbered and (form := array_form(t.sql)) is not None:
            arrays = as_arrays(form, params)
            if arrays is not None:
                return form.sql, arrays, t.returning
        return t.sql, params, t.returning

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> Cursor:
        if self.deadline is None:
            return self._execute(sql, params)
        left = self.deadline - time.monotonic()
        if left < 0:
            raise sqlite3.OperationalError("interrupted: the statement's deadline has passed")
        # rounded up, at least 1 ms (0 would mean no limit): the callers (graph.walks,
        # graph.boost) take an interruption for the deadline only once it has passed
        left_ms = max(1, math.ceil(left * 1000))
        # the server cancels the statement when the time left is up (SQLite's progress
        # handler); set for this statement only, then back to what it was
        row = self.raw.execute(
            "SELECT current_setting('statement_timeout'),"
            " set_config('statement_timeout', %s, false)", [str(left_ms)]).fetchone()
        assert row is not None  # a SELECT without FROM: one row
        before = row[0]
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
            if guarded:  # the savepoint, the statement and the release: one round trip.
                # Nothing prepared in it: a statement the failing INSERT skips would stay
                # in psycopg's cache as prepared ("prepared statement _pg3_8 does not exist")
                with self.raw.pipeline():
                    self.raw.execute("SAVEPOINT mnemonist_stmt", prepare=False)
                    cur = self.raw.execute(text, args, prepare=False)
                    self.raw.execute("RELEASE SAVEPOINT mnemonist_stmt", prepare=False)
            else:
                cur = self.raw.execute(text, args, prepare=False)  # never None: %% is read
            # prepare() made every row a Row (the row factory; psycopg's types say tuple)
            rows = cast("list[Row]", cur.fetchall()) if cur.description is not None else None
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
        arrays = _as_arrays(t, batch, self.column_types) if len(batch) >= ARRAYS_FROM else None
        args = [{f"p{i + 1}": v for i, v in enumerate(p)}
                if t.numbered and not isinstance(p, dict) else (() if p is None else p)
                for p in batch]
        guarded = self._savepoints and bool(_GUARDED.match(sql))
        threshold = self.raw.prepare_threshold
        try:
            if guarded:
                self.raw.execute("SAVEPOINT mnemonist_stmt")
            self.raw.prepare_threshold = None  # as `execute`: never a server-side statement
            if arrays is not None:  # an INSERT: every row in one statement
                cur = self.raw.execute(arrays[0], arrays[1], prepare=False)
                count = cur.rowcount
            else:
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
