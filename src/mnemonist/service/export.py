"""Export (a bundle of JSON lines, streamed) and backup (SQLite's online backup API).

Both read through their own connection, never the writer: the daemon keeps serving writes
while they run. An export is one read transaction (SQLite: WAL snapshot isolation;
PostgreSQL: REPEATABLE READ): the bundle is the state at its first read however long the
stream takes. A backup copies every page of the SQLite file in one step (`backup(pages=-1)`)
under a read lock, which in WAL mode does not block the writer, so the copy is one consistent
state too, and a writer never makes it restart; on PostgreSQL backup is pg_dump's (a 501).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemonist import __version__
from mnemonist.guards.private_files import private_folder
from mnemonist.model.answers_admin import BackupAnswer
from mnemonist.model.memory import utcnow
from mnemonist.model.requests import Caller
from mnemonist.search.filters import visibility_clause
from mnemonist.service.errors import BadRequest, Conflict
from mnemonist.service.part import Part
from mnemonist.store import backup as backup_store
from mnemonist.store import bundle
from mnemonist.store.backend import is_postgres
from mnemonist.store.migrations import MIGRATIONS

BUNDLE_KIND = "mnemonist-bundle"
BUNDLE_VERSION = 1


def schema_version() -> int:
    """The newest migration this code knows: the schema a bundle it writes follows."""
    return max(m.version for m in MIGRATIONS)


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


class ExportOps(Part):
    def export_lines(self, *, project: str | None = None, vectors: bool = False,
                     caller: Caller | None = None, all_scopes: bool = False
                     ) -> Iterator[str]:
        """The bundle, one JSON line at a time (header first); read in pages, never whole.
        It holds the global memories and the caller's own (none: global only), or every
        memory with `all_scopes` (a full, backup-like export)."""
        hidden: bundle.Hidden = None
        if not all_scopes:
            visible, args = visibility_clause(caller)
            hidden = bundle.hidden_from(visible, args)
        with self._snapshot() as conn:
            yield _line({"kind": BUNDLE_KIND, "version": BUNDLE_VERSION,
                         "schema": schema_version(), "exported_at": utcnow(),
                         "project": project, "vectors": vectors, "mnemonist": __version__,
                         "scopes": "all" if all_scopes else (
                             (caller or Caller()).identity().model_dump(exclude_none=True))})
            for spec in bundle.TABLES:
                if spec.kind == "embedding" and not vectors:
                    continue
                for record in bundle.read_table(conn, spec, project, hidden):
                    yield _line(record)
            for record in bundle.read_sessions(conn, project):
                yield _line(record)

    @contextmanager
    def _snapshot(self) -> Iterator[Any]:
        """A connection of its own inside one read-only transaction that has already read:
        every later statement sees the state of that first read (SQLite: WAL snapshot;
        PostgreSQL: REPEATABLE READ)."""
        if is_postgres(self.core.db):
            with self.core.db.snapshot() as pg:  # type: ignore[attr-defined]
                yield pg
            return
        with backup_store.snapshot(str(self.core.db.path)) as conn:
            yield conn

    # -- backup ----------------------------------------------------------------------------
    def backups_folder(self) -> Path:
        """`<home>/backups`: the one folder the daemon writes backups into."""
        return Path(self.core.db.path).parent.parent / BACKUPS

    def _require_backup(self) -> None:
        self.core.require_sqlite(
            "backup (a copy of the SQLite file)",
            "back the database up with pg_dump, one consistent snapshot of every table"
            " (docs/postgres.md), or write a portable bundle with"
            " `mnemonist export --all-scopes --vectors`")

    def backup(self, name: str | None = None, *, force: bool = False) -> BackupAnswer:
        """Copy the live database into `<home>/backups/<name>` (default
        `memories-<UTC time>.db`). `name` is a file name, never a path: a request body does
        not choose which file the daemon writes. An existing file is replaced only with
        `force`, and only when it is itself a mnemonist backup. The copy is written beside the
        target and renamed into place: the target is never half a file."""
        self._require_backup()
        folder = private_folder(self.backups_folder())
        target = _backup_target(name or default_backup_name(), force, folder)
        return self._copy_database(target)

    def backup_for_download(self) -> tuple[Path, BackupAnswer]:
        """A backup in a temporary file of `<home>/backups/` for the caller to send and then
        remove (`mnemonist backup PATH` writes PATH itself from it)."""
        self._require_backup()
        folder = private_folder(self.backups_folder())
        _drop_stale_downloads(folder)
        fd, tmp = tempfile.mkstemp(prefix=DOWNLOAD_PREFIX, suffix=".db", dir=folder)
        os.close(fd)
        try:
            return Path(tmp), self._copy_database(Path(tmp))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _copy_database(self, target: Path) -> BackupAnswer:
        started = time.perf_counter()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        try:
            pages, memories = backup_store.copy_file(str(self.core.db.path), tmp)
            os.chmod(tmp, 0o600)  # it holds every memory
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return {"path": str(target), "name": target.name, "size": target.stat().st_size,
                "pages": pages, "memories": memories,
                "took_ms": round((time.perf_counter() - started) * 1000, 2)}


BACKUPS = "backups"
#: a backup's name: a file name (no folder, no leading dot), never a path
BACKUP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
DOWNLOAD_PREFIX = ".download-"
STALE_DOWNLOAD_S = 3600.0


def default_backup_name() -> str:
    return "memories-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ") + ".db"


def is_mnemonist_backup(path: Path) -> bool:
    """A regular SQLite file holding mnemonist's tables: a file `force` may replace."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        with path.open("rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                return False
        names = backup_store.table_names(str(path))
    except (OSError, sqlite3.Error):
        return False
    return {"memories", "memory_history", "schema_migrations"} <= names


def _backup_target(name: str, force: bool, folder: Path) -> Path:
    if not BACKUP_NAME.fullmatch(name) or name.endswith(".tmp"):
        raise BadRequest(
            f"name must be a file name (letters, digits, '.', '_', '-'; first a letter or a"
            f" digit; at most 200), not a path: got {name!r}. Backups are written into"
            f" {folder}; `mnemonist backup PATH` writes a copy anywhere you ask",
            code="invalid_name", field="name")
    target = folder / name
    if target.is_symlink():
        raise BadRequest(f"{target} is a symbolic link: it is never replaced", field="name")
    if target.is_dir():
        raise BadRequest(f"{target} is a folder", field="name")
    if target.exists():
        if not force:
            raise Conflict(f"{target} already exists (force to replace a previous backup)",
                           code="exists", field="name")
        if not is_mnemonist_backup(target):
            raise Conflict(f"{target} is not a mnemonist backup: it is never replaced",
                           code="not_a_backup", field="name")
    return target


def _drop_stale_downloads(folder: Path) -> None:
    """Downloads a crash left behind (the copy is removed once sent)."""
    now = time.time()
    for leftover in folder.glob(DOWNLOAD_PREFIX + "*"):
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > STALE_DOWNLOAD_S:
                leftover.unlink()
