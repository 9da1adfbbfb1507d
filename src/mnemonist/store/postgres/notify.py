"""What one daemon changed, told to the others: PostgreSQL's LISTEN/NOTIFY.

Each daemon keeps a few things in memory between requests: the known authors (`who`, the
query names recall lifts and strips, see search/authors.py) and, on a large store, the keyword
mirror (search/keyword_mirror.py, the context keyword index ranked in NumPy). Triggers tell
them what changed:

- on `memories`, one notification on `CHANNEL` when a row is written with an author or its
  author changes;
- on `memory_context`, one per statement that inserts, changes or deletes rows, on
  `CONTEXT_CHANNEL`, its payload the rows' seqs ("12,13,20"; a statement of many rows sends
  several of at most `CONTEXT_BATCH`);
- on `VECTOR_CHANNEL`, the seqs of the memories whose vectors the in-memory vector index
  (search/pg_vector_mirror.py) must read again: memories inserted or purged, a memory whose
  liveness (deleted, superseded), project or content changes, and the memories and context
  texts an embedding was written for.

PostgreSQL delivers a notification to every listening session once the writing transaction
commits (never for a rolled-back one). Each daemon runs one `ChangeListener` thread on its own
connection that passes every payload to its handler; the daemon's own writer connection
listens to the context channel too, so that the daemon's own changes reach its mirror with
the commit itself (store/postgres/database.py `watch_context`), and the listener skips those.
When the listener's connection drops, notifications sent meanwhile are lost: it reconnects
and calls `on_gap`, and the daemon re-reads what it keeps in full.

The triggers and their functions are created idempotently at every start (`install`), inside
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
CONTEXT_CHANNEL = "mnemonist_context"
VECTOR_CHANNEL = "mnemonist_vectors"
#: seqs per context notification (a payload must stay under PostgreSQL's 8,000 bytes)
CONTEXT_BATCH = 500
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


def _send_seqs(channel: str) -> str:
    """The plpgsql that sends the array `seqs` on `channel`, `CONTEXT_BATCH` seqs a
    notification ("12,13,20"): a payload stays far below PostgreSQL's 8,000 bytes."""
    return (f"    FOR i IN 0 .. (cardinality(seqs) - 1) / {CONTEXT_BATCH} LOOP\n"
            f"        PERFORM pg_notify('{channel}', array_to_string(\n"
            f"            seqs[i * {CONTEXT_BATCH} + 1 : (i + 1) * {CONTEXT_BATCH}], ','));\n"
            "    END LOOP;\n")


