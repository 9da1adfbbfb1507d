"""Which background loops are retrying after a failure, for `/health` and `status`.

Every background thread of the daemon (the embedder, the job workers, the file watcher, the
maintenance and retention sweeps, ...) survives a failing store: it catches the error, waits
with a growing backoff and tries again, forever. While one is in such a streak this registry
says so (the loop's name, since when, how many attempts, the last error in one line), and
`/health` reports the daemon degraded; the loop's next success clears it. The first failure
of a streak is logged as a warning, the rest quietly, so that an outage of a minute does not
write a thousand tracebacks.

One registry per store object (`Database.loops`): two daemons in one process (the tests, a
benchmark) keep their own.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

BASE_DELAY_S = 1.0
MAX_DELAY_S = 30.0
#: the longest wait after a storage fault (the database server away, the disk full, the
#: database read-only): asking again is cheap then (the store refuses at once), and the work
#: resumes within seconds of the storage's return
MAX_OUTAGE_DELAY_S = 3.0


def short(exc: BaseException, limit: int = 300) -> str:
    """`Type: first line of the message`, bounded (a status page, not a traceback)."""
    said = str(getattr(exc, "detail", None) or exc).strip()  # a StorageFault: without its kind
    text = said.splitlines()[0] if said else ""
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class Streak:
    since: float  # time.time() of the streak's first failure
    attempts: int
    last_error: str


class LoopHealth:
    """`failed(name, exc)` when a loop's round fails (returns how long to wait before the
    next), `succeeded(name)` when one works; `retrying()` lists the streaks open now."""

    def __init__(self, *, max_delay_s: float = MAX_DELAY_S) -> None:
        self.max_delay_s = max_delay_s
        self._streaks: dict[str, Streak] = {}
        self._lock = threading.Lock()

    def failed(self, name: str, exc: BaseException) -> float:
        error = short(exc)
        with self._lock:
            streak = self._streaks.get(name)
            if streak is None:
                streak = self._streaks[name] = Streak(time.time(), 0, error)
            streak.attempts += 1
            streak.last_error = error
            attempts = streak.attempts
        longest = (MAX_OUTAGE_DELAY_S if getattr(exc, "kind", None) is not None
                   else self.max_delay_s)
        delay = min(BASE_DELAY_S * 2 ** (attempts - 1), longest)
        delay += random.uniform(0, 0.25 * BASE_DELAY_S)
        if attempts == 1:  # a bug gets its traceback; a store away or full needs none
            log.warning("%s: %s; retrying (every %.0f s at most) until it works",
                        name, error, longest, exc_info=getattr(exc, "kind", None) is None)
        else:
            log.debug("%s: attempt %d failed: %s", name, attempts, error)
        return delay

    def succeeded(self, name: str) -> None:
        if name not in self._streaks:  # the common case, without the lock
            return
        with self._lock:
            streak = self._streaks.pop(name, None)
        if streak is not None:
            log.warning("%s works again after %d failed attempts (%.0f s)", name,
                        streak.attempts, time.time() - streak.since)

    def run_every(self, name: str, interval_s: Callable[[], float], step: Callable[[], Any],
                  stop: threading.Event) -> None:
        """Call `step()` every `interval_s()` seconds until `stop` is set; after a failure
        sooner, after the backoff (never later than the interval), until it works again."""
        wait = interval_s()
        while not stop.wait(wait):
            try:
                step()
            except Exception as exc:
                wait = min(self.failed(name, exc), interval_s())
            else:
                self.succeeded(name)
                wait = interval_s()

    def retrying(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            items = list(self._streaks.items())
        now = time.time()
        return {name: {"since_s": round(now - s.since, 1), "attempts": s.attempts,
                       "last_error": s.last_error} for name, s in sorted(items)}
