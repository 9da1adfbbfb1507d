"""The memory-file worker: one thread that syncs at start, watches the known roots with
`watchfiles` (inotify, FSEvents or ReadDirectoryChangesW; no polling), and syncs every
`files.interval_minutes`.

What is watched, not recursively: each root (for `MEMORY.md`, `memory.md` and a `memory/`
folder appearing) and each folder under `root/memory/`. A project root is often a large
repository; watching it whole would spend a kernel watch on every folder of `node_modules`.
Changes are grouped by `watchfiles`: a group is handed over once changes pause for 50 ms, and
at the latest `files.watch_debounce_ms` after its first change. A changed file marks its root
changed and is synced at once (the root is re-listed, only files whose size, time or bytes
changed are read); a folder appearing or disappearing also restarts the watch on the new set
of folders (and once it is in place, the roots are listed again, for files made meanwhile),
and so does a root the daemon learns at a session start (`refresh`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

import watchfiles

from mnemonist.ingest.memory_files import MEMORY_DIR, ROOT_FILES, SUFFIX, FileRoot
from mnemonist.model.config import FilesConfig
from mnemonist.model.memory import utcnow
from mnemonist.store.db import Database

log = logging.getLogger(__name__)

STEP_MS = 50  # quiet time that ends a group of changes
WAKE_MS = 1000  # the watch wakes this often to see stop, refresh and interval
RETRY_S = 2.0  # after an error, wait this long before watching again


class FileSyncHost(Protocol):
    """What the watcher needs of the service: its `files` part (service/files.py)."""

    def watch_targets(self) -> dict[str, FileRoot]: ...

    def mark_files_dirty(self, root: str | None = None, path: str | None = None) -> None: ...

    def sync_dirty_files(self, reason: str, *, blocking: bool) -> Mapping[str, Any] | None: ...


class FileWatcher:
    def __init__(self, files: FileSyncHost, db: Database, cfg: FilesConfig) -> None:
        self.files = files
        self.db = db  # its loops' health (db.loops)
        self.cfg = cfg
        self._stop = threading.Event()
        self._wake = threading.Event()  # refresh, or stop: leave the current wait or watch
        self._watch_stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False
        self.watching: list[str] = []
        self.events = 0
        self.syncs = 0
        self.restarts = 0
        self.last_event_at: str | None = None
        self.last_error: str | None = None
        self._next_interval = 0.0
        self._settle = False

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None or not self.cfg.enabled:
            return
        self._started = True
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="mnemonist-files", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        self._watch_stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None

    def refresh(self) -> None:
        """The set of roots changed: watch anew."""
        self._settle = True
        self._wake.set()
        self._watch_stop.set()

    def status(self) -> dict[str, Any]:
        running = self._thread is not None and self._thread.is_alive()
        watching = running and self.cfg.watch and self.last_error is None
        reason = None
        if not self.cfg.enabled:
            reason = "files.enabled is false"
        elif not self._started:
            reason = "not started: the daemon runs without its workers"
        elif not running:
            reason = "stopped"
        elif not self.cfg.watch:
            reason = "files.watch is false (the interval and the other triggers still sync)"
        elif self.last_error:
            reason = f"watching failed, retrying: {self.last_error}"
        interval = self.cfg.interval_minutes
        return {
            "running": watching,
            "thread": running,
            "reason": reason,
            "error": self.last_error,
            "folders": len(self.watching) if watching else 0,
            "debounce_ms": self.cfg.watch_debounce_ms,
            "interval_minutes": interval,
            "events": self.events,
            "syncs": self.syncs,
            "restarts": self.restarts,
            "last_event_at": self.last_event_at,
        }

    # -- the thread ----------------------------------------------------------------------------
    def _run(self) -> None:
        """The watch, started again after a backoff when anything in it raises (the
        database away, say): the thread never ends before `stop()`."""
        loops = self.db.loops
        while not self._stop.is_set():
            try:
                self._loop()
            except Exception as exc:
                self.last_error = f"restarting: {type(exc).__name__}: {exc}"
                self._stop.wait(loops.failed("memory-file watcher", exc))
            else:
                return

    def _loop(self) -> None:
        self.files.mark_files_dirty()
        self._sync("startup")
        self._schedule()
        while not self._stop.is_set():
            if self.cfg.watch:
                self._watch()
            else:
                self._wait(self._until_interval())
            if self._stop.is_set():
                break
            if self._interval_due():
                self.files.mark_files_dirty()
                self._sync("interval")
                self._schedule()
            elif self._wake.is_set():
                self._wake.clear()
                self._sync("refresh")

    def _schedule(self) -> None:
        minutes = self.cfg.interval_minutes
        self._next_interval = time.monotonic() + minutes * 60 if minutes > 0 else float("inf")

    def _interval_due(self) -> bool:
        return time.monotonic() >= self._next_interval

    def _until_interval(self) -> float:
        return max(0.0, min(self._next_interval - time.monotonic(), 3600.0))

    def _wait(self, seconds: float) -> None:
        self._wake.wait(seconds)

    def _sync(self, reason: str) -> None:
        loops = self.db.loops
        try:
            if self.files.sync_dirty_files(reason, blocking=True) is not None:
                self.syncs += 1
        except Exception as exc:  # the thread must live on: report and go on
            loops.failed("memory-file sync", exc)
            self.last_error = f"sync failed: {type(exc).__name__}: {exc}"
        else:
            if self.last_error and self.last_error.startswith(("sync failed", "restarting")):
                self.last_error = None  # a watch that fails says so again on its own
            loops.succeeded("memory-file sync")
            loops.succeeded("memory-file watcher")

    def _watch(self) -> None:
        """Watch until stopped, refreshed, the interval is due, or a folder came or went."""
        targets = self.files.watch_targets()
        self.watching = sorted(targets)
        if not targets:
            self._wait(min(self._until_interval(), 5.0))
            return
        self._watch_stop = threading.Event()
        if self._wake.is_set() or self._stop.is_set():
            return
        settle, self._settle = self._settle, False  # after a re-set: files made meanwhile
        try:
            for changes in watchfiles.watch(
                *self.watching, watch_filter=None, debounce=self.cfg.watch_debounce_ms,
                step=STEP_MS, stop_event=self._watch_stop, rust_timeout=WAKE_MS,
                yield_on_timeout=True, recursive=False, raise_interrupt=False,
                ignore_permission_denied=True,
            ):
                self.last_error = None
                if self._stop.is_set():
                    return
                if settle:  # the first answer comes once the new watch is in place
                    settle = False
                    self.files.mark_files_dirty()
                    self._sync("watch")
                if changes and self._take(changes, targets):
                    self.restarts += 1
                    self._settle = True
                    return
                if self._interval_due() or self._wake.is_set():
                    return
        except Exception as exc:  # a folder vanished under the watch, a kernel limit, ...
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("memory file watch failed, retrying: %s", self.last_error)
            self._stop.wait(RETRY_S)
            self.files.mark_files_dirty()
            self._sync("watch")

    def _take(self, changes: set[tuple[watchfiles.Change, str]],
              targets: dict[str, FileRoot]) -> bool:
        """Mark what changed and sync it; True when the folders to watch changed."""
        restart = False
        relevant = False
        for change, path in changes:
            folder = os.path.dirname(path)
            root = targets.get(path) or targets.get(folder)
            if root is None:
                continue
            name = os.path.basename(path)
            if path in targets:  # a watched folder itself was removed or replaced
                self.files.mark_files_dirty(root.path)
                restart = relevant = True
            elif folder == root.path:  # directly in the root: only its memory files count
                if name in ROOT_FILES:
                    self.files.mark_files_dirty(root.path, path)
                    relevant = True
                elif name == MEMORY_DIR:
                    self.files.mark_files_dirty(root.path)
                    restart = relevant = True
            elif not name.startswith("."):  # in a memory folder
                if name.endswith(SUFFIX):
                    self.files.mark_files_dirty(root.path, path)
                    relevant = True
                if os.path.isdir(path) or (change == watchfiles.Change.deleted
                                           and not name.endswith(SUFFIX)):
                    self.files.mark_files_dirty(root.path)
                    restart = relevant = True
        if relevant:
            self.events += 1
            self.last_event_at = utcnow()
            self._sync("watch")
        return restart
