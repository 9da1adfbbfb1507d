"""What the commands that talk to the daemon share: `--url` / `--timeout` accepted after the
sub-command too, the client they build from them, and one-line failures (exit 1)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click

from mnemonist.client import DEFAULT_TIMEOUT_S, Client, DaemonError

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def fail(message: str) -> NoReturn:
    """One line on stderr, exit 1: the command did not do what it was asked to."""
    click.echo(f"mnemonist: {message}", err=True)
    sys.exit(1)


def call(fn: Callable[[], T]) -> T:
    """Run one exchange with the daemon; its failure is one line and exit 1."""
    try:
        return fn()
    except DaemonError as exc:
        fail(str(exc))


def _settings(ctx: click.Context) -> dict[str, Any]:
    root = ctx.find_root()
    if root.obj is None:
        root.obj = {}
    return root.obj


def _store(name: str):
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value is not None:  # given after the sub-command: wins over the group's
            _settings(ctx)[name] = value
    return callback


def daemon_options(fn: F) -> F:
    """`--url` and `--timeout` on a command that talks to the daemon (also accepted before
    the sub-command, and from MNEMONIST_URL / MNEMONIST_TIMEOUT)."""
    fn = click.option("--agent", default=None, expose_value=False, callback=_store("agent"),
                      help="read as this agent: global memories and its own (default"
                           " MNEMONIST_AGENT; none: global memories only)")(fn)
    fn = click.option("--user", default=None, expose_value=False, callback=_store("user"),
                      help="read as this user (default MNEMONIST_USER)")(fn)
    fn = click.option("--timeout", type=click.FloatRange(min=0.01), default=None,
                      expose_value=False, callback=_store("timeout"),
                      help="seconds to wait for the daemon (default MNEMONIST_TIMEOUT or"
                           f" {DEFAULT_TIMEOUT_S:g})")(fn)
    return click.option("--url", default=None, expose_value=False, callback=_store("url"),
                        help="daemon URL (default MNEMONIST_URL or the config's server"
                             " section)")(fn)


def client(ctx: click.Context, timeout: float | None = None) -> Client:
    """The client for this invocation: `--url`/`--timeout` wherever they were given; a
    command's own longer `timeout` unless the user set one."""
    opts = _settings(ctx)
    return Client(opts.get("url"), timeout=opts.get("timeout") or timeout,
                  identity=identity(ctx))


def identity(ctx: click.Context) -> dict[str, str]:
    """Who this invocation reads as: `--agent` / `--user`, else MNEMONIST_AGENT /
    MNEMONIST_USER; none: global memories only."""
    opts = _settings(ctx)
    out = {"agent_id": opts.get("agent") or os.environ.get("MNEMONIST_AGENT"),
           "user_id": opts.get("user") or os.environ.get("MNEMONIST_USER")}
    return {k: v for k, v in out.items() if v}
