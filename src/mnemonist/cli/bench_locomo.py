"""`mnemonist bench locomo`: the LoCoMo recall benchmark, run on the daemon in-process.

The data file is never shipped with mnemonist (LoCoMo is CC BY-NC); give its path with
`--data` or `$MNEMONIST_LOCOMO`, or keep it at `../shared/bench/locomo-dev.json`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

DATA_ENV = "MNEMONIST_LOCOMO"
DEFAULT_RELATIVE = Path("..") / "shared" / "bench" / "locomo-dev.json"
REPO_ROOT = Path(__file__).resolve().parents[3]  # src/mnemonist/cli/ -> the repository


def default_data_candidates() -> list[Path]:
    """Where the data is looked for: $MNEMONIST_LOCOMO, then ../shared/bench/locomo-dev.json
    relative to the working directory and to the repository root."""
    out: list[Path] = []
    env = os.environ.get(DATA_ENV)
    if env:
        out.append(Path(env).expanduser())
    out += [Path.cwd() / DEFAULT_RELATIVE, REPO_ROOT / DEFAULT_RELATIVE]
    return out


def resolve_data(explicit: Path | None) -> Path:
    if explicit is not None:
        if not explicit.is_file():
            raise click.BadParameter(f"{explicit} is not a file", param_hint="--data")
        return explicit
    env = os.environ.get(DATA_ENV)
    if env:  # an explicit setting is used or reported, never skipped silently
        path = Path(env).expanduser()
        if not path.is_file():
            raise click.UsageError(f"${DATA_ENV} is {env}, which is not a file")
        return path
    for path in default_data_candidates():
        if path.is_file():
            return path.resolve()
    looked = ", ".join(str(p) for p in default_data_candidates())
    raise click.UsageError(
        f"no LoCoMo data found (looked at {looked}); pass --data PATH or set ${DATA_ENV}"
    )


#: the `--data` option of the commands that read a LoCoMo-format file
data_option = click.option(
    "--data", "data", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help=f"LoCoMo-format JSON (default: ${DATA_ENV} or ../shared/bench/locomo-dev.json)")


def parse_ks(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(part) for part in value.split(",") if part.strip()}))
    except ValueError:
        raise click.BadParameter("expected comma-separated integers, e.g. 5,10,20") from None
    if not ks or ks[0] < 1 or ks[-1] > 200:
        raise click.BadParameter("every k must be between 1 and 200")
    return ks


def parse_settings(settings: tuple[str, ...]) -> dict:
    """`--set a.b=value` items as the nested dict of a configuration file (values as YAML)."""
    import yaml

    overrides: dict = {}
    for item in settings:
        key, eq, raw = item.partition("=")
        if not eq:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--set")
        node = overrides
        *path, last = key.strip().split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = yaml.safe_load(raw)
    return overrides


@click.command("locomo")
@click.option(
    "--data",
    "data",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"LoCoMo-format JSON (default: ${DATA_ENV} or ../shared/bench/locomo-dev.json)",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="only the first N conversations"
)
@click.option(
    "--questions",
    type=click.IntRange(min=1),
    default=None,
    help="only the first N questions (with evidence) per conversation",
)
@click.option(
    "--k",
    "ks",
    default="5,10,20",
    show_default=True,
    callback=parse_ks,
    help="cut-offs for Recall@k / Hit@k / session recall",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("bench-results"),
    show_default=True,
    help="folder for locomo-<timestamp>.json and .md",
)
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="an empty mnemonist home to keep (default: a temporary one, removed after)",
)
@click.option("--storage", "storage", default=None, metavar="URL",
              help="run on this empty PostgreSQL database (postgresql://...) instead of SQLite")
@click.option("--ablate", is_flag=True,
              help="also score the standard ablations (each recall signal off in turn)")
@click.option("--variant", "variants", multiple=True, metavar="'NAME: KEY=VALUE[, ...]'",
              help="also score a variant, e.g. 'a6: search.alpha=0.6' (repeatable)")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="a setting for the run's daemon, e.g. sparse.enabled=true (repeatable)")
@click.option("--held-out-models", "held_out", default=None,
              type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="each conversation ranked by DIR/<conversation>.json, a model fitted without"
              " it (bench relevance --write-folds): the learned ranker measured on conversations"
              " it never saw")
@click.option("--json", "as_json", is_flag=True, help="print the JSON result, not the report")
@click.option("-q", "--quiet", is_flag=True, help="no progress on stderr")
def locomo(data: Path | None, limit: int | None, questions: int | None, ks: tuple[int, ...],
           out: Path, home: Path | None, storage: str | None, ablate: bool,
           variants: tuple[str, ...], settings: tuple[str, ...], held_out: Path | None,
           as_json: bool, quiet: bool) -> None:  # fmt: skip
    """Recall on LoCoMo: mnemonist vs BM25 only vs dense only, over the same memories.

    With --ablate or --variant, each variant is scored on the same memories after the main run,
    its settings applied to the running service and undone after."""
    from mnemonist.bench.ablation import STANDARD, parse_variant
    from mnemonist.bench.locomo import render_markdown, run_locomo
    from mnemonist.settings import ConfigError

    try:
        parsed = [parse_variant(v) for v in (*(STANDARD if ablate else ()), *variants)]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--variant") from None
    path = resolve_data(data)
    overrides = parse_settings(settings)
    if storage:
        overrides.setdefault("storage", {})["url"] = storage
    try:
        result = run_locomo(path, limit_conversations=limit, limit_questions=questions, ks=ks,
                            home=home, progress=not quiet, out_dir=out, variants=parsed,
                            overrides=overrides or None, held_out=held_out)  # fmt: skip
    except ConfigError as exc:
        click.echo(f"mnemonist: configuration error: {exc}", err=True)
        sys.exit(2)
    except (ValueError, OSError) as exc:
        click.echo(f"mnemonist: {exc}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(render_markdown(result))
        click.echo(f"written: {result['files']['json']}, {result['files']['markdown']}", err=True)


@click.command("sessions")
@click.option("--data", "data", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help=f"LoCoMo-format JSON (default: ${DATA_ENV} or ../shared/bench/locomo-dev.json)")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="only the first N conversations")
@click.option("--questions", type=click.IntRange(min=1), default=None,
              help="only the first N questions (with evidence) per conversation")
@click.option("--k", "ks", default="5,10,20", show_default=True, callback=parse_ks,
              help="cut-offs for Recall@k")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("bench-results"), show_default=True,
              help="folder for sessions-<timestamp>.json and .md")
@click.option("--no-direct", is_flag=True, help="skip the direct-ingest comparison")
@click.option("--curated", is_flag=True,
              help="also remember LoCoMo's observations as curated memories and score them")
@click.option("--variant", "variants", multiple=True, metavar="'NAME: KEY=VALUE[, ...]'",
              help="also score a variant on the session memories (repeatable)")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="a setting for both daemons, e.g. sessions.min_substantive_turns=5")
@click.option("--json", "as_json", is_flag=True, help="print the JSON result, not the report")
@click.option("-q", "--quiet", is_flag=True, help="no progress on stderr")
def sessions(data: Path | None, limit: int | None, questions: int | None,
             ks: tuple[int, ...], out: Path, no_direct: bool, curated: bool,
             variants: tuple[str, ...], settings: tuple[str, ...], as_json: bool,
             quiet: bool) -> None:  # fmt: skip
    """LoCoMo replayed as Claude Code sessions ended through the session-end hook, scored
    beside the same turns remembered one by one."""

    from mnemonist.bench.ablation import parse_variant
    from mnemonist.bench.sessions import render_markdown, run_sessions

    try:
        parsed = [parse_variant(v) for v in variants]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--variant") from None
    overrides = parse_settings(settings)
    result = run_sessions(resolve_data(data), limit_conversations=limit,
                          limit_questions=questions, ks=ks, overrides=overrides,
                          progress=not quiet, out_dir=out, direct=not no_direct,
                          curated=curated, variants=parsed)
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(render_markdown(result))
        click.echo(f"written: {result['files']['json']}, {result['files']['markdown']}", err=True)
