"""`mnemonist bench team` and `mnemonist bench hnsw`: the PostgreSQL store's team benchmarks
(docs/postgres.md): several daemons on one database under concurrent writers, and pgvector's
HNSW recall against the exact scan per `ef_search`."""

from __future__ import annotations

import json

import click


def _postgres_url(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not value.startswith(("postgresql://", "postgres://")):
        raise click.BadParameter("give a postgresql:// URL", ctx=ctx, param=param)
    return value


@click.command("hnsw")
@click.option("--storage", "url", required=True, callback=_postgres_url,
              help="postgresql:// URL of a database with pgvector (a scratch table is made"
                   " there and dropped)")
@click.option("--n", "n", type=click.IntRange(min=100), default=50_000, show_default=True,
              help="vectors")
@click.option("--queries", type=click.IntRange(min=1), default=200, show_default=True,
              help="queries measured")
@click.option("--seed", type=int, default=7, show_default=True, help="synthetic vectors seed")
@click.option("--generated", is_flag=True,
              help="generate most vectors (a pool of 2,000 real ones plus noise) instead of"
                   " embedding every memory: quick, and harder for HNSW than real ones")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
def hnsw(url: str, n: int, queries: int, seed: int, generated: bool, as_json: bool) -> None:
    """Recall@10 of pgvector's HNSW against the exact scan, per hnsw.ef_search."""
    from mnemonist.bench.pg_hnsw import markdown, run_hnsw

    report = run_hnsw(url, n=n, queries=queries, seed=seed, generated=generated)
    click.echo(json.dumps(report, indent=2) if as_json else markdown(report))


@click.command("team")
@click.option("--storage", "url", required=True, callback=_postgres_url,
              help="postgresql:// URL of an empty database with pgvector")
@click.option("--daemons", type=click.IntRange(1, 16), default=2, show_default=True,
              help="daemons started on the database")
@click.option("--clients", type=click.IntRange(1, 64), default=8, show_default=True,
              help="client threads per daemon")
@click.option("--writes", type=click.IntRange(1, 100_000), default=500, show_default=True,
              help="memories each client writes")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
def team(url: str, daemons: int, clients: int, writes: int, as_json: bool) -> None:
    """Several daemons on one PostgreSQL, concurrent writers: counts, deadlocks, latency.

    Exits 1 when a check fails (a write lost or doubled, a job run twice, a 5xx, a
    deadlock, a memory not recalled through another daemon)."""
    from mnemonist.bench.team import markdown, run_team

    try:
        report = run_team(url, daemons=daemons, clients=clients, writes=writes)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--storage") from None
    click.echo(json.dumps(report, indent=2) if as_json else markdown(report))
    if not report["ok"]:
        raise SystemExit(1)
