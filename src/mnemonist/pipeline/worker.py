"""The job runtime: one polling loop per job type over `memory_jobs`.

Each tick leases one job in a write transaction, runs its handler outside any transaction,
then completes or fails it in another. A handler raises `ProviderUnavailable` when its LLM (or
other provider) is down: the job goes back to pending without burning an attempt and the loop
waits. Other exceptions fail the job (dead after `max_attempts`) and back the loop off
exponentially with jitter. A reaper returns leases older than `leaseTimeoutMs` (a crashed
worker) to pending every 60 s.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mnemonist.model.memory import utcnow
from mnemonist.store import jobs
from mnemonist.store.db import Database
from mnemonist.store.jobs import Job

log = logging.getLogger(__name__)

BASE_DELAY_S = 1.0
MAX_DELAY_S = 30.0
JITTER_S = 0.5
REAP_EVERY_S = 60.0

Handler = Callable[[Job], "dict[str, Any] | None"]


class ProviderUnavailable(RuntimeError):
    """The provider a job needs is down: wait, do not burn an attempt."""


def backoff_delay(failures: int, rng: random.Random | None = None) -> float:
    """min(BASE × 2^failures, MAX) + jitter."""
    uniform = rng.uniform if rng is not None else random.uniform
    return min(BASE_DELAY_S * (2**failures), MAX_DELAY_S) + uniform(0, JITTER_S)


@dataclass
class WorkerStats:
    job_type: str
    running: bool = False
    processed: int = 0
    failed: int = 0
    deferred: int = 0
    dead: int = 0
    reaped: int = 0
    consecutive_failures: int = 0
    waiting_reason: str | None = None
    last_error: str | None = None
    last_run_at: str | None = None


class JobWorker:
    def __init__(
        self,
        db: Database,
        job_type: str,
        handler: Handler,
        *,
        poll_s: float = 2.0,
        lease_timeout_ms: int = 300_000,
        available: Callable[[], str | None] | None = None,
        on_failure: Callable[[Job, str, str], None] | None = None,
    ) -> None:
        """`available()` returns None when the provider is up, else why it is not.
        `on_failure(job, outcome, error)` runs inside the transaction that records a failed
        attempt (outcome "pending" or "dead"), so state kept elsewhere changes with the job."""
        self.db = db
        self.job_type = job_type
        self.handler = handler
        self.poll_s = poll_s
        self.lease_timeout_ms = lease_timeout_ms
        self.available = available
        self.on_failure = on_failure
        self.stats = WorkerStats(job_type)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_reap = 0.0

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self.stats.running = True
            self._thread = threading.Thread(
                target=self._run, name=f"mnemonist-{self.job_type}", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None
        self.stats.running = False

    def wake(self) -> None:
        """Poll now (a job was just enqueued)."""
        self._wake.set()

    def _run(self) -> None:
        loops = self.db.loops
        name = f"{self.job_type} worker"
        while not self._stop.is_set():
            try:
                delay = self.tick()
                loops.succeeded(name)
            except Exception as exc:  # the store failed (read-only, full, away): keep going
                delay = loops.failed(name, exc)
                self.stats.last_error = f"{type(exc).__name__}: {exc}"
            self._wake.wait(delay)
            self._wake.clear()

    def reap(self) -> int:
        with self.db.write_tx() as conn:
            count = jobs.reap_stale(conn, self.lease_timeout_ms, self.job_type)
        self.stats.reaped += count
        return count

    def tick(self) -> float:
        """Run at most one job; returns how long to wait before the next tick."""
        now = time.monotonic()
        if now - self._last_reap >= REAP_EVERY_S:
            self._last_reap = now
            try:
                self.reap()
            except Exception:
                log.exception("lease reaper failed")
        if self.available is not None:
            reason = self.available()
            self.stats.waiting_reason = reason
            if reason:
                return max(self.poll_s, 5.0)
        with self.db.write_tx() as conn:
            job = jobs.lease(conn, self.job_type)
        if job is None:
            return self.poll_s
        return self._execute(job)

    def _execute(self, job: Job) -> float:
        self.stats.last_run_at = utcnow()
        try:
            result = self.handler(job)
        except ProviderUnavailable as exc:
            with self.db.write_tx() as conn:
                jobs.defer(conn, job.id, f"waiting: {exc}", max(self.poll_s, 5.0))
            self.stats.deferred += 1
            self.stats.waiting_reason = str(exc)
            return max(self.poll_s, 5.0)
        except Exception as exc:
            log.warning("%s job %s failed: %s", self.job_type, job.id, exc)
            delay = backoff_delay(self.stats.consecutive_failures)
            self.stats.consecutive_failures += 1
            self.stats.failed += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            with self.db.write_tx() as conn:
                outcome = jobs.fail(conn, job.id, self.stats.last_error, delay)
                if self.on_failure is not None:
                    self.on_failure(job, outcome, str(exc))
            if outcome == "dead":
                self.stats.dead += 1
            return delay
        with self.db.write_tx() as conn:
            jobs.complete(conn, job.id, result)
        self.stats.processed += 1
        self.stats.consecutive_failures = 0
        self.stats.waiting_reason = None
        return 0.0  # more work may be waiting: poll again at once
