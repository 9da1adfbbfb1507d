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
    from mnemonist.service.storage_admin import AdminRefused, copy_home_to_postgres
    from mnemonist.settings import Paths, home_dir

    try:
        counts = copy_home_to_postgres(Paths(home_dir(home)), url)
    except AdminRefused as exc:
        fail(str(exc))
    emit({"copied": counts, "memories": counts.get("memories", 0),
          "next": "set storage.url in agent.yaml to this URL and start the daemon"})
