"""The `mnemonist` command: `serve` runs the daemon; the rest talk to it over HTTP."""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

import click

from mnemonist import __version__
from mnemonist.cli.bench import bench
from mnemonist.cli.common import call, client, daemon_options, emit
from mnemonist.cli.connect_cmd import COMMANDS as CONNECT_COMMANDS
from mnemonist.cli.duplicates_cmd import consolidate, duplicates, restore
from mnemonist.cli.export_cmd import COMMANDS as CARRY_COMMANDS
from mnemonist.cli.files_cmd import files, sync
from mnemonist.cli.gates_cmd import gates
from mnemonist.cli.hooks_cmd import COMMANDS as HOOK_COMMANDS
from mnemonist.cli.mcp_cmd import mcp
from mnemonist.cli.memory_cmd import COMMANDS as MEMORY_COMMANDS
from mnemonist.cli.migrate_cmd import migrate_cmd
from mnemonist.cli.postgres_cmd import postgres
from mnemonist.cli.predictor_cmd import feedback, predictor
from mnemonist.cli.principles_cmd import principles
from mnemonist.cli.sessions_cmd import sessions
from mnemonist.cli.token_cmd import token
from mnemonist.client import DEFAULT_TIMEOUT_S, DaemonError


@click.group()
@click.version_option(__version__, "--version", "-V", prog_name="mnemonist",
                      message="%(prog)s %(version)s")
@click.option("--url", envvar="MNEMONIST_URL", default=None,
              help="daemon URL (default MNEMONIST_URL, else the config's server section:"
                   " http://127.0.0.1:3850)")
@click.option("--timeout", type=click.FloatRange(min=0.01), default=None,
              help=f"seconds to wait for the daemon (default MNEMONIST_TIMEOUT or"
                   f" {DEFAULT_TIMEOUT_S:g})")
@click.option("--agent", default=None,
              help="read as this agent: global memories and its own (default MNEMONIST_AGENT)")
@click.option("--user", default=None, help="read as this user (default MNEMONIST_USER)")
@click.pass_context
def cli(ctx: click.Context, url: str | None, timeout: float | None, agent: str | None,
        user: str | None) -> None:
    """mnemonist: long-term memory for AI agents.

    `mnemonist serve` runs the daemon; the other commands talk to it over HTTP. --url,
    --timeout, --agent and --user may be given before or after the command."""
    ctx.obj = {"url": url, "timeout": timeout, "agent": agent, "user": user}


