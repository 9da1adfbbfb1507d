"""The consolidation engine's schedule: a background thread that runs it every
`memory.consolidation.intervalMs`, at most `maxBatches` batches a run (its budget), while the
daemon runs and `enabled` is true. A failing run is logged and retried at the next interval;
it never stops the daemon."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from mnemonist.model.config_consolidation import ConsolidationConfig
from mnemonist.model.memory import utcnow

log = logging.getLogger(__name__)


class ConsolidationWorker:
    def __init__(self, run: Callable[[], Mapping[str, Any]], cfg: ConsolidationConfig) -> None:
        self.run = run
        self.cfg = cfg
        self.last: Mapping[str, Any] | None = None
        self.last_at: str | None = None
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self.cfg.enabled or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="consolidation", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.wait(self.cfg.interval_ms / 1000.0):
            try:
                self.last = self.run()
                self.last_error = None
            except Exception as exc:  # logged; the next interval tries again
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("consolidation run failed")
            self.last_at = utcnow()

    def status(self) -> dict[str, Any]:
        last = dict(self.last or {})
        last.pop("actions", None)
        return {"running": self._thread is not None and self._thread.is_alive(),
                "last_run_at": self.last_at, "last_run": last or None,
                "last_error": self.last_error}
