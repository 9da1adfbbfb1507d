"""`mnemonist principles list | confirm ID | reject ID | run`: the principles the principles
pass proposed (a pattern shared by three or more unrelated entities, stated by the extraction
LLM), and a person's review of each. Nothing proposed is a fact until confirmed."""

from __future__ import annotations

from typing import Any

import click

from mnemonist.cli.common import call, client, daemon_options, emit


@click.group()
def principles() -> None:
    """Principles proposed from patterns across unrelated entities."""


@principles.command("list")
@click.option("--status", type=click.Choice(["proposed", "confirmed", "rejected"]),
              default=None, help="only these (default: every status)")
@click.option("-n", "--limit", type=click.IntRange(1, 500), default=20, show_default=True,
              help="how many to show")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def list_(ctx: click.Context, status: str | None, limit: int, as_json: bool) -> None:
    """Principles, newest first: id, status, the sentence, its entities and evidence."""
    params: dict[str, Any] = {"limit": limit}
    if status:
        params["status"] = status
    out = call(lambda: client(ctx).get("/api/principles", **params))
    if as_json:
        return emit(out)
    if not out["principles"]:
        click.echo(f"no {status or ''} principles".replace("  ", " "))
    for p in out["principles"]:
        click.echo(f"{p['id']}  {p['status']}  {p['statement']}")
        names = ", ".join(n or "?" for n in p["source_names"])
        click.echo(f"  entities: {names}")
        click.echo(f"  evidence: {', '.join(p['evidence'])}")


def _review(ctx: click.Context, principle_id: str, action: str, reason: str | None) -> None:
    out = call(lambda: client(ctx).post(f"/api/principles/{principle_id}/{action}",
                                        {"reason": reason}))
    click.echo(f"{out['status']}: {out['id']}  {out['statement']}")


@principles.command("confirm")
@click.argument("principle_id")
@click.option("--reason", default=None, help="why (kept)")
@daemon_options
@click.pass_context
def confirm(ctx: click.Context, principle_id: str, reason: str | None) -> None:
    """Confirm a principle: its relations to its entities become stated."""
    _review(ctx, principle_id, "confirm", reason)


@principles.command("reject")
@click.argument("principle_id")
@click.option("--reason", default=None, help="why (kept)")
@daemon_options
@click.pass_context
def reject(ctx: click.Context, principle_id: str, reason: str | None) -> None:
    """Reject a principle: it goes, and its entities are never grouped again."""
    _review(ctx, principle_id, "reject", reason)


@principles.command("run")
@daemon_options
@click.pass_context
def run(ctx: click.Context) -> None:
    """Run the principles pass now (JSON: what it asked and proposed, or why not)."""
    emit(call(lambda: client(ctx).post("/api/repair/principles", {})))
