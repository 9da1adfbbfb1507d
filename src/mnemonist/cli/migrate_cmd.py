"""`mnemonist migrate --to postgresql://…`: copy this home's SQLite memory into PostgreSQL.

Runs on the home itself, not through the daemon: the daemon must be stopped (the home's lock
is taken for the copy), so that nothing is written while it is read."""

from __future__ import annotations

import click

from mnemonist.cli.common import emit, fail


@click.command("migrate")
@click.option("--to", "url", required=True, metavar="URL",
              help="an empty PostgreSQL database with pgvector: postgresql://user@host/db")
@click.option("--home", envvar="MNEMONIST_HOME", default=None,
              help="the home to copy (default: MNEMONIST_HOME or ~/.agents)")
def migrate_cmd(url: str, home: str | None) -> None:
    """Copy every memory, its history, vectors, jobs and the rest into PostgreSQL (then set
    storage.url to use it). The SQLite file is only read."""
    if not url.startswith(("postgresql://", "postgres://")):
        fail("--to must be a postgresql:// URL")
    from mnemonist.settings import Paths, home_dir
    from mnemonist.store.backend import StorageNotReady
    from mnemonist.store.db import Database
    from mnemonist.store.home_lock import AlreadyRunning, HomeLock
    from mnemonist.store.migrations import SchemaTooNew, migrate
    from mnemonist.store.postgres.copy import CopyRefused, copy_database, refuse_used
    from mnemonist.store.postgres.database import PostgresDatabase
    from mnemonist.store.postgres.preflight import where

    paths = Paths(home_dir(home))
    if not paths.database.exists():
        fail(f"no SQLite memory at {paths.database}")
    try:
        lock = HomeLock(paths.memory_dir / "daemon.lock").acquire()
    except AlreadyRunning:
        fail("the daemon of this home is running: stop it first (nothing may write during"
             " the copy)")
    try:
        source = Database(paths.database)
        try:
            migrate(source)
            try:
                target = PostgresDatabase(url)
            except StorageNotReady as exc:
                fail(str(exc))
            except Exception as exc:
                fail(f"cannot open PostgreSQL at {where(url)}: {' '.join(str(exc).split())}")
            try:
                # before migrating it: a database in use is refused with nothing changed
                with target.write_tx() as conn:
                    refuse_used(conn.raw)
                migrate(target)
                counts = copy_database(source.reader(), target)
            except (CopyRefused, SchemaTooNew) as exc:
                fail(str(exc))
            finally:
                target.close()
        finally:
            source.close()
    finally:
        lock.release()
    emit({"copied": counts, "memories": counts.get("memories", 0),
          "next": "set storage.url in agent.yaml to this URL and start the daemon"})
