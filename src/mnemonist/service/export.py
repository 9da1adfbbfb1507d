"""Export (a bundle of JSON lines, streamed) and backup (SQLite's online backup API).

Both read through their own connection, never the writer: the daemon keeps serving writes
while they run. An export is one read transaction (SQLite: WAL snapshot isolation;
PostgreSQL: REPEATABLE READ): the bundle is the state at its first read however long the
stream takes. A backup copies every page of the SQLite file in one step (`backup(pages=-1)`)
under a read lock, which in WAL mode does not block the writer, so the copy is one consistent
state too, and a writer never makes it restart; on PostgreSQL backup is pg_dump's (a 501).
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mnemonist import __version__
from mnemonist.model.memory import utcnow
from mnemonist.model.requests import Caller
from mnemonist.search.filters import PRIVATE, visibility_clause
from mnemonist.service.base import ServiceBase
from mnemonist.service.errors import BadRequest, Conflict
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


class ExportOps(ServiceBase):
    def export_lines(self, *, project: str | None = None, vectors: bool = False,
                     caller: Caller | None = None, all_scopes: bool = False
                     ) -> Iterator[str]:
        """The bundle, one JSON line at a time (header first); read in pages, never whole.
        It holds the global memories and the caller's own (none: global only), or every
        memory with `all_scopes` (a full, backup-like export)."""
        hidden = None
        if not all_scopes:
            visible, args = visibility_clause(caller)
            hidden = (f"SELECT m.id FROM memories m WHERE {PRIVATE} AND NOT ({visible})", args)
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
        if is_postgres(self.db):
            with self.db.snapshot() as pg:  # type: ignore[attr-defined]
                yield pg
            return
        conn = sqlite3.connect(str(self.db.path), isolation_level=None, check_same_thread=False,
                               timeout=30.0)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA query_only=ON")
            conn.execute("BEGIN")
            conn.execute("SELECT 1 FROM memories LIMIT 1").fetchall()  # the snapshot starts
            yield conn
        finally:
            conn.close()

    # -- backup ----------------------------------------------------------------------------
    def backup(self, path: str, *, force: bool = False) -> dict[str, Any]:
        """Copy the live database into `path` (absolute; an existing file only with `force`).
        The copy is written beside `path` and renamed into place: `path` is never half a file.
        """
        self.require_sqlite(
            "backup (a copy of the SQLite file)",
            "back the database up with pg_dump, one consistent snapshot of every table"
            " (docs/postgres.md), or write a portable bundle with"
            " `mnemonist export --all-scopes --vectors`")
        target = _backup_target(path, force, self.db.path)
        started = time.perf_counter()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        try:
            src = sqlite3.connect(str(self.db.path), timeout=30.0)
            dst = sqlite3.connect(tmp)
            try:
                src.backup(dst)  # pages=-1: all of it in one step, one consistent state
                dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
                pages = dst.execute("PRAGMA page_count").fetchone()[0]
                memories = dst.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
            finally:
                dst.close()
                src.close()
            os.chmod(tmp, 0o600)  # it holds every memory
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return {"path": str(target), "size": target.stat().st_size, "pages": pages,
                "memories": memories,
                "took_ms": round((time.perf_counter() - started) * 1000, 2)}


def _backup_target(path: str, force: bool, database: Path) -> Path:
    if not isinstance(path, str) or not path.strip():
        raise BadRequest("path is required: the absolute path of the backup file", field="path")
    if "\x00" in path:
        raise BadRequest("path contains a NUL character", field="path")
    target = Path(path)
    if not target.is_absolute():
        raise BadRequest(f"path must be absolute, got {path!r}", field="path")
    if target.is_symlink():
        raise BadRequest(f"{path} is a symbolic link: give the real path", field="path")
    if target.is_dir():
        raise BadRequest(f"{path} is a folder: give a file path", field="path")
    real = Path(os.path.realpath(target))
    live = Path(os.path.realpath(database))
    if real in (live, live.with_name(live.name + "-wal"), live.with_name(live.name + "-shm")):
        raise BadRequest(f"{path} is the live database itself", field="path")
    if target.exists() and not force:
        raise Conflict(f"{path} already exists (force to replace it)", code="exists",
                       field="path")
    if not target.parent.is_dir():  # a new backup folder is made, private to this user
        try:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise BadRequest(f"cannot create folder {target.parent}: {exc.strerror or exc}",
                             field="path") from exc
    return target
