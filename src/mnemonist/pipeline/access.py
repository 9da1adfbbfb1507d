"""Recall hits update `last_accessed` / `access_count` in the background, batched.

Two kinds of access are told apart: every access (an explicit recall or search, or a hook
injecting the memory) counts in `access_count` and moves `last_accessed`, the anchor of
confidence decay; only explicit recalls count in `recall_count`, the input of the access
boost. Injections are chosen by the ranking itself, so letting them feed the boost would make
it feed on itself.

Writing them inside recall would put a write transaction (and an fsync) on every read and
serialise readers behind writers; batching keeps recall a pure read. Counts are flushed every
`memory.access_flush_ms` and on shutdown.
"""

from __future__ import annotations

import logging
import threading

from mnemonist.model.memory import utcnow
from mnemonist.store import memories
from mnemonist.store.db import Database

log = logging.getLogger(__name__)


class AccessRecorder:
    def __init__(self, db: Database, interval_s: float = 1.0) -> None:
        self.db = db
        self.interval_s = interval_s
        self._pending: dict[int, tuple[int, int, str]] = {}  # seq: (accesses, recalls, at)
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # a flush returns after any flush in flight
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def record(self, seqs: list[int], *, recall: bool = False) -> None:
        """Count an access of each memory; `recall`: an explicit recall or search (it also
        counts towards the access boost), not an injection."""
        now = utcnow()
        with self._lock:
            for seq in seqs:
                count, recalls, _ = self._pending.get(seq, (0, 0, now))
                self._pending[seq] = (count + 1, recalls + int(recall), now)

    def flush(self) -> int:
        """Write the counts waiting now; when it returns, every count recorded before the
        call is committed (a background flush in flight is waited for)."""
        with self._flushing:
            return self._flush()

    def _flush(self) -> int:
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return 0
        try:
            with self.db.write_tx() as conn:
                memories.record_access(conn, pending)
        except Exception as exc:  # kept for the next flush (the store may be away a while)
            self.db.loops.failed("access counts", exc)
            with self._lock:
                for seq, (count, recalls, at) in pending.items():
                    old, old_recalls, _ = self._pending.get(seq, (0, 0, at))
                    self._pending[seq] = (old + count, old_recalls + recalls, at)
            return 0
        self.db.loops.succeeded("access counts")
        return len(pending)

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="mnemonist-access", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.flush()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        self.flush()
