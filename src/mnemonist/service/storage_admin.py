"""What the CLI's storage commands do without a daemon: open a home's store (migrated), copy a
home's SQLite memory into PostgreSQL (`mnemonist migrate`), run a PostgreSQL on this machine
(`mnemonist postgres`, store/postgres/local_server.py) and check any server as a daemon does
at start. The faces import no store module: this is their door to these operations.

Every refusal is an `AdminRefused` whose message is the one line the CLI prints: what is wrong
and, where there is one, what to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mnemonist.model.config import Config
from mnemonist.service.errors import ServiceError
from mnemonist.settings import Paths
from mnemonist.store.backend import StorageNotReady, open_database
from mnemonist.store.migrations import SchemaTooNew, migrate
from mnemonist.store.postgres.local_server import LocalServer, LocalServerError, client_bin

__all__ = [
    "AdminRefused",
    "LocalServer",
    "LocalServerError",
    "check_server",
    "client_bin",
    "copy_home_to_postgres",
    "home_store",
]


class AdminRefused(ServiceError):
    """A storage command that cannot be done; nothing was written."""

    status = 409
    code = "refused"


@contextmanager
def home_store(paths: Paths, config: Config) -> Iterator[Any]:
    """The store of the home at `paths` (SQLite, or `storage.url`'s PostgreSQL), migrated (a
    home whose daemon never ran gets its schema now), closed afterwards."""
    try:
        db = open_database(paths.database, config)
    except Exception as exc:
        raise AdminRefused(f"cannot open the store of {paths.home}: {exc}") from exc
    try:
        try:
            migrate(db)
        except SchemaTooNew as exc:
            raise AdminRefused(str(exc)) from exc
        yield db
    finally:
        db.close()


def copy_home_to_postgres(paths: Paths, url: str) -> dict[str, int]:
    """Copy every memory of the home's SQLite file, its history, vectors, jobs and the rest
    into the empty PostgreSQL database at `url`; the counts copied, by table. The home's lock
    is held throughout (its daemon must be stopped) and the SQLite file is only read."""
    from mnemonist.store.db import Database
    from mnemonist.store.home_lock import AlreadyRunning, HomeLock
    from mnemonist.store.postgres.copy import CopyRefused, copy_database, refuse_used
    from mnemonist.store.postgres.database import PostgresDatabase
    from mnemonist.store.postgres.preflight import where

    if not paths.database.exists():
        raise AdminRefused(f"no SQLite memory at {paths.database}")
    try:
        lock = HomeLock(paths.memory_dir / "daemon.lock").acquire()
    except AlreadyRunning:
        raise AdminRefused("the daemon of this home is running: stop it first (nothing may"
                           " write during the copy)") from None
    try:
        source = Database(paths.database)
        try:
            migrate(source)
            try:
                target = PostgresDatabase(url)
            except StorageNotReady as exc:
                raise AdminRefused(str(exc)) from exc
            except Exception as exc:
                raise AdminRefused(f"cannot open PostgreSQL at {where(url)}:"
                                   f" {' '.join(str(exc).split())}") from exc
            try:
                # before migrating it: a database in use is refused with nothing changed
                with target.write_tx() as conn:
                    refuse_used(conn.raw)
                migrate(target)
                return copy_database(source.reader(), target)
            except (CopyRefused, SchemaTooNew) as exc:
                raise AdminRefused(str(exc)) from exc
            finally:
                target.close()
        finally:
            source.close()
    finally:
        lock.release()


def check_server(url: str) -> dict[str, Any]:
    """What a daemon checks of the PostgreSQL at `url` before it starts (version, pgvector,
    the role's privileges), as a dict; `AdminRefused` names the first thing missing."""
    from mnemonist.store.postgres.preflight import check

    try:
        return check(url).as_dict()
    except StorageNotReady as exc:
        raise AdminRefused(str(exc)) from exc
