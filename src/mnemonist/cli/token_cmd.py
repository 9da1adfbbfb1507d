"""`mnemonist token add | list | revoke | rotate`: named tokens, one per person (or agent).

These commands work on the configured store itself, not through the daemon (as `mnemonist
migrate` does): the SQLite file in the home, or the PostgreSQL database of `storage.url`,
where every daemon of the team sees the same tokens. The daemon may be running or stopped; a
running one checks tokens on every request, so a new or revoked token counts from its next
request on. The store keeps only each token's SHA-256: a token is printed once, when it is
made (or rotated), and never again (docs/security.md#tokens)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from pydantic import ValidationError

from mnemonist.cli.common import emit, fail

_HOME = click.option("--home", envvar="MNEMONIST_HOME", default=None,
                     help="the home whose store holds the tokens (default MNEMONIST_HOME, else"
                          " ~/.agents; its agent.yaml may name a PostgreSQL storage.url)")


@contextmanager
def _store(home: str | None) -> Iterator[Any]:
    """The tokens of the home's store, migrated (a home whose daemon never ran gets its
    schema now): a `TokenRegistry`."""
    from mnemonist.service.storage_admin import AdminRefused, home_store
    from mnemonist.service.tokens import TokenRegistry
    from mnemonist.settings import ConfigError, Paths, home_dir, load_config

    paths = Paths(home_dir(home))
    try:
        config = load_config(paths)
    except ConfigError as exc:
        click.echo(f"mnemonist: configuration error: {exc}", err=True)
        sys.exit(2)
    try:
        with home_store(paths, config) as db:
            yield TokenRegistry(db)
    except AdminRefused as exc:
        fail(str(exc))


def _identity(field: str, value: str | None) -> str | None:
    """A user or agent id, held to the limits of the API's fields."""
    if value is None:
        return None
    from mnemonist.model.requests import Caller

    try:
        return getattr(Caller.model_validate({field: value}), field)
    except ValidationError as exc:
        why = "; ".join(str(e.get("msg", "invalid")) for e in exc.errors())
        option = "--user" if field == "user_id" else "--agent"
        raise click.BadParameter(why, param_hint=option) from exc


def _bound(record: Any) -> str:
    parts = [f"{kind} {value}" for kind, value in (("user", record.user_id),
                                                   ("agent", record.agent_id)) if value]
    if record.owner:
        parts.append("owner")
    return ", ".join(parts) or "bound to no user or agent"


def _shown_once(record: Any, secret: str, what: str) -> None:
    """The token on stdout (alone, for `$(mnemonist token add …)`), what it is on stderr."""
    click.echo(secret)
    click.echo(f"mnemonist: token {record.name!r} {what} ({_bound(record)}); it is shown only"
               " now: hand it to its holder, who sets MNEMONIST_TOKEN to it", err=True)


@click.group()
def token() -> None:
    """Named tokens: one per person or agent, each bound to an identity.

    Once a token exists, every request to the daemon needs one (server.token stays an
    owner's), and a request's identity and the scopes it may read come from its token
    (docs/security.md#tokens). These commands work on the home's store itself (its SQLite
    file, or the PostgreSQL database of storage.url that a team's daemons share), whether
    the daemon runs or not; a running daemon sees a change at its next request."""


@token.command("add")
@click.argument("name")
@click.option("--user", "user_id", default=None,
              help="the user it acts as: it reads global memories and this user's")
@click.option("--agent", "agent_id", default=None, help="the agent it acts as")
@click.option("--owner", is_flag=True,
              help="an owner's token: acts as anyone it names and reads every scope")
@_HOME
def token_add(name: str, user_id: str | None, agent_id: str | None, owner: bool,
              home: str | None) -> None:
    """Make a token NAME and print it once; only its hash is stored.

    The token is printed alone on stdout (what it is goes to stderr), so
    `export MNEMONIST_TOKEN=$(mnemonist token add NAME --user U)` keeps it. A request with
    it reads as its user / agent (global memories and theirs) and may claim no one else (a
    403); with --owner it may act as anyone and read every scope. NAME: 1-64 letters, digits,
    '.', '_' or '-'; history records its changes as `token:NAME via DAEMON`."""
    from mnemonist.service.tokens import TokenError, check_name

    user_id, agent_id = _identity("user_id", user_id), _identity("agent_id", agent_id)
    try:
        check_name(name)
    except TokenError as exc:
        fail(str(exc))
    with _store(home) as tokens:
        try:
            record, secret = tokens.add(name, user_id=user_id, agent_id=agent_id, owner=owner)
        except TokenError as exc:
            fail(str(exc))
        except Exception as exc:  # a daemon adding the same name at once: the index decides
            fail(f"token {name!r} was not made: {exc}")
    _shown_once(record, secret, "made")


@token.command("list")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
@_HOME
def token_list(as_json: bool, home: str | None) -> None:
    """Every named token: its identity, owner or not, made and revoked when (never the
    token)."""
    with _store(home) as tokens:
        records = tokens.all()
    if as_json:
        return emit([r.public() for r in records])
    if not records:
        click.echo("no named tokens: the daemon takes server.token alone (or no token)")
        return
    rows = [("NAME", "USER", "AGENT", "OWNER", "MADE", "REVOKED")]
    rows += [(r.name, r.user_id or "-", r.agent_id or "-", "yes" if r.owner else "no",
              r.created_at, r.revoked_at or "-") for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                   .rstrip())


@token.command("revoke")
@click.argument("name")
@_HOME
def token_revoke(name: str, home: str | None) -> None:
    """Revoke the token NAME: refused (401) from the next request on, by every daemon."""
    from mnemonist.service.tokens import TokenError

    with _store(home) as tokens:
        try:
            record = tokens.revoke(name)
        except TokenError as exc:
            fail(str(exc))
    click.echo(f"revoked token {record.name!r} ({_bound(record)}) at {record.revoked_at}")


@token.command("rotate")
@click.argument("name")
@_HOME
def token_rotate(name: str, home: str | None) -> None:
    """Give the token NAME a new secret and print it once; the old one is refused."""
    from mnemonist.service.tokens import TokenError

    with _store(home) as tokens:
        try:
            record, secret = tokens.rotate(name)
        except TokenError as exc:
            fail(str(exc))
    _shown_once(record, secret, "rotated")
