"""Workspace memory files: the known project roots, the sync triggers, and what the faces see.

Roots are the configured `files.roots` plus the git root (see `project_of`) of every working
folder a hook reported that looks like a project in the user's home (`session_root_refusal`:
not `/`, the home itself or the temporary folder), remembered in `file_roots` once seen.
Syncs run one at a time (a lock); every trigger goes through here:

- `startup` and `interval` (the file watcher's thread): every root;
- `watch`: the roots (and files) the watcher saw change;
- `session-start`: the session's root, if no other sync is running (`note_root`);
- `search`: before a recall, the roots known to have changed, if no other sync is running;
  without a running watcher, the indexed files are first checked for a new size or time;
- `manual`: `POST /api/files/sync`, `mnemonist sync [--force]`, every root or one.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Protocol, cast

from mnemonist.ingest.memory_files import (
    FileRoot,
    discover,
    memory_folders,
    session_root_refusal,
    stat_of,
)
from mnemonist.model.answers_files import (
    FileRootView,
    FilesAnswer,
    FilesStatus,
    FileSyncAnswer,
    FileView,
)
from mnemonist.model.memory import utcnow
from mnemonist.service.base import ServiceCore
from mnemonist.service.errors import BadRequest, Conflict, NotFound
from mnemonist.service.file_sync import FileSyncOps, SyncCounts
from mnemonist.sessions.transcript import project_of
from mnemonist.store import files as store

log = logging.getLogger(__name__)

STAT_CHECK_S = 2.0  # without a watcher, recall looks at file times at most this often


class Watcher(Protocol):
    def status(self) -> dict[str, Any]: ...

    def refresh(self) -> None: ...


class Files(FileSyncOps):
    """Workspace memory files (see the module): roots, sync triggers, what the faces see."""

    def __init__(self, core: ServiceCore) -> None:
        super().__init__(core)
        self._files_lock = threading.Lock()  # one sync at a time
        self._dirty_lock = threading.Lock()
        self._dirty_all = True  # nothing synced yet in this process
        self._dirty: dict[str, set[str]] = {}  # root -> paths seen changing (may be empty)
        self._last_stat_check = 0.0
        self._last_sync: FileSyncAnswer | None = None
        self._file_watcher: Watcher | None = None

    def attach_file_watcher(self, watcher: Watcher | None) -> None:
        self._file_watcher = watcher

    # -- roots -------------------------------------------------------------------------------
    def file_roots(self) -> list[FileRoot]:
        """Every known root that exists now, each real folder once (configured ones first)."""
        roots: dict[str, FileRoot] = {}
        for configured in self.core.config.files.roots:
            path = os.path.realpath(os.path.expanduser(configured))
            if os.path.isdir(path):
                label = os.path.basename(configured.rstrip("/\\")) or path
                roots.setdefault(path, FileRoot(path, label, "config"))
        conn = self.core.db.reader()
        learnt = dict(store.learnt_roots(conn))
        for cwd in store.session_cwds(conn):
            try:
                name, _, root = project_of(cwd)
                if root is not None:
                    learnt.setdefault(os.path.realpath(root), name)
            except (OSError, ValueError):  # a working folder no path can be made of
                continue
        for path, name in learnt.items():  # checked again: a home may hold older roots
            if os.path.isdir(path) and session_root_refusal(path) is None:
                roots.setdefault(path, FileRoot(path, name or os.path.basename(path), "session"))
        return list(roots.values())

    def watch_targets(self) -> dict[str, FileRoot]:
        """Folder to watch (not recursively) -> its root: each root, and the folders under
        its `memory/`."""
        out: dict[str, FileRoot] = {}
        for root in self.file_roots():
            out.setdefault(root.path, root)
            for folder in memory_folders(root.path):
                out.setdefault(folder, root)
        return out

    def note_root(self, cwd: str | None) -> FileSyncAnswer | None:
        """A session started in `cwd`: remember its project root and, when
        `files.sync_on_session_start`, sync that root now (unless a sync is running; then it
        is marked changed and synced next). Never raises: a session start must not fail."""
        cfg = self.core.config.files
        if not cfg.enabled or not cwd:
            return None
        try:
            name, _, root = project_of(cwd)
            if root is None or not os.path.isdir(root):
                return None
            refused = session_root_refusal(root)
            if refused is not None:
                log.info("%s is not indexed for memory files: %s", root, refused)
                return None
            real = os.path.realpath(root)
            if not store.has_root(self.core.db.reader(), real):
                with self.core.db.write_tx() as conn:
                    store.add_root(conn, real, name)
                self.mark_files_dirty(real)
                if self._file_watcher is not None:
                    self._file_watcher.refresh()
            if not cfg.sync_on_session_start:
                return None
            target = next((r for r in self.file_roots() if r.path == real), None)
            if target is None:
                return None
            return self._run_sync([target], reason="session-start", blocking=False,
                                  whole=False)
        except Exception:  # the hook answers whatever happened here
            log.exception("memory files of %s not synced at session start", cwd)
            return None

    # -- dirty marks ---------------------------------------------------------------------------
    def mark_files_dirty(self, root: str | None = None, path: str | None = None) -> None:
        """Something changed under `root` (at `path`, when known); None: everything."""
        with self._dirty_lock:
            if root is None:
                self._dirty_all = True
                return
            paths = self._dirty.setdefault(root, set())
            if path:
                paths.add(path)

    def files_dirty(self) -> bool:
        with self._dirty_lock:
            return self._dirty_all or bool(self._dirty)

    def _take_dirty(self) -> tuple[bool, dict[str, set[str]]]:
        with self._dirty_lock:
            everything, marks = self._dirty_all, self._dirty
            self._dirty_all, self._dirty = False, {}
        return everything, marks

    def _stat_check(self) -> None:
        """Without a watcher: mark the roots of indexed files whose size or time changed."""
        now = time.monotonic()
        if now - self._last_stat_check < STAT_CHECK_S:
            return
        self._last_stat_check = now
        for path, row in store.all_files(self.core.db.reader()).items():
            st = stat_of(path)
            if st is None or (st.st_mtime_ns, st.st_size) != (row.mtime_ns, row.size):
                self.mark_files_dirty(row.root, path)

    # -- syncs ---------------------------------------------------------------------------------
    def sync_files(self, force: bool = False, root: str | None = None,
                   reason: str = "manual") -> FileSyncAnswer:
        """Sync every known root, or the one `root` names; waits for a running sync."""
        if not self.core.config.files.enabled:
            raise Conflict("memory files are off (files.enabled: false)", code="files_disabled")
        roots = self.file_roots()
        if root is not None:
            expanded = os.path.expanduser(root)
            if "\x00" in expanded or not os.path.isabs(expanded):
                raise BadRequest("root must be an absolute folder path", field="root")
            wanted = os.path.realpath(expanded)
            roots = [r for r in roots if r.path == wanted]
            if not roots:
                known = ", ".join(r.path for r in self.file_roots()) or "none yet"
                raise NotFound(f"{root} is not a known project root (known: {known})",
                               code="unknown_root", field="root")
        out = self._run_sync(roots, reason=reason, blocking=True, whole=root is None,
                             force=force)
        assert out is not None
        return out

    def sync_dirty_files(self, reason: str, *, blocking: bool) -> FileSyncAnswer | None:
        """Sync what was marked changed; None when nothing was, or (not blocking) when
        another sync is running."""
        if not self.core.config.files.enabled or not self.files_dirty():
            return None
        if not self._files_lock.acquire(blocking=blocking):
            return None
        try:
            everything, marks = self._take_dirty()
            if not everything and not marks:
                return None
            roots = self.file_roots()
            if not everything:
                roots = [r for r in roots if r.path in marks]
            checks = set().union(*marks.values()) if marks else set()
            return self._sync_locked(roots, reason, whole=everything, force=False,
                                     checks=checks)
        finally:
            self._files_lock.release()

    def _run_sync(self, roots: list[FileRoot], *, reason: str, blocking: bool, whole: bool,
                  force: bool = False) -> FileSyncAnswer | None:
        if not self._files_lock.acquire(blocking=blocking):
            for r in roots:
                self.mark_files_dirty(r.path)
            return None
        try:
            if whole:
                self._take_dirty()
            else:
                with self._dirty_lock:
                    for r in roots:
                        self._dirty.pop(r.path, None)
            return self._sync_locked(roots, reason, whole=whole, force=force, checks=set())
        finally:
            self._files_lock.release()

    def _sync_locked(self, roots: list[FileRoot], reason: str, *, whole: bool, force: bool,
                     checks: set[str]) -> FileSyncAnswer:
        """Discover, sync each file, and take out indexed files no longer found (in the
        roots synced; with `whole`, anywhere). The caller holds the sync lock."""
        started = time.perf_counter()
        counts = SyncCounts()
        self._adopt_roots(roots)
        found: dict[str, FileRoot] = {}
        for r in roots:
            for path in discover(r.path):
                found.setdefault(path, r)
        indexed = store.all_files(self.core.db.reader())
        scope = {r.path for r in roots}
        for path, r in found.items():
            try:
                self._sync_file(path, r, counts, check=path in checks, force=force)
            except Exception as exc:  # one bad file must not stop the others
                log.exception("memory file %s not synced", path)
                counts.errors.append(f"{path}: {type(exc).__name__}: {exc}")
        for path, row in indexed.items():
            if path not in found and (whole or row.root in scope):
                gone = stat_of(path) is None
                self._remove_file(path, counts,
                                  "file deleted" if gone else "no longer a memory file")
        out = FileSyncAnswer(
            reason=reason, force=force, roots=len(roots),
            files_scanned=counts.files_scanned, files_changed=counts.files_changed,
            files_unchanged=counts.files_unchanged, files_removed=counts.files_removed,
            files_skipped=counts.files_skipped, chunks_written=counts.chunks_written,
            chunks_kept=counts.chunks_kept, chunks_moved=counts.chunks_moved,
            chunks_deleted=counts.chunks_deleted, rows_written=counts.rows_written,
            errors=list(counts.errors),
            took_ms=round((time.perf_counter() - started) * 1000, 2), at=utcnow())
        self._last_sync = out
        if counts.files_changed or counts.files_removed:
            log.info("memory files synced (%s): %s", reason, out)
        return out

    def _adopt_roots(self, roots: list[FileRoot]) -> None:
        """Remember the roots found through session working folders (hooks' session state
        is pruned after a while; the roots should outlive it)."""
        conn = self.core.db.reader()
        new = [r for r in roots if r.origin == "session" and not store.has_root(conn, r.path)]
        if new:
            with self.core.db.write_tx() as w:
                for r in new:
                    store.add_root(w, r.path, r.project)

    # -- triggers from the other parts ------------------------------------------------------
    def sync_for_search(self) -> None:
        """Before a recall (`Reads.recall`): sync the roots known to have changed, unless
        another sync is running. Never raises: recall answers even when files cannot sync."""
        cfg = self.core.config.files
        if cfg.enabled and cfg.sync_on_search:
            try:
                if not self._watcher_running():
                    self._stat_check()
                self.sync_dirty_files("search", blocking=False)
            except Exception:
                log.exception("memory files not synced before a search")

    def _watcher_running(self) -> bool:
        w = self._file_watcher
        return w is not None and bool(w.status().get("running"))

    # -- what the faces show -------------------------------------------------------------------
    def list_files(self) -> FilesAnswer:
        conn = self.core.db.reader()
        files = [cast(FileView, row.__dict__) for row in store.all_files(conn).values()]
        totals = store.totals(conn)
        return {"files": files, "total": len(files), "chunks": totals["chunks"],
                "skipped": totals["skipped"], "roots": self._roots_out()}

    def _roots_out(self) -> list[FileRootView]:
        return [FileRootView(path=r.path, project=r.project, origin=r.origin)
                for r in self.file_roots()]

    def files_status(self) -> FilesStatus:
        cfg = self.core.config.files
        conn = self.core.db.reader()
        watcher = (self._file_watcher.status() if self._file_watcher is not None
                   else {"running": False, "reason": "no watcher in this process"})
        totals = store.totals(conn)
        return {
            "enabled": cfg.enabled,
            "files": totals["files"], "chunks": totals["chunks"], "skipped": totals["skipped"],
            "roots": self._roots_out() if cfg.enabled else [],
            "last_sync": self._last_sync,
            "syncing": self._files_lock.locked(),
            "dirty": self.files_dirty(),
            "watcher": watcher,
        }

    def watcher_failed(self) -> bool:
        """The watcher stopped on an error (`file_watcher_failed` in /api/health)."""
        cfg = self.core.config.files
        watcher = self._file_watcher
        return bool(cfg.enabled and cfg.watch and watcher is not None
                    and watcher.status().get("error"))
