"""`mnemonist bench write-gate` (what the write gate and the significance gate would drop) and
`mnemonist bench graph` (the graph's reading of prose against a hand-labelled set)."""

from __future__ import annotations

import json

import click


@click.command("write-gate")
@click.option("--threshold", "thresholds", type=click.FloatRange(0.5, 1.0), multiple=True,
              help="memory.writeGate.threshold values to measure (repeatable; default: 0.8,"
                   " 0.85, 0.9, 0.95)")
@click.option("--seed", type=int, default=7, show_default=True, help="over-time stream seed")
@click.option("--no-sessions", is_flag=True, help="skip the significance gate's sessions")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the tables")
def write_gate(thresholds: tuple[float, ...], seed: int, no_sessions: bool,
               as_json: bool) -> None:
    """The write gate in shadow mode on the memory-over-time stream, hand-written updates and
    restatements (what it would drop), and the significance gate on labelled agent sessions."""
    from mnemonist.bench.write_gate import THRESHOLDS, markdown, run_write_gate

    report = run_write_gate(thresholds or THRESHOLDS, seed, sessions=not no_sessions)
    click.echo(json.dumps(report, indent=2) if as_json else markdown(report))


@click.command("graph")
@click.option("--errors", type=click.IntRange(0), default=0, show_default=True,
              help="also list this many memories the reading got wrong, of each sort")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
def graph(errors: int, as_json: bool) -> None:
    """Precision and recall of the graph's reading of prose (entities, relations, aliases)
    on the hand-labelled set, per kind of text, and its cost per memory."""
    from mnemonist.bench.graph_quality import markdown, score

    report = score(errors=errors)
    click.echo(json.dumps(report, indent=2) if as_json else markdown(report))
