"""`mnemonist feedback ID --helpful|--unhelpful --query TEXT`: rate a memory for a query (a
training pair for the learned ranker, and the graph's feedback).

`mnemonist predictor status | train`: which ranker recall uses (the shipped one or the home's
own), the training pairs by source, what the guard found; refit now."""

from __future__ import annotations

from typing import Any

import click

from mnemonist.cli.common import call, client, daemon_options, emit


@click.command("feedback")
@click.argument("memory_id")
@click.option("--helpful/--unhelpful", required=True, help="did the memory help for the query")
@click.option("--query", "query", required=True, help="the query or prompt it was shown for")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def feedback(ctx: click.Context, memory_id: str, helpful: bool, query: str,
             as_json: bool) -> None:
    """Rate a memory for a query: the learned ranker learns from it (docs/ranking.md)."""
    body: dict[str, Any] = {"helpful": helpful, "query": query}
    out = call(lambda: client(ctx).post(f"/api/memory/{memory_id}/feedback", body))
    if as_json:
        return emit(out)
    pair = ("recorded as a training pair" if out.get("training_pair") else
            "no training pair (recall does not rank it among its best for that query)")
    click.echo(f"{'helpful' if helpful else 'unhelpful'}: {out['memory_id']}; {pair}")
    return None


@click.group()
def predictor() -> None:
    """The learned ranker: which one recall uses and what this home taught it."""


def _describe(out: dict[str, Any]) -> str:
    pairs = out["pairs"]
    counts = ", ".join(f"{k} {v}" for k, v in pairs.items() if k != "held_out")
    check = out.get("check") or {}
    lines = [f"ranker in use: {out['ranker']}",
             f"training pairs: {counts} ({pairs['held_out']} held back)"]
    if check:
        agreement = check.get("agreement")
        lines.append("feedback " + ("trusted" if check.get("trusted") else "NOT trusted")
                     + (f" (agreement with the shipped ranker {agreement:.3f})"
                        if agreement is not None else ""))
        lines.append(check.get("reason", ""))
    else:
        lines.append("never fitted: the shipped ranker alone")
    return "\n".join(line for line in lines if line)


@predictor.command("status")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Which ranker recall uses, the training pairs, what the guard found."""
    out = call(lambda: client(ctx).get("/api/predictor/status"))
    if as_json:
        return emit(out)
    click.echo(_describe(out))
    return None


@predictor.command("train")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def train(ctx: click.Context, as_json: bool) -> None:
    """Refit this home's ranker on its pairs now and judge it on the held-back ones."""
    out = call(lambda: client(ctx).post("/api/predictor/train", {}))
    if as_json:
        return emit(out)
    click.echo(_describe(out["status"]))
    return None
