"""`mnemonist bench inject` (what the prompt hook hands an agent) and `mnemonist bench
relevance` (fit the calibrated relevance model), both on LoCoMo-format data."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from mnemonist.cli.bench_locomo import data_option, parse_settings, resolve_data


@click.command("inject")
@data_option
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="only the first N conversations")
@click.option("--questions", type=click.IntRange(min=1), default=None,
              help="only the first N questions (with evidence) per conversation")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("bench-results"), show_default=True,
              help="folder for inject-<timestamp>.json and .md")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="a setting for the run's daemon, e.g. hooks.promptMinRelevance=0.3")
@click.option("--json", "as_json", is_flag=True, help="print the JSON result, not the report")
@click.option("-q", "--quiet", is_flag=True, help="no progress on stderr")
def inject(data: Path | None, limit: int | None, questions: int | None, out: Path,
           settings: tuple[str, ...], as_json: bool, quiet: bool) -> None:
    """Replay questions through the real session-start and prompt hooks (a fresh session per
    question): hit, memories per question, precision, off-topic rate, hook latency."""
    from mnemonist.bench.inject import markdown, run_inject
    from mnemonist.settings import ConfigError

    try:
        result = run_inject(resolve_data(data), limit_conversations=limit,
                            limit_questions=questions, overrides=parse_settings(settings) or None,
                            progress=not quiet, out_dir=out)
    except ConfigError as exc:
        click.echo(f"mnemonist: configuration error: {exc}", err=True)
        sys.exit(2)
    click.echo(json.dumps(result, indent=2) if as_json else markdown(result))


@click.command("relevance")
@data_option
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="only the first N conversations")
@click.option("--write", "write", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="write the fitted model here (e.g. to replace the shipped one:"
              " src/mnemonist/search/relevance_model.json)")
@click.option("--write-folds", "folds", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="write each cross-validation model here as"
              " <conversation>.json (for bench locomo --held-out-models)")
@click.option("--ablate", is_flag=True,
              help="also cross-validate the ranker with each group of features held constant")
@click.option("--json", "as_json", is_flag=True, help="print the whole report as JSON")
@click.option("-q", "--quiet", is_flag=True, help="no progress on stderr")
def relevance(data: Path | None, limit: int | None, write: Path | None, folds: Path | None,
              ablate: bool, as_json: bool, quiet: bool) -> None:
    """Fit the calibrated relevance model and the learned ranker and report them,
    cross-validated by conversation: the ranking's recall, calibration, what the hook
    settings hand over, what recall's "nothing relevant" rule costs."""
    from mnemonist.bench.relevance_fit import run_relevance_fit
    from mnemonist.model.config import HooksConfig, SearchConfig

    hooks, search = HooksConfig(), SearchConfig()
    report = run_relevance_fit(
        resolve_data(data), write, gate=hooks.prompt_min_relevance,
        marginal=hooks.prompt_marginal_relevance, cap=hooks.prompt_max_memories,
        min_answerable=search.min_answerable, limit_conversations=limit, progress=not quiet,
        folds_dir=folds, ablate=ablate)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    sel = report["hook_selection"]
    click.echo(f"rows fitted: {report['fitted_rows']} ({report['cross_validation']})")
    click.echo("calibration (predicted -> observed): " + ", ".join(
        f"{b['predicted']:.3f}->{b['observed']:.3f} (n={b['n']})"
        for b in report["calibration"]))
    click.echo(f"prompt hook (gate {sel['gate']}, marginal {sel['marginal']}, cap {sel['cap']}):"
               f" hit {sel['hit']:.3f}, {sel['memories_per_question']:.2f} memories/question,"
               f" precision {sel['precision']:.3f}, off-topic {sel['offtopic_with_any']:.3f};"
               f" agent-memory hit {sel['agent_memory']['hit']:.3f}")
    for name, r in report["ranking"].items():
        click.echo(f"{name} ({r['questions']} questions): " + "; ".join(
            f"{way} R@5 {r[way]['recall@5']:.4f} R@10 {r[way]['recall@10']:.4f}"
            f" MRR {r[way]['mrr']:.4f}" for way in ("ranker", "fused")))
    for name, r in report.get("ablations", {}).items():
        click.echo(f"without {name}: R@5 {r['locomo']['recall@5']:.4f} R@10"
                   f" {r['locomo']['recall@10']:.4f}, agent-memory MRR"
                   f" {r['agent_memory']['mrr']:.4f}")
    for m, r in report["recall_min_answerable"].items():
        click.echo(f"recall with min_answerable {m}: R@10 {r['recall_at_10']:.4f}, strings"
                   f" stored nowhere answered {r['nonsense_with_any']:.3f}, off-topic"
                   f" {r['offtopic_with_any']:.3f}")
    if write is not None:
        click.echo(f"written: {write}", err=True)


@click.command("feedback")
@data_option
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="only the first N conversations")
@click.option("--questions", type=click.IntRange(min=1), default=None,
              help="only the first N questions (categories 1-4) per conversation")
@click.option("--held-out-models", "held_out", default=None,
              type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="rank each conversation by DIR/<conversation>.json (bench relevance"
              " --write-folds)")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="a setting for the run's daemon, e.g. predictor.feedback_similarity=0.9")
@click.option("--json", "as_json", is_flag=True, help="print the whole report as JSON")
@click.option("-q", "--quiet", is_flag=True, help="no progress on stderr")
def feedback(data: Path | None, limit: int | None, questions: int | None,
             held_out: Path | None, settings: tuple[str, ...], as_json: bool,
             quiet: bool) -> None:
    """Ratings on half the questions, then those asked again in other words: what the
    learned ranker gained there and lost elsewhere, with honest and with inverted ratings."""
    from mnemonist.bench.feedback import markdown, run_feedback

    report = run_feedback(resolve_data(data), limit_conversations=limit,
                          limit_questions=questions, held_out=held_out, progress=not quiet,
                          overrides=parse_settings(settings) or None)
    click.echo(json.dumps(report, indent=2, default=sorted) if as_json else markdown(report))
