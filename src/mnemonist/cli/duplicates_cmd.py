"""`mnemonist duplicates list | dismiss ID | merge ID --keep a|b | sweep`: review the pairs
the near-duplicate sweep flagged and the contradictions the consolidation engine could not
settle (`--kind contradiction`), and see what it settled (`--kind restated|replaced --status
resolved`). A flagged pair is never merged without `merge`.

`mnemonist consolidate [--status]`: run the consolidation engine now, or say where it stands."""

from __future__ import annotations

from typing import Any

import click

from mnemonist.cli.common import call, client, daemon_options, emit

SHORT_ID = 8


def _one_line(text: str | None, width: int = 100) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@click.group()
def duplicates() -> None:
    """Near-duplicate memories flagged for review (never merged on their own)."""


@duplicates.command("list")
@click.option("--status", type=click.Choice(["open", "dismissed", "resolved"]), default="open",
              show_default=True, help="which pairs: still to review, or decided")
@click.option("-n", "--limit", type=click.IntRange(1, 500), default=20, show_default=True,
              help="how many pairs to show")
@click.option("--kind", type=click.Choice(["duplicate", "contradiction", "restated",
                                           "replaced"]), default=None,
              help="only near-duplicates, contradictions, or what consolidation settled")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def list_(ctx: click.Context, status: str, limit: int, kind: str | None,
          as_json: bool) -> None:
    """Flagged pairs, newest first: the pair's id, kind, similarity, then both memories."""
    params: dict[str, Any] = {"status": status, "limit": limit}
    if kind:
        params["kind"] = kind
    out = call(lambda: client(ctx).get("/api/repair/duplicates", **params))
    if as_json:
        return emit(out)
    if not out["duplicates"]:
        click.echo(f"no {status} {kind or 'duplicate'} candidates")
    for d in out["duplicates"]:
        kept = f"  kept {d['kept'][:SHORT_ID]}" if d.get("kept") else ""
        click.echo(f"{d['id'][:SHORT_ID]}  {d.get('kind', 'duplicate')}  "
                   f"{d['similarity']:.3f}  {d['status']}{kept}")
        if d.get("reason") and d.get("kind") != "duplicate":
            click.echo(f"  why: {_one_line(d['reason'])}")
        for side in ("a", "b"):
            m: dict[str, Any] = d[side]
            click.echo(f"  {side}: {m['id'][:SHORT_ID]}  {_one_line(m['content'])}")
    if out["total"] > len(out["duplicates"]):
        click.echo(f"... {out['total']} in all (--limit)")


@duplicates.command("dismiss")
@click.argument("candidate_id")
@click.option("--reason", default=None, help="why they are not duplicates (kept)")
@daemon_options
@click.pass_context
def dismiss(ctx: click.Context, candidate_id: str, reason: str | None) -> None:
    """Not duplicates: the pair is never flagged again."""
    out = call(lambda: client(ctx).post(f"/api/repair/duplicates/{candidate_id}/dismiss",
                                        {"reason": reason}))
    click.echo(f"dismissed: {out['id']}")


@duplicates.command("merge")
@click.argument("candidate_id")
@click.option("--keep", required=True, help="a, b, or the id of the memory to keep")
@click.option("--reason", required=True, help="recorded in the other memory's history")
@daemon_options
@click.pass_context
def merge(ctx: click.Context, candidate_id: str, keep: str, reason: str) -> None:
    """Keep one memory of the pair; the other is superseded by it (history keeps it)."""
    out = call(lambda: client(ctx).post(f"/api/repair/duplicates/{candidate_id}/resolve",
                                        {"keep": keep, "reason": reason, "changed_by": "cli"}))
    click.echo(f"kept {out['kept']}; {out['superseded']} is superseded by it")


@duplicates.command("sweep")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def sweep(ctx: click.Context, as_json: bool) -> None:
    """Run one batch of the near-duplicate sweep now (repair.dedupBatchSize memories)."""
    out = call(lambda: client(ctx, timeout=120.0).post("/api/repair/dedup-sweep", {}))
    if as_json:
        return emit(out)
    result = out["result"]
    if "skipped" in result:
        click.echo(f"sweep skipped: {result['skipped']}")
        return
    guarded = ", ".join(f"{k} {v}" for k, v in result["guarded"].items()) or "none"
    click.echo(f"examined {result['examined']} memories: {result['pairs_above_threshold']}"
               f" pair(s) at cosine >= {result['threshold']}, {result['flagged']} flagged,"
               f" kept apart by the guards: {guarded}"
               + ("" if result["done"] else " (more to sweep: run it again)"))


@click.command("consolidate")
@click.option("--status", "show_status", is_flag=True,
              help="say where the engine stands instead of running it")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def consolidate(ctx: click.Context, show_status: bool, as_json: bool) -> None:
    """Run the consolidation engine now: merge facts said again, supersede values the newer
    statement says changed, list contradictions for review (undo one with `restore ID`)."""
    if show_status:
        out = call(lambda: client(ctx).get("/api/consolidation/status"))
        if as_json:
            return emit(out)
        click.echo(f"{'enabled' if out['enabled'] else 'disabled'}: read up to memory "
                   f"{out['cursor']}, {out['not_read_yet']} not read yet; restated "
                   f"{out['restated']}, replaced {out['replaced']}, contradictions listed "
                   f"{out['flagged']} ({out['open_contradictions']} open)")
        return None
    out = call(lambda: client(ctx).post("/api/consolidation/run", {}))
    if as_json:
        return emit(out)
    if "skipped" in out:
        click.echo(f"skipped: {out['skipped']}")
        return None
    click.echo(f"read {out['examined']} memories: {out['restated']} restated, "
               f"{out['replaced']} replaced, {out['flagged']} contradictions for review"
               + ("" if out["done"] else " (more to read: run it again)"))
    return None


@click.command("restore")
@click.argument("memory_id")
@click.option("--reason", default=None, help="why (kept in the memory's history)")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def restore(ctx: click.Context, memory_id: str, reason: str | None, as_json: bool) -> None:
    """Make a superseded memory current again (undo a supersession, the consolidation
    engine's included: it never settles that pair again)."""
    body: dict[str, Any] = {"changed_by": "cli"}
    if reason:
        body["reason"] = reason
    out = call(lambda: client(ctx).post(f"/api/memory/{memory_id}/restore", body))
    if as_json:
        return emit(out)
    click.echo(f"restored {out['id']} (it had been superseded by {out['supersededBy']})")
    return None
