"""`mnemonist bench`: benchmarks of the daemon in-process (no server needed)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from mnemonist.cli.bench_locomo import locomo, parse_settings, sessions


def parse_sizes(value: str) -> list[int]:
    """ "10000,100000" or "10k,100k" -> [10000, 100000]."""
    sizes: list[int] = []
    for part in value.split(","):
        text = part.strip().lower().replace("_", "")
        if not text:
            continue
        scale = 1
        if text.endswith("k"):
            text, scale = text[:-1], 1000
        try:
            n = int(text) * scale
        except ValueError:
            raise click.BadParameter(
                f"{part.strip()!r} is not a number", param_hint="--n"
            ) from None
        if n <= 0:
            raise click.BadParameter("sizes must be positive", param_hint="--n")
        sizes.append(n)
    if not sizes:
        raise click.BadParameter("give at least one size", param_hint="--n")
    return sizes


@click.group()
def bench() -> None:
    """Benchmarks (run the daemon in-process; nothing to start first)."""


@bench.command()
@click.option(
    "--n",
    "sizes",
    default="10000,100000",
    show_default=True,
    help="memory counts, comma-separated (10k works too)",
)
@click.option(
    "--queries",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="recalls measured per size (after 10 warm-up)",
)
@click.option("--seed", type=int, default=7, show_default=True, help="synthetic corpus seed")
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="keep the databases in HOME/<n> (default: temporary, removed after)",
)
@click.option(
    "--embed-timeout",
    type=click.FloatRange(min=0),
    default=1800.0,
    show_default=True,
    help="seconds to wait for background embedding after the writes; on timeout "
    "recall runs over what is indexed (0: do not wait)",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("bench-results"),
    show_default=True,
    help="where scale-<timestamp>.json and .md are written",
)
@click.option("--sessions", is_flag=True,
              help="agent sessions end throughout (one 20-message transcript every 2 s)")
@click.option("--generated-vectors", is_flag=True,
              help="import the N memories and GENERATE most vectors (the query targets and a"
              " pool are embedded for real), then remember 2,000 one by one: for 1M in ~40 min")
@click.option("--storage", default=None, metavar="URL",
              help="run the daemon on this empty PostgreSQL database (postgresql://...; one"
              " size per database) instead of a SQLite file")
@click.option("--beside-sqlite", is_flag=True,
              help="with --storage: run each size on a SQLite file too, in this run, and"
              " report PostgreSQL's figures as ratios of SQLite's")
@click.option("--json", "as_json", is_flag=True, help="print the JSON report, not the table")
@click.option("--no-progress", is_flag=True, help="no progress lines on stderr")
def scale(
    sizes: str,
    queries: int,
    seed: int,
    home: Path | None,
    embed_timeout: float,
    out_dir: Path,
    sessions: bool,
    generated_vectors: bool,
    storage: str | None,
    beside_sqlite: bool,
    as_json: bool,
    no_progress: bool,
) -> None:
    """Remember N synthetic memories, embed them, recall; latency, throughput, RSS, size."""
    from mnemonist.bench.scale import markdown, run_scale
    from mnemonist.bench.scale_compare import markdown as compare_markdown

    if beside_sqlite and not storage:
        raise click.UsageError("--beside-sqlite compares a PostgreSQL run: give --storage URL")

    try:
        report = run_scale(
            parse_sizes(sizes),
            home=home,
            queries=queries,
            seed=seed,
            progress=not no_progress,
            embed_timeout_s=embed_timeout,
            out_dir=out_dir,
            sessions=sessions,
            generated_vectors=generated_vectors,
            storage=storage,
            beside_sqlite=beside_sqlite,
        )
    except FileExistsError as exc:
        raise click.UsageError(str(exc)) from exc
    except ValueError as exc:
        if storage is None:
            raise
        raise click.BadParameter(str(exc), param_hint="--storage") from None
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(markdown(report) + compare_markdown(report.get("comparison", [])), nl=False)
        files = report.get("files", {})
        click.echo(f"\nwritten: {files.get('json')} and {files.get('markdown')}", err=True)


@bench.command()
@click.option("--seed", type=int, default=11, show_default=True, help="test set seed")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
def temporal(seed: int, as_json: bool) -> None:
    """Time-aware recall: queries naming a time over recurring dated memories."""
    from mnemonist.bench.temporal import markdown, run_temporal

    report = run_temporal(seed)
    click.echo(json.dumps(report, indent=2) if as_json else markdown(report))


@bench.command()
@click.option("--seed", type=int, default=5, show_default=True, help="test set seed")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
def corroboration(seed: int, as_json: bool) -> None:
    """Corroboration as a ranking signal, on a constructed set, over several weights."""
    from mnemonist.bench.corroboration import markdown, run_corroboration

    report = run_corroboration(seed)
    click.echo(json.dumps(report, indent=2) if as_json else markdown(report))


bench.add_command(locomo)


@bench.command("agent-memory")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="a setting for the run's daemon, e.g. sparse.enabled=true (repeatable)")
@click.option("--variant", "variants", multiple=True, metavar="'NAME: KEY=VALUE[, ...]'",
              help="also score a variant on the same memories (repeatable)")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
def agent_memory(settings: tuple[str, ...], variants: tuple[str, ...], as_json: bool) -> None:
    """Recall on a small labelled agent-memory set (preferences, decisions, bugs, procedures)."""
    from mnemonist.bench.ablation import parse_variant
    from mnemonist.bench.agent_memory import markdown, run_agent_memory

    try:
        parsed = [parse_variant(v) for v in variants]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--variant") from None
    report = run_agent_memory(parse_settings(settings), parsed)
    click.echo(json.dumps(report, indent=2) if as_json else markdown(report))


@bench.command("over-time")
@click.option("--seed", type=int, default=7, show_default=True, help="stream seed")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="a setting for the run's daemon, e.g. search.alpha=0.5 (repeatable)")
@click.option("--facts", type=click.IntRange(min=1), default=None,
              help="only the first N changing facts (default: all)")
@click.option("--fillers", type=click.IntRange(min=0), default=200, show_default=True,
              help="unrelated notes between the statements")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
def over_time(seed: int, settings: tuple[str, ...], facts: int | None, fillers: int,
              as_json: bool) -> None:
    """Memory over time: is a changed fact's current value ranked above its stale one?"""
    from mnemonist.bench.over_time import markdown, run_over_time
    from mnemonist.bench.over_time_set import max_facts

    if facts is not None and facts > max_facts():
        raise click.BadParameter(f"the stream has {max_facts()} facts", param_hint="--facts")
    report = run_over_time(seed, parse_settings(settings), facts=facts, fillers=fillers)
    click.echo(json.dumps(report, indent=2) if as_json else markdown(report))

bench.add_command(sessions)


@bench.command("import")
@click.option("--n", "n", type=int, default=10_000, show_default=True, help="memories")
@click.option("--seed", type=int, default=7, show_default=True, help="synthetic corpus seed")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
def import_(n: int, seed: int, as_json: bool) -> None:
    """Bulk-import throughput (the synchronous write), first run and idempotent re-run."""
    from mnemonist.bench.importing import markdown, run_import

    report = run_import(n, seed)
    click.echo(json.dumps(report, indent=2) if as_json else markdown(report))


def _team_commands() -> None:
    from mnemonist.cli.bench_inject import feedback, inject, relevance
    from mnemonist.cli.bench_team import hnsw, team
    from mnemonist.cli.bench_write_gate import graph, write_gate

    bench.add_command(hnsw)
    bench.add_command(team)
    bench.add_command(inject)
    bench.add_command(relevance)
    bench.add_command(feedback)
    bench.add_command(write_gate)
    bench.add_command(graph)


_team_commands()
