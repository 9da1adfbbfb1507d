"""`mnemonist sync [--force] [--root PATH]` and `mnemonist files`: the memory files of the
running daemon (MEMORY.md, memory.md, memory/**/*.md of each known project root)."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from mnemonist.cli.common import call, client, daemon_options

SYNC_TIMEOUT_S = 600.0  # a forced sync of many files reads and chunks them all


@click.command("sync")
@click.option("--force", is_flag=True, help="read and re-chunk every file, changed or not")
@click.option("--root", default=None, help="only this project root (a folder)")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def sync(ctx: click.Context, force: bool, root: str | None, as_json: bool) -> None:
    """Sync the memory files of every known project root into the index now."""
    body: dict[str, Any] = {"force": force}
    if root is not None:
        body["root"] = os.path.abspath(os.path.expanduser(root))
    c = client(ctx, SYNC_TIMEOUT_S)
    out = call(lambda: c.post("/api/files/sync", body))
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(
        f"synced {out['roots']} roots: {out['files_scanned']} files scanned,"
        f" {out['files_changed']} changed, {out['files_removed']} removed,"
        f" {out['files_skipped']} skipped; chunks {out['chunks_written']} new,"
        f" {out['chunks_kept']} kept, {out['chunks_deleted']} deleted"
        f" ({out['took_ms']:.0f} ms)"
    )
    for error in out.get("errors") or []:
        click.echo(f"error: {error}", err=True)


@click.command("files")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def files(ctx: click.Context, as_json: bool) -> None:
    """List the indexed memory files and their chunk counts."""
    out = call(lambda: client(ctx).get("/api/files"))
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    if not out["roots"]:
        click.echo("no project roots known yet (files.roots, or a session start in a project)")
    for root in out["roots"]:
        click.echo(f"root {root['path']}  (project {root['project']}, {root['origin']})")
    for f in out["files"]:
        what = f"skipped: {f['error']}" if f["error"] else f"{f['chunk_count']} chunks"
        click.echo(f"  {what:<12} {f['path']}")
    click.echo(f"{out['total']} files, {out['chunks']} chunks")