_CONTEXT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION mnemonist_notify_context() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    seqs bigint[];
BEGIN
    IF TG_OP = 'DELETE' THEN
        SELECT array_agg(seq ORDER BY seq) INTO seqs FROM old_rows;
    ELSE
        SELECT array_agg(seq ORDER BY seq) INTO seqs FROM new_rows;
    END IF;
    IF seqs IS NULL THEN
        RETURN NULL;
    END IF;
{_send_seqs(CONTEXT_CHANNEL)}    RETURN NULL;
END $$
"""
#: the seqs of a statement's rows (`old_rows` for a DELETE, else `new_rows`) on
#: VECTOR_CHANNEL; for `embeddings`, the memories and context texts holding their hashes
_VECTOR_FUNCTION = f"""
CREATE OR REPLACE FUNCTION mnemonist_notify_vectors() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    seqs bigint[];
BEGIN
    IF TG_TABLE_NAME = 'embeddings' THEN
        SELECT array_agg(DISTINCT s ORDER BY s) INTO seqs FROM (
            SELECT m.seq AS s FROM new_rows e JOIN memories m ON m.content_hash = e.content_hash
            UNION ALL
            SELECT c.seq FROM new_rows e JOIN memory_context c ON c.text_hash = e.content_hash
        ) t;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(seq ORDER BY seq) INTO seqs FROM old_rows;
    ELSIF TG_LEVEL = 'ROW' THEN
        seqs := ARRAY[NEW.seq];
    ELSE
        SELECT array_agg(seq ORDER BY seq) INTO seqs FROM new_rows;
    END IF;
    IF seqs IS NULL THEN
        RETURN NULL;
    END IF;
{_send_seqs(VECTOR_CHANNEL)}    RETURN NULL;
END $$
"""
STATEMENTS = (
    _FUNCTION,
    _CONTEXT_FUNCTION,
    _VECTOR_FUNCTION,
    "CREATE OR REPLACE TRIGGER memories_notify_author_insert AFTER INSERT ON memories"
    " FOR EACH ROW WHEN (NEW.who IS NOT NULL) EXECUTE FUNCTION mnemonist_notify_author()",
    "CREATE OR REPLACE TRIGGER memories_notify_author_update AFTER UPDATE OF who ON memories"
    " FOR EACH ROW WHEN (NEW.who IS NOT NULL AND NEW.who IS DISTINCT FROM OLD.who)"
    " EXECUTE FUNCTION mnemonist_notify_author()",
    "CREATE OR REPLACE TRIGGER memory_context_notify_insert AFTER INSERT ON memory_context"
    " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION mnemonist_notify_context()",
    "CREATE OR REPLACE TRIGGER memory_context_notify_update AFTER UPDATE ON memory_context"
    " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION mnemonist_notify_context()",
    "CREATE OR REPLACE TRIGGER memory_context_notify_delete AFTER DELETE ON memory_context"
    " REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION mnemonist_notify_context()",
    "CREATE OR REPLACE TRIGGER memories_notify_vectors_insert AFTER INSERT ON memories"
    " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION mnemonist_notify_vectors()",
    "CREATE OR REPLACE TRIGGER memories_notify_vectors_update"
    " AFTER UPDATE OF is_deleted, superseded_at, project, content_hash ON memories"
    " FOR EACH ROW WHEN (NEW.is_deleted IS DISTINCT FROM OLD.is_deleted"
    " OR NEW.superseded_at IS DISTINCT FROM OLD.superseded_at"
    " OR NEW.project IS DISTINCT FROM OLD.project"
    " OR NEW.content_hash IS DISTINCT FROM OLD.content_hash)"
    " EXECUTE FUNCTION mnemonist_notify_vectors()",
    "CREATE OR REPLACE TRIGGER memories_notify_vectors_delete AFTER DELETE ON memories"
    " REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION mnemonist_notify_vectors()",
    "CREATE OR REPLACE TRIGGER embeddings_notify_vectors_insert AFTER INSERT ON embeddings"
    " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION mnemonist_notify_vectors()",
    "CREATE OR REPLACE TRIGGER embeddings_notify_vectors_update AFTER UPDATE ON embeddings"
    " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION mnemonist_notify_vectors()",
)


TRIGGERS = ("memories_notify_author_insert", "memories_notify_author_update",
            "memory_context_notify_insert", "memory_context_notify_update",
            "memory_context_notify_delete", "memories_notify_vectors_insert",
            "memories_notify_vectors_update", "memories_notify_vectors_delete",
            "embeddings_notify_vectors_insert", "embeddings_notify_vectors_update")
_FUNCTIONS = ("mnemonist_notify_author", "mnemonist_notify_context", "mnemonist_notify_vectors")


def context_seqs(payload: str) -> list[int]:
    """The seqs of a context notification."""
    return [int(part) for part in payload.split(",") if part]


def install(raw: psycopg.Connection) -> bool:
    """Create (or replace) the notifying trigger; the caller holds the migrations' lock.
    Nothing when this very version is in place already (replacing a trigger locks
    `memories` against writers for a moment: not at every daemon's start). True if made."""
    bodies = [f.split("AS $$", 1)[1].rsplit("$$", 1)[0]
              for f in (_FUNCTION, _CONTEXT_FUNCTION, _VECTOR_FUNCTION)]  # in name order
    row = raw.execute(
        "SELECT array_agg(p.prosrc ORDER BY p.proname),"
        " (SELECT count(*) FROM pg_trigger t WHERE t.tgname = ANY(%s)"
        "  AND t.tgrelid IN (to_regclass('memories'), to_regclass('memory_context'),"
        "  to_regclass('embeddings')))"
        " FROM pg_proc p WHERE p.proname = ANY(%s)"
        " AND p.pronamespace = current_schema()::regnamespace",
        (list(TRIGGERS), list(_FUNCTIONS))).fetchone()
    if row is not None and row[0] == bodies and row[1] == len(TRIGGERS):
        return False
    for statement in STATEMENTS:
        raw.execute(statement)
    return True


class ChangeListener:
    """LISTEN on `CHANNEL` in a thread; `on_change(payload)` for each notification,
    `on_gap()` after each (re)connection, before the notifications that follow it."""

    def __init__(self, url: str, on_change: Callable[[dict[str, Any]], None],
                 on_gap: Callable[[], None],
                 on_context: Callable[[list[int], int], None] | None = None,
                 on_vectors: Callable[[list[int]], None] | None = None) -> None:
        """`on_context(seqs, pid)`: the context rows a commit changed, and the backend pid
        of the session that committed it; `on_vectors(seqs)`: the memories whose vectors a
        commit (of any daemon, this one's included) may have changed."""
        self.url = url
        self.pid: int | None = None  # the listening session's backend (tests end it)
        self.on_change = on_change
        self.on_gap = on_gap
        self.on_context = on_context
        self.on_vectors = on_vectors
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
                    if self.on_context is not None:
                        conn.execute(f"LISTEN {CONTEXT_CHANNEL}")
                    if self.on_vectors is not None:
                        conn.execute(f"LISTEN {VECTOR_CHANNEL}")
                    self.pid = conn.info.backend_pid
                    self._gap()
                    self.listening.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            if note.channel == CONTEXT_CHANNEL:
                                self._deliver_context(note.payload, note.pid)
                            elif note.channel == VECTOR_CHANNEL:
                                self._deliver_vectors(note.payload)
                            else:
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

    def _deliver_context(self, payload: str, pid: int) -> None:
        self.received += 1
        try:
            self.on_context(context_seqs(payload), pid)  # type: ignore[misc]
        except Exception:
            log.exception("a context notification could not be applied: %r", payload[:200])

    def _deliver_vectors(self, payload: str) -> None:
        self.received += 1
        try:
            self.on_vectors(context_seqs(payload))  # type: ignore[misc]
        except Exception:
            log.exception("a vector notification could not be applied: %r", payload[:200])

    def _deliver(self, payload: str) -> None:
        self.received += 1
        try:
            self.on_change(json.loads(payload))
        except Exception:
            log.exception("a change notification could not be applied: %r", payload[:200])
