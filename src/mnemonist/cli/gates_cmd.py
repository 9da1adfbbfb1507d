"""`mnemonist gates log | significance SESSION | backfill-skipped`: what the write gate and the
significance gate decided (docs/gates.md)."""

from __future__ import annotations

import click

from mnemonist.cli.common import call, client, daemon_options, emit

SHORT_ID = 8
DECISIONS = ("write", "drop", "would_drop", "extract", "skip", "would_skip")


def _one_line(text: str | None, width: int = 90) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@click.group()
def gates() -> None:
    """The write gate and the significance gate: their log, and skipped sessions."""


@gates.command("log")
@click.option("--gate", type=click.Choice(["write", "significance"]), default=None,
              help="only this gate's decisions")
@click.option("--decision", type=click.Choice(DECISIONS), default=None,
              help="only this decision")
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="how many decisions to show")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def log(ctx: click.Context, gate: str | None, decision: str | None, limit: int,
        as_json: bool) -> None:
    """What the gates decided, newest first: the gate, its decision and why."""
    out = call(lambda: client(ctx).get("/api/gates/log", gate=gate, decision=decision,
                                       limit=limit))
    if as_json:
        return emit(out)
    if not out["decisions"]:
        click.echo("no gate decisions logged (both gates are off unless configured:"
                   " memory.writeGate.mode, sessions.significance.mode)")
    for d in out["decisions"]:
        near = ""
        if d.get("neighbour_id"):
            cos = f" {d['cosine']:.3f}" if d.get("cosine") is not None else ""
            near = f"  near {d['neighbour_id'][:SHORT_ID]}{cos}"
        subject = (d.get("subject") or "-")[:SHORT_ID * 3]
        click.echo(f"{d['created_at'][:19]}  {d['gate']}  {d['decision']} ({d['mode']})"
                   f"  {subject}{near}")
        if d.get("content"):
            click.echo(f"  {_one_line(d['content'])}")
        for reason in d["reasons"]:
            click.echo(f"  - {_one_line(reason)}")
    if out["total"] > len(out["decisions"]):
        click.echo(f"... {out['total']} in all (--limit)")


@gates.command("significance")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def significance_(ctx: click.Context, session_id: str, as_json: bool) -> None:
    """Judge one session now with the significance gate's three checks (nothing logged)."""
    out = call(lambda: client(ctx, timeout=120.0).get(
        f"/api/gates/significance/{session_id}"))
    if as_json:
        return emit(out)
    verdict = "insignificant (all three signs)" if out["insignificant"] else "significant"
    click.echo(f"{session_id}: {verdict}")
    for check, reason in zip(("turns", "entities", "novelty"), out["reasons"], strict=True):
        sign = "sign" if out["signs"][check] else "    "
        click.echo(f"  {sign}  {check}: {reason}")


@gates.command("backfill-skipped")
@click.option("-n", "--limit", type=click.IntRange(1, 10000), default=100, show_default=True,
              help="how many skipped sessions to queue at most")
@daemon_options
@click.pass_context
def backfill_skipped(ctx: click.Context, limit: int) -> None:
    """Queue the LLM summary of the sessions the significance gate skipped, past the gate."""
    out = call(lambda: client(ctx).post(f"/api/repair/backfill-skipped?limit={limit}", {}))
    click.echo(f"queued the summary of {out['queued']} skipped session(s)"
               + (": " + ", ".join(out["sessions"][:10]) if out["sessions"] else ""))
