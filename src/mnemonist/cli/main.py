"""The `mnemonist` command: `serve` runs the daemon; the rest talk to it over HTTP."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import click

from mnemonist.cli.bench import bench
from mnemonist.cli.export_cmd import COMMANDS as CARRY_COMMANDS
from mnemonist.cli.files_cmd import files, sync
from mnemonist.cli.hooks_cmd import COMMANDS as HOOK_COMMANDS
from mnemonist.cli.mcp_cmd import mcp
from mnemonist.cli.sessions_cmd import sessions
from mnemonist.client import Client, DaemonError


def emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def call(fn):
    try:
        return fn()
    except DaemonError as exc:
        click.echo(f"mnemonist: {exc}", err=True)
        sys.exit(1)


@click.group()
@click.option("--url", envvar="MNEMONIST_URL", default=None, help="daemon URL")
@click.pass_context
def cli(ctx: click.Context, url: str | None) -> None:
    """mnemonist: long-term memory for AI agents."""
    ctx.obj = {"url": url}


def client(ctx: click.Context) -> Client:
    url = ctx.obj.get("url")
    return Client(url) if url else Client()


@cli.command()
@click.option("--host", default=None, help="bind address (default 127.0.0.1)")
@click.option("--port", type=int, default=None, help="port (default 3850)")
@click.option("--home", envvar="MNEMONIST_HOME", default=None, help="home folder (~/.agents)")
@click.option("-v", "--verbose", is_flag=True)
def serve(host: str | None, port: int | None, home: str | None, verbose: bool) -> None:
    """Start the daemon."""
    from mnemonist.daemon import serve as run
    from mnemonist.settings import ConfigError

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        run(home, host, port)
    except ConfigError as exc:
        click.echo(f"mnemonist: configuration error: {exc}", err=True)
        sys.exit(2)


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Counts, embedding coverage, queue and degraded components."""
    data = call(lambda: client(ctx).get("/api/status"))
    if as_json:
        return emit(data)
    mem, emb = data["memories"], data.get("embeddings", {})
    click.echo(f"mnemonist {data['version']}  database {data['database']}")
    click.echo(f"memories: {mem['live']} live, {mem['deleted']} deleted, {mem['pinned']} pinned")
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
    problems = data.get("problems") or data["degraded"]
    click.echo("degraded: " + ("nothing" if not problems else "\n  " + "\n  ".join(problems)))


@cli.command()
@click.argument("content", nargs=-1, required=True)
@click.option("--type", "type_", default=None)
@click.option("--importance", type=float, default=None)
@click.option("--tags", default=None, help="comma-separated")
@click.option("--who", default="cli")
@click.option("--project", default=None)
@click.option("--pinned", is_flag=True, default=None)
@click.option("--at", "occurred_at", default=None, help="when it happened (ISO 8601)")
@click.option("--source", "source_id", default=None, help="source id (conversation, file...)")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def remember(ctx, content, type_, importance, tags, who, project, pinned, occurred_at, source_id,
             as_json) -> None:
    """Store a memory ("critical:" pins it, "[a,b]:" tags it)."""
    body = {"content": " ".join(content), "type": type_, "importance": importance,
            "tags": tags, "who": who, "project": project, "pinned": pinned,
            "occurred_at": occurred_at, "source_id": source_id}
    out = call(lambda: client(ctx).post("/api/memory/remember", body))
    if as_json:
        return emit(out)
    what = "already remembered" if out["deduplicated"] else "remembered"
    click.echo(f"{what}: {out['id']} ({out['type']})")


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-n", "--limit", type=int, default=10)
@click.option("--type", "type_", default=None)
@click.option("--tags", default=None)
@click.option("--who", default=None)
@click.option("--project", default=None)
@click.option("--since", default=None)
@click.option("--until", default=None)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def recall(ctx, query, limit, type_, tags, who, project, since, until, as_json) -> None:
    """Hybrid search."""
    body = {"query": " ".join(query), "limit": limit, "type": type_, "tags": tags, "who": who,
            "project": project, "since": since, "until": until}
    out = call(lambda: client(ctx).post("/api/memory/recall", body, idempotent=True))
    if as_json:
        return emit(out)
    if not out["results"]:
        click.echo("no memories found")
    for r in out["results"]:
        pin = " [pinned]" if r["pinned"] else ""
        click.echo(f"{r['score']:.3f}  {r['id'][:8]}  {r['type']}{pin}  {r['content']}")


@cli.command()
@click.argument("memory_id")
@click.pass_context
def get(ctx, memory_id) -> None:
    """Show one memory."""
    emit(call(lambda: client(ctx).get(f"/api/memory/{memory_id}")))


@cli.command()
@click.argument("memory_id")
@click.pass_context
def history(ctx, memory_id) -> None:
    """The audit trail of one memory."""
    out = call(lambda: client(ctx).get(f"/api/memory/{memory_id}/history"))
    for e in out["events"]:
        click.echo(f"{e['created_at']}  {e['event']:<9} by {e['changed_by'] or '-'}:"
                   f" {e['reason'] or ''}")


@cli.command()
@click.argument("ids", nargs=-1)
@click.option("--query", default=None, help="forget what this query clearly matches")
@click.option("--reason", default=None, help="why (required to execute)")
@click.option("--project", default=None)
@click.option("--type", "type_", default=None)
@click.option("--purge", "--hard", "purge", is_flag=True,
              help="remove the text for good (history, indexes, file), soft-deleted ones too")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
@click.pass_context
def forget(ctx, ids, query, reason, project, type_, purge, yes) -> None:
    """Preview, confirm and soft-delete memories (recoverable for the retention window).

    A query selects only memories that hold its words and score well; the preview shows each
    one's score and matched words. Execute sends the preview's token, so what runs is exactly
    what was shown."""
    c = client(ctx)
    sel = {"ids": list(ids) or None, "query": query, "project": project, "type": type_,
           "force": purge}
    preview = call(lambda: c.post("/api/memory/forget", {**sel, "mode": "preview"}))
    for skipped in preview.get("excluded", []):
        click.echo(f"  not selected  {skipped['id'][:8]}  {skipped['why']}:"
                   f" {skipped['content'][:80]}")
    if not preview["count"]:
        click.echo("nothing to forget")
        return
    for cand in preview["candidates"]:
        score = f"{cand['score']:.3f} [{', '.join(cand['matched_terms'])}]  " if (
            "score" in cand) else ""
        click.echo(f"  {cand['id'][:8]}  {score}{cand['content'][:100]}")
    verb = "purge" if purge else "forget"
    if not yes and not click.confirm(f"{verb} {preview['count']} memories?"):
        sys.exit(1)
    reason = reason or ("forgotten from the CLI" if yes else click.prompt("reason"))
    body = {**sel, "mode": "execute", "reason": reason, "confirm_token": preview["confirmToken"]}
    out = call(lambda: c.post("/api/memory/forget", body))
    click.echo(f"{'purged' if purge else 'forgot'} {out['deleted']} memories")


@cli.group()
def config() -> None:
    """Configuration."""


@config.command("show")
@click.option("--home", envvar="MNEMONIST_HOME", default=None)
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
for _command in HOOK_COMMANDS:  # hook, connect, disconnect
    cli.add_command(_command)
cli.add_command(mcp)
cli.add_command(sessions)
cli.add_command(sync)
cli.add_command(files)
for _command in CARRY_COMMANDS:  # export, import, backup
    cli.add_command(_command)

if __name__ == "__main__":
    cli()
