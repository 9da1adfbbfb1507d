"""Sleep replay's schedule: one cycle (`graph.replay`) once the daemon has had no API
request for `memory.consolidation.replay.idleTimeoutMs`, then nothing until the next idle
period (a request, then that long without one again). The HTTP app notes each request
(`api/activity.py`; a daemon used in-process, without HTTP, sees no request: one cycle after
its first idle period). It runs while `memory.consolidation.enabled` and `replay.enabled` are
both on; `run_now` (`POST /api/repair/sleep-replay`) runs a cycle on demand, whatever the
settings. A failing cycle is logged and not retried in the same idle period; it never stops
the daemon."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from mnemonist.graph.replay import replay_cycle, scheduled
from mnemonist.model.config import Config
from mnemonist.search.vector_index import VectorIndex
from mnemonist.store.db import Database

log = logging.getLogger(__name__)

#: the longest the thread sleeps between two looks at the idle clock
MAX_STEP_S = 5.0


class SleepReplayWorker:
    def __init__(self, db: Database, index: Callable[[], VectorIndex | None], config: Config,
                 *, clock: Callable[[], float] = time.monotonic,
                 rng: random.Random | None = None) -> None:
        self.db = db
        self.index = index
        self.cfg = config.memory.consolidation.replay
        self.scheduled = scheduled(config.memory.consolidation)
        self.graph = config.memory.pipeline_v2.graph
        self.clock = clock
        self.rng = rng or random.Random()
        self.last: dict[str, Any] | None = None
        self.last_error: str | None = None
        self._activity_at = clock()
        self._period = 0  # one more per request: an idle period is named by the last one
        self._replayed = -1  # the idle period a cycle already ran in
        self._note_lock = threading.Lock()
        self._run_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def note_activity(self) -> None:
        """An API request came in (or ended): the idle clock starts again."""
        with self._note_lock:
            self._activity_at = self.clock()
            self._period += 1

    def idle_s(self) -> float:
        return max(0.0, self.clock() - self._activity_at)

    def start(self) -> None:
        if not self.scheduled or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="sleep-replay", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def run_now(self) -> dict[str, Any]:
        """One cycle now (cycles never overlap)."""
        with self._run_lock:
            try:
                self.last = replay_cycle(self.db, self.index(), self.cfg, self.rng,
                                         graph=self.graph)
                self.last_error = None
                return self.last
            except Exception as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                raise

    def _due(self) -> int | None:
        """The idle period to replay now, or None (not idle long enough, or done already)."""
        with self._note_lock:
            period, since = self._period, self._activity_at
        if period == self._replayed:
            return None
        if self.clock() - since < self.cfg.idle_timeout_ms / 1000.0:
            return None
        return period

    def _loop(self) -> None:
        step = min(MAX_STEP_S, max(0.05, self.cfg.idle_timeout_ms / 10000.0))
        while not self._stop.wait(step):
            period = self._due()
            if period is None:
                continue
            self._replayed = period  # once per idle period, failed or not
            try:
                self.run_now()
            except Exception as exc:  # the next idle period tries again
                self.db.loops.failed("sleep replay", exc)
            else:
                self.db.loops.succeeded("sleep replay")

    def status(self) -> dict[str, Any]:
        with self._note_lock:
            waiting = self._period == self._replayed
        return {"running": self._thread is not None and self._thread.is_alive(),
                "idle_s": round(self.idle_s(), 1),
                "replayed_this_idle_period": waiting,
                "last_error": self.last_error}