@cli.command()
@click.option("--host", default=None, help="bind address (default 127.0.0.1)")
@click.option("--port", type=int, default=None, help="port (default 3850)")
@click.option("--home", envvar="MNEMONIST_HOME", default=None, help="home folder (~/.agents)")
@click.option("-v", "--verbose", is_flag=True, help="log what the daemon does (INFO) to stderr")
def serve(host: str | None, port: int | None, home: str | None, verbose: bool) -> None:
    """Start the daemon (prints where it listens once it answers)."""
    from mnemonist.daemon import ListenError
    from mnemonist.daemon import serve as run
    from mnemonist.service.errors import StorageNotReady
    from mnemonist.settings import ConfigError

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        run(home, host, port, on_listening=lambda line: click.echo(line))
    except ListenError as exc:
        click.echo(f"mnemonist: {exc}", err=True)
        sys.exit(1)
    except ConfigError as exc:
        click.echo(f"mnemonist: configuration error: {exc}", err=True)
        sys.exit(2)
    except StorageNotReady as exc:  # the PostgreSQL of storage.url lacks something
        click.echo(f"mnemonist: {exc}", err=True)
        sys.exit(1)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Counts, embedding coverage, queue and degraded components."""
    data = call(lambda: _status_or_health(client(ctx)))
    if as_json:
        return emit(data)
    click.echo(f"mnemonist {data['version']}  database {data['database']}")
    if data.get("storage") == "unavailable":  # nothing to count without the database
        return _degraded_lines(data)
    mem, emb = data["memories"], data.get("embeddings", {})
    private = (f" ({mem['private']} of them private to an agent or user: `list` shows those"
               " with --agent / --user)" if mem.get("private") else "")
    click.echo(f"memories: {mem['live']} live{private}, {mem['pinned']} pinned,"
               f" {mem.get('superseded', 0)} superseded (kept as history),"
               f" {mem['deleted']} deleted")
    if emb:
        click.echo(f"embeddings: {emb['embedded']}/{emb['live']} ({emb['coverage']:.0%})"
                   f"  model {data['embedding_provider'].get('model')}")
    queue = {t: c.get("pending", 0) + c.get("leased", 0) for t, c in data["jobs"].items()}
    parts = ", ".join(f"{t} {n}" for t, n in sorted(queue.items()) if n)
    click.echo(f"queue: {data['queue_depth']} pending jobs" + (f" ({parts})" if parts else ""))
    for line in data.get("explanation", []):
        click.echo(line)
    files = data.get("files") or {}
    if files.get("enabled"):
        watcher = files["watcher"]
        state = "watching" if watcher["running"] else f"not watching ({watcher['reason']})"
        click.echo(f"memory files: {files['files']} files, {files['chunks']} chunks in"
                   f" {len(files['roots'])} roots; {state}")
    _degraded_lines(data)


def _status_or_health(daemon: Any) -> dict:
    """`/api/status`; while the database does not answer (a 503 `storage_unavailable`, even
    to the token check) what `/health` can say without it."""
    try:
        return daemon.get("/api/status")
    except DaemonError as exc:
        if not (isinstance(exc.body, dict) and exc.body.get("error") == "storage_unavailable"):
            raise
    data = daemon.get("/health")
    data.update(storage="unavailable", database="unavailable")
    return data


def _degraded_lines(data: dict) -> None:
    problems = data.get("problems") or data["degraded"]
    click.echo("degraded: " + ("nothing" if not problems else "\n  " + "\n  ".join(problems)))
    for name, streak in (data.get("retrying") or {}).items():
        click.echo(f"  retrying {name} for {streak['since_s']:.0f} s ({streak['attempts']}"
                   f" attempts): {streak['last_error']}")




@cli.group()
def config() -> None:
    """Configuration."""


@config.command("show")
@click.option("--home", envvar="MNEMONIST_HOME", default=None,
              help="home folder (default MNEMONIST_HOME, else ~/.agents)")
def config_show(home: str | None) -> None:
    """Print the effective configuration (agent.yaml over the defaults)."""
    from mnemonist.settings import ConfigError, Paths, config_as_yaml, home_dir, load_config

    paths = Paths(home_dir(home))
    try:
        cfg = load_config(paths)
    except ConfigError as exc:
        click.echo(f"mnemonist: configuration error: {exc}", err=True)
        sys.exit(2)
    click.echo(f"# {paths.config_file}{'' if paths.config_file.exists() else ' (not found)'}")
    click.echo(config_as_yaml(cfg), nl=False)


@config.command("reference")
def config_reference() -> None:
    """Print every key with its default, allowed values and meaning (markdown)."""
    from mnemonist.model.config_reference import reference_table

    click.echo(reference_table())


def main() -> None:  # pragma: no cover
    cli()


cli.add_command(bench)
for _command in MEMORY_COMMANDS:
    cli.add_command(_command)
for _command in (*HOOK_COMMANDS, *CONNECT_COMMANDS):
    cli.add_command(_command)
cli.add_command(mcp)
cli.add_command(sessions)
cli.add_command(duplicates)
cli.add_command(principles)
cli.add_command(consolidate)
cli.add_command(feedback)
cli.add_command(predictor)
cli.add_command(restore)
cli.add_command(gates)
cli.add_command(sync)
cli.add_command(files)
cli.add_command(migrate_cmd)
cli.add_command(postgres)
cli.add_command(token)
for _command in CARRY_COMMANDS:  # export, import, backup
    cli.add_command(_command)

#: what `mnemonist --help` (and a group's --help) lists for a command whose first sentence is
#: longer than the listing shows (click cuts it at about 45 characters, with "...")
SHORT_HELP = {
    ("config", "show"): "Print the effective configuration.",
    ("config", "reference"): "Print every configuration key (markdown).",
    ("bench",): "Benchmarks (each runs its own daemon in-process).",
    ("bench", "scale"): "Latency, throughput and memory at N memories.",
    ("bench", "temporal"): "Recall of queries that name a time.",
    ("bench", "corroboration"): "Corroboration as a ranking signal.",
    ("bench", "locomo"): "Recall on LoCoMo against BM25 and dense alone.",
    ("bench", "agent-memory"): "Recall on a labelled agent-memory set.",
    ("bench", "sessions"): "LoCoMo replayed as Claude Code sessions.",
    ("bench", "import"): "Bulk-import throughput.",
    ("bench", "hnsw"): "pgvector HNSW recall against the exact scan.",
    ("bench", "team"): "Several daemons writing to one PostgreSQL.",
    ("bench", "inject"): "What the session hooks inject, question by question.",
    ("bench", "relevance"): "Fit and report the calibrated relevance model.",
    ("bench", "write-gate"): "What the write and significance gates would drop.",
    ("pin",): "Pin a memory: always in session context.",
    ("hook",): "Run a harness hook (reads its JSON on stdin).",
    ("connect",): "Add the hooks and MCP server to a harness.",
    ("mcp",): "The memory tools over MCP on stdio.",
    ("sessions", "show"): "One session: turns, checkpoints, transcript.",
    ("duplicates",): "Near-duplicate memories flagged for review.",
    ("duplicates", "list"): "Flagged pairs, newest first.",
    ("duplicates", "merge"): "Keep one memory of a pair.",
    ("duplicates", "sweep"): "Run one batch of the near-duplicate sweep.",
    ("principles",): "Principles proposed from patterns across entities.",
    ("principles", "list"): "Proposed, confirmed and rejected principles.",
    ("principles", "confirm"): "Confirm a proposed principle.",
    ("principles", "reject"): "Reject a principle; never proposed again.",
    ("principles", "run"): "Run the principles pass now.",
    ("gates",): "The write gate and the significance gate.",
    ("gates", "significance"): "Judge one session with the significance gate.",
    ("gates", "backfill-skipped"): "Queue the summaries the significance gate skipped.",
    ("sync",): "Index the memory files of every project now.",
    ("migrate",): "Copy a SQLite home into PostgreSQL.",
    ("postgres",): "A local PostgreSQL with pgvector; server checks.",
    ("postgres", "init"): "Make and start a local PostgreSQL with pgvector.",
    ("postgres", "status"): "Whether the local server runs, and where.",
    ("postgres", "env"): "Shell exports for the local server's superuser.",
    ("postgres", "bin"): "The folder of PostgreSQL's client tools.",
    ("postgres", "check"): "Check a server as a daemon does at start.",
    ("token",): "Named tokens: one per person or agent.",
    ("token", "add"): "Make a token and print it once.",
    ("token", "list"): "Every named token (never the token itself).",
    ("token", "revoke"): "Revoke a token: refused from the next request.",
    ("token", "rotate"): "A new secret for a token, printed once.",
    ("export",): "Write memories as a JSON-lines bundle.",
    ("import",): "Import a bundle, a chat export or items.",
    ("backup",): "Copy the live database to a file.",
}


def _first_sentence(text: str | None) -> str:
    para = " ".join((text or "").split("\n\n")[0].split())
    end = re.search(r"[.?!](?=\s|$)", para)
    return para if end is None else para[: end.end()]


def _set_short_help(group: click.Group = cli, path: tuple[str, ...] = ()) -> None:
    """Each command's listing: its entry in SHORT_HELP, else its whole first sentence (click
    wraps a long one rather than cutting it)."""
    for name, command in group.commands.items():
        where = (*path, name)
        command.short_help = SHORT_HELP.get(where) or command.short_help or _first_sentence(
            command.help)
        if isinstance(command, click.Group):
            _set_short_help(command, where)


_set_short_help()

if __name__ == "__main__":
    cli()
