"""`mnemonist sessions list | show ID`: what was kept of each agent session."""

from __future__ import annotations

import json
from typing import Any

import click

from mnemonist.cli.common import call, client, daemon_options


def _get(ctx: click.Context, path: str, **params: Any) -> Any:
    return call(lambda: client(ctx).get(path, **params))


@click.group()
def sessions() -> None:
    """Agent sessions: their turns, checkpoints and transcripts."""


@sessions.command("list")
@click.option("--project", default=None, help="only this project's sessions")
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="how many sessions to show")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def list_(ctx: click.Context, project: str | None, limit: int, as_json: bool) -> None:
    """Sessions the hooks saw, newest first."""
    out = _get(ctx, "/api/sessions", project=project, limit=limit)
    if as_json:
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    if not out["sessions"]:
        click.echo("no sessions yet")
    for s in out["sessions"]:
        status = s.get("ingest_status") or "not read"
        if s.get("ingest_status") in ("skipped", "pending") and s.get("ingest_reason"):
            status += f" ({s['ingest_reason']})"
        click.echo(f"{s['session_key']}  {s['started_at'][:16]}  {s.get('project') or '-'}  "
                   f"{s.get('turns') or 0} turns, {s['checkpoints']} checkpoints, "
                   f"{s['prompt_count']} prompts  [{status}]")
    if out["has_more"]:
        click.echo(f"... {out['total']} in all (--limit)")


@sessions.command("show")
@click.argument("session_id")
@click.option("-n", "--turns", type=click.IntRange(0, 10000), default=50, show_default=True,
              help="how many of its turns to show")
@click.option("--transcript", is_flag=True, help="print the stored transcript too")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def show(ctx: click.Context, session_id: str, turns: int, transcript: bool,
         as_json: bool) -> None:
    """One session: its turns in order, checkpoints and (with --transcript) transcript."""
    out = _get(ctx, f"/api/sessions/{session_id}", turns=turns, transcript=transcript or None)
    if as_json:
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    state, ingest = out.get("state") or {}, out.get("ingest") or {}
    click.echo(f"session {out['session_key']}  project {state.get('project') or '-'}  "
               f"started {str(state.get('started_at'))[:16]}  ended "
               f"{str(state.get('ended_at') or '-')[:16]}")
    if ingest:
        click.echo(f"turns: {out['turns_total']} ({ingest['status']}"
                   + (f": {ingest['reason']}" if ingest.get("reason") else "") + ")")
    for t in out["turns"]:
        text = " ".join(t["content"].split())[:200]
        click.echo(f"  {t['occurred_at'][:16]} {t['who'] or '?'}: {text}")
    if out["turns_total"] > len(out["turns"]):
        click.echo(f"  ... {out['turns_total'] - len(out['turns'])} more (--turns)")
    for c in out["checkpoints"]:
        click.echo(f"checkpoint {c['id'][:8]} {c['trigger']} {c['created_at'][:16]}")
    if transcript and out.get("transcript"):
        click.echo("\n" + out["transcript"])
