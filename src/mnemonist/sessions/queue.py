"""The buffered checkpoint flush queue: drafts wait out a short window and merge.

A draft waits up to `debounce_ms` (2,500 ms) from the first draft of its session; drafts of the
same session that arrive meanwhile merge into it (see `digest.merge`), so a burst of triggers
writes one row. `immediate` drafts (pre-compaction, session end, explicit) merge whatever is
waiting and write at once, because the next hook reads them. Every write scrubs credentials
from the digest, the queries and the remembers, then trims the session to
`maxCheckpointsPerSession` (oldest first). A background thread writes due drafts and prunes
checkpoints older than `retentionDays` (at start and then hourly).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from mnemonist.model.config import ContinuityConfig
from mnemonist.sessions.digest import CheckpointDraft, capped, format_digest, merge
from mnemonist.store import sessions as store
from mnemonist.store.db import Database
from mnemonist.text.scrub import scrub_credentials

log = logging.getLogger(__name__)

DEBOUNCE_MS = 2500
PRUNE_EVERY_S = 3600.0


def scrub(text: str) -> str:
    return scrub_credentials(text).text


class CheckpointQueue:
    def __init__(
        self,
        db: Database,
        config: ContinuityConfig,
        *,
        debounce_ms: int = DEBOUNCE_MS,
        clock: Callable[[], float] = time.monotonic,
        prune_every_s: float = PRUNE_EVERY_S,
    ) -> None:
        self.db = db
        self.cfg = config
        self.debounce_s = debounce_ms / 1000.0
        self.clock = clock
        self.prune_every_s = prune_every_s
        self._pending: dict[str, tuple[CheckpointDraft, float]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._write_lock = threading.RLock()  # a reader's flush waits for a write in flight
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.written = 0
        self.merged = 0
        self.pruned = 0
        self.last_error: str | None = None

    # -- queueing ------------------------------------------------------------------------
    def submit(self, draft: CheckpointDraft, *, immediate: bool = False) -> str | None:
        """Queue a draft (merged with any waiting one); `immediate` writes now and returns
        the checkpoint id."""
        with self._write_lock:
            with self._lock:
                held = self._pending.pop(draft.session_key, None)
                if held is not None:
                    draft = merge(held[0], draft)
                    self.merged += 1
                if not immediate:
                    due = held[1] if held is not None else self.clock() + self.debounce_s
                    self._pending[draft.session_key] = (draft, due)
                    self._wake.notify()
                    return None
            return self._write(draft)

    def pending(self, session_key: str | None = None) -> int:
        with self._lock:
            if session_key is None:
                return len(self._pending)
            return int(session_key in self._pending)

    def flush(self, session_key: str | None = None) -> list[str]:
        """Write what waits (for one session or all) now."""
        with self._write_lock:
            with self._lock:
                keys = [session_key] if session_key else list(self._pending)
                drafts = [self._pending.pop(k)[0] for k in keys if k in self._pending]
            return self._write_all(drafts)

    def flush_due(self, now: float | None = None) -> list[str]:
        """Write the drafts whose window has closed."""
        with self._write_lock:
            now = self.clock() if now is None else now
            with self._lock:
                due = [k for k, (_, at) in self._pending.items() if at <= now]
                drafts = [self._pending.pop(k)[0] for k in due]
            return self._write_all(drafts)

    def _write_all(self, drafts: list[CheckpointDraft]) -> list[str]:
        """Write `drafts` in order; when one fails (the store away or full) it and those
        after it wait again, due at once, and the error goes up: a queued checkpoint is
        never dropped. Called with `_write_lock` held."""
        written: list[str] = []
        for i, draft in enumerate(drafts):
            try:
                written.append(self._write(draft))
            except Exception:
                with self._lock:
                    for left in drafts[i:]:
                        held = self._pending.pop(left.session_key, None)
                        merged = merge(left, held[0]) if held is not None else left
                        self._pending[left.session_key] = (merged, self.clock())
                raise
        return written

    def _write(self, draft: CheckpointDraft) -> str:
        d = capped(draft)
        values = {
            "session_key": d.session_key,
            "harness": d.harness,
            "project": d.project,
            "project_normalized": d.project_normalized,
            "trigger": d.trigger,
            "digest": scrub(format_digest(d)),
            "prompt_count": d.prompt_count,
            "memory_queries": [scrub(q) for q in d.memory_queries],
            "recent_remembers": [scrub(r) for r in d.recent_remembers],
            "created_at": d.created_at,
        }
        with self.db.write_tx() as conn:
            checkpoint_id = store.insert_checkpoint(conn, values)
            store.enforce_cap(conn, d.session_key, self.cfg.max_checkpoints_per_session)
        self.written += 1
        return checkpoint_id

    # -- pruning -------------------------------------------------------------------------
    def prune(self, now: datetime | None = None) -> int:
        """Hard-delete checkpoints (and idle session state) past `retentionDays`."""
        now = now or datetime.now(UTC)
        with self.db.write_tx() as conn:
            count = store.prune_checkpoints(conn, self.cfg.retention_days, now)
            store.prune_sessions(conn, self.cfg.retention_days, now)
        self.pruned += count
        return count

    # -- background thread ---------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="mnemonist-checkpoints",
                                            daemon=True)
            self._thread.start()

    def _next_wait(self, next_prune: float) -> float:
        now = self.clock()
        wait = next_prune - now
        for _, due in self._pending.values():
            wait = min(wait, due - now)
        return max(0.0, min(wait, 60.0))

    def _run(self) -> None:
        next_prune = self.clock()
        while True:
            with self._lock:
                if self._stopping:
                    return
                self._wake.wait(self._next_wait(next_prune))
                if self._stopping:
                    return
            try:
                self.flush_due()
                if self.clock() >= next_prune:
                    next_prune = self.clock() + self.prune_every_s
                    self.prune()
            except Exception as exc:  # the loop must survive a bad write, the store away
                self.last_error = f"{type(exc).__name__}: {exc}"
                self.db.loops.failed("checkpoints", exc)
            else:
                self.db.loops.succeeded("checkpoints")

    def stop(self) -> None:
        """Stop the thread and write everything still waiting."""
        with self._lock:
            self._stopping = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        try:
            self.flush()
        except Exception:
            log.exception("checkpoint flush at stop failed")
