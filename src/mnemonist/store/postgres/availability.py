"""Whether PostgreSQL answers, and answering at once while it does not.

Without this a stopped server cost every request the pool's 30 s wait and then a 500 whose
body was the driver's error, and after a restart the pool's own reconnection backoff kept
requests failing for tens of seconds more. Here:

- A statement that fails because the connection is gone (the server stopped, restarted, or
  the network dropped; libpq errors without an SQLSTATE, class 08, admin or crash shutdown, a
  pool that gives no connection in time) marks the store *down* and the caller gets
  `StorageUnavailable` (the faces answer `503 storage_unavailable`, with no driver text).
- While down, every statement asks first whether the server is back: one direct connection
  attempt at most every `PROBE_EVERY_S` (with a short connect timeout), the others fail at
  once. The first probe that connects reopens the pool (fresh connections, none of the dead
  ones) and the store is up again: recovery needs no restart and waits for no backoff.
- A request waits at most `POOL_WAIT_S` for a pooled connection before asking the same
  question: a server that answers means the pool is merely busy (the wait goes on); one that
  does not is an outage.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from mnemonist.store.db import StorageUnavailable
from mnemonist.store.loop_health import short

log = logging.getLogger(__name__)

#: libpq's connect_timeout for every connection the store makes (seconds, whole)
CONNECT_TIMEOUT_S = 2
#: how often a request may try whether a server that was away is back
PROBE_EVERY_S = 0.5
#: how long a request waits for a pooled connection before checking the server is there
POOL_WAIT_S = 1.0
#: the answer the faces give (no driver text: it names hosts and ports)
DOWN = "the database does not answer: nothing was read or written (retry shortly)"

_SHUTDOWN = (pg_errors.AdminShutdown, pg_errors.CrashShutdown, pg_errors.CannotConnectNow)


def connection_lost(exc: BaseException) -> bool:
    """True when `exc` (or the driver error behind a translated sqlite3 one) says the server
    is not there, as opposed to a statement the server refused (a constraint, a timeout)."""
    if isinstance(exc, StorageUnavailable):
        return True
    cause = exc.__cause__ if isinstance(exc, sqlite3.Error) and exc.__cause__ else exc
    if isinstance(cause, (PoolTimeout, *_SHUTDOWN)):
        return True
    if isinstance(cause, psycopg.OperationalError):
        state = cause.sqlstate
        return state is None or state.startswith("08")
    return isinstance(cause, psycopg.InterfaceError) and "closed" in str(cause)


class Availability:
    """Up or down, and the way back up (see the module docstring).

    `probe()` connects and disconnects (raising when it cannot); `on_back()` runs once when a
    probe succeeds after an outage (the database reopens its pool there)."""

    def __init__(self, probe: Callable[[], None], on_back: Callable[[], None]) -> None:
        self._probe = probe
        self._on_back = on_back
        self.down_since: float | None = None
        self.last_error: str | None = None
        self._last_probe = 0.0
        self._probing = threading.Lock()

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def lost(self, exc: BaseException) -> StorageUnavailable:
        """Mark the store down after `exc`; the exception for the caller to raise."""
        if isinstance(exc, StorageUnavailable):
            return exc
        if self.down_since is None:
            self.down_since = time.time()
            self._last_probe = 0.0  # the next request asks at once (a restart is quick)
            log.warning("PostgreSQL does not answer (%s): requests answer 503 until it is back",
                        short(exc))
        self.last_error = short(exc)
        return StorageUnavailable(DOWN)

    def check(self) -> None:
        """Return when the store is up (probing, at most every PROBE_EVERY_S, while it is
        down); raise `StorageUnavailable` at once otherwise."""
        if self.down_since is None:
            return
        now = time.monotonic()
        if now - self._last_probe < PROBE_EVERY_S or not self._probing.acquire(blocking=False):
            raise StorageUnavailable(DOWN)
        try:
            if self.down_since is None:
                return  # another thread brought it back meanwhile
            self._last_probe = now
            try:
                self._probe()
                self._on_back()
            except Exception as exc:
                self.last_error = short(exc)
                raise StorageUnavailable(DOWN) from None
            log.warning("PostgreSQL answers again after %.1f s",
                        time.time() - self.down_since)
            self.down_since = None
            self.last_error = None
        finally:
            self._probing.release()

    def reachable(self) -> bool:
        """One direct connection attempt now (the pool may merely be busy)."""
        try:
            self._probe()
        except Exception as exc:
            self.last_error = short(exc)
            return False
        return True
