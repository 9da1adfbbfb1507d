"""What one daemon changed, told to the others: PostgreSQL's LISTEN/NOTIFY.

Each daemon keeps a few things in memory between requests. On PostgreSQL every daemon reads
the database for what it searches (no in-process vector or keyword copy), so what is left to
follow is small: the known authors (`who`, the query names recall lifts and strips, see
search/authors.py). A trigger on `memories` sends one notification on the channel `CHANNEL`
when a row is written with an author or its author changes; PostgreSQL delivers it to every
listening session once the writing transaction commits (never for a rolled-back one). Each
daemon runs one `ChangeListener` thread on its own connection that passes every payload to
its handler. When that connection drops, notifications sent meanwhile are lost: the listener
reconnects and calls `on_gap`, and the daemon re-reads what it keeps in full.

The trigger and its function are created idempotently at every start (`install`), inside
the migrations' advisory lock, so daemons starting together do not race; they are not part of
the generated baseline schema (nothing of SQLite's corresponds to them).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg

log = logging.getLogger(__name__)

CHANNEL = "mnemonist_changes"
#: seconds between tries to reconnect a dropped listener connection
RETRY_S = 2.0

_FUNCTION = f"""
CREATE OR REPLACE FUNCTION mnemonist_notify_author() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{CHANNEL}', json_build_object('kind', 'who', 'who', NEW.who)::text);
    RETURN NULL;
END $$
"""
STATEMENTS = (
    _FUNCTION,
    "CREATE OR REPLACE TRIGGER memories_notify_author_insert AFTER INSERT ON memories"
    " FOR EACH ROW WHEN (NEW.who IS NOT NULL) EXECUTE FUNCTION mnemonist_notify_author()",
    "CREATE OR REPLACE TRIGGER memories_notify_author_update AFTER UPDATE OF who ON memories"
    " FOR EACH ROW WHEN (NEW.who IS NOT NULL AND NEW.who IS DISTINCT FROM OLD.who)"
    " EXECUTE FUNCTION mnemonist_notify_author()",
)


TRIGGERS = ("memories_notify_author_insert", "memories_notify_author_update")


def install(raw: psycopg.Connection) -> bool:
    """Create (or replace) the notifying trigger; the caller holds the migrations' lock.
    Nothing when this very version is in place already (replacing a trigger locks
    `memories` against writers for a moment: not at every daemon's start). True if made."""
    body = _FUNCTION.split("AS $$", 1)[1].rsplit("$$", 1)[0]
    row = raw.execute(
        "SELECT p.prosrc, (SELECT count(*) FROM pg_trigger t WHERE t.tgname = ANY(%s)"
        "  AND t.tgrelid = to_regclass('memories'))"
        " FROM pg_proc p WHERE p.proname = 'mnemonist_notify_author'"
        " AND p.pronamespace = current_schema()::regnamespace", (list(TRIGGERS),)).fetchone()
    if row is not None and row[0] == body and row[1] == len(TRIGGERS):
        return False
    for statement in STATEMENTS:
        raw.execute(statement)
    return True


class ChangeListener:
    """LISTEN on `CHANNEL` in a thread; `on_change(payload)` for each notification,
    `on_gap()` after each (re)connection, before the notifications that follow it."""

    def __init__(self, url: str, on_change: Callable[[dict[str, Any]], None],
                 on_gap: Callable[[], None]) -> None:
        self.url = url
        self.pid: int | None = None  # the listening session's backend (tests end it)
        self.on_change = on_change
        self.on_gap = on_gap
        self._stop = threading.Event()
        self._conn: psycopg.Connection | None = None
        self._thread = threading.Thread(target=self._run, name="pg-listener", daemon=True)
        #: set once the first LISTEN is in place (tests wait on it)
        self.listening = threading.Event()
        self.received = 0
        self.gaps = 0  # (re)connections, each followed by a full re-read

    def start(self) -> ChangeListener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.pid = conn.info.backend_pid
                    self._gap()
                    self.listening.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._deliver(note.payload)
            except psycopg.Error as exc:
                if self._stop.is_set():
                    return
                log.warning("PostgreSQL change listener lost its connection (%s): retrying",
                            exc)
                self._stop.wait(RETRY_S)

    def _gap(self) -> None:
        self.gaps += 1
        try:
            self.on_gap()
        except Exception:
            log.exception("re-reading after a listener (re)connection failed")

    def _deliver(self, payload: str) -> None:
        self.received += 1
        try:
            self.on_change(json.loads(payload))
        except Exception:
            log.exception("a change notification could not be applied: %r", payload[:200])
