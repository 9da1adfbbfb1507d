"""Statements under a deadline on PostgreSQL (store/deadline.py): each runs under a
`statement_timeout` of the time left, which is put back afterwards; a connection whose reset
the server cancelled is closed rather than handed on with the tiny timeout."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import psycopg
import pytest
from psycopg import errors as pg_errors

from mnemonist.store.postgres.connection import PgConnection, prepare


class CancelledReset:
    """A connection whose statement putting the timeout back is cancelled by the server, as
    happens on a loaded machine when 1 ms was left."""

    def __init__(self, raw: psycopg.Connection) -> None:
        self._raw = raw

    def execute(self, sql: str, params: Any = None, **kwargs: Any) -> Any:
        if sql.startswith("SELECT set_config('statement_timeout', %s, false)"):
            raise pg_errors.QueryCanceled("canceling statement due to statement timeout")
        return self._raw.execute(sql, params, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def _connection(url: str) -> psycopg.Connection:
    raw = psycopg.connect(url, autocommit=True)
    prepare(raw)
    return raw


def test_a_statement_past_its_deadline_is_cancelled_and_the_timeout_put_back(
    postgres_url: str,
) -> None:
    raw = _connection(postgres_url)
    try:
        conn = PgConnection(raw, (), savepoints=False)
        conn.set_deadline(time.monotonic() + 0.05)
        with pytest.raises(sqlite3.OperationalError, match="statement timeout"):
            conn.execute("SELECT pg_sleep(2)")
        conn.set_deadline(None)
        assert raw.execute("SHOW statement_timeout").fetchone()[0] == "0"
        assert conn.execute("SELECT 1").fetchone()[0] == 1
    finally:
        raw.close()


def test_a_cancelled_reset_closes_the_connection_instead_of_leaking_the_timeout(
    postgres_url: str,
) -> None:
    raw = _connection(postgres_url)
    try:
        conn = PgConnection(CancelledReset(raw), (), savepoints=False)  # type: ignore[arg-type]
        conn.set_deadline(time.monotonic() + 5)
        assert conn.execute("SELECT 1").fetchone()[0] == 1  # the answer still counts
        assert raw.closed  # a pool discards it: nobody gets its 5 s timeout
    finally:
        raw.close()
