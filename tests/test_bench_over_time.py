"""`mnemonist bench over-time`: the generated stream of changing facts, and the benchmark run
through the real daemon in-process."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

from click.testing import CliRunner

from mnemonist.bench.over_time import run_over_time
from mnemonist.bench.over_time_set import build, max_facts, value_held
from mnemonist.cli.main import cli
from mnemonist.text.tokens import content_tokens

RATES = ("stale_above_current", "current_at_1", "current_in_top10", "stale_in_top10",
         "hook_stale_injected", "hook_current_injected")


def _words(text: str, *drop: str) -> set[str]:
    """Content words of `text` without those of the phrases in `drop` (subject, values)."""
    dropped = {w for phrase in drop for w in content_tokens(phrase)}
    return set(content_tokens(text)) - dropped


def test_the_stream_is_deterministic_from_its_seed() -> None:
    assert build(7) == build(7)
    assert build(3, facts=5, fillers=20) == build(3, facts=5, fillers=20)
    assert build(7).statements != build(8).statements


def test_the_stream_is_well_formed() -> None:
    stream = build(7)
    facts = {f.key: f for f in stream.facts}
    by_key = {s.key: s for s in stream.statements}
    assert len(facts) == max_facts() >= 30
    assert len(stream.fillers()) == 200
    assert len(by_key) == len(stream.statements)  # keys unique
    assert len({s.content for s in stream.statements}) == len(stream.statements)
    times = [s.occurred_at for s in stream.statements]
    assert all(a < b for a, b in pairwise(times))
    assert {f.change for f in facts.values()} == {"replacement", "negation"}
    for fact in facts.values():
        t0, t1, t2 = (by_key[k] for k in fact.statement_keys())
        assert t0.occurred_at < t1.occurred_at < t2.occurred_at, fact.key
        assert fact.old != fact.new
        old, new = fact.old.lower(), fact.new.lower()
        c0, c1, c2 = (s.content.lower() for s in (t0, t1, t2))
        assert old in c0 and new in c1 and new in c2 and old not in c1 + c2, fact.key
        if fact.change == "negation":
            assert {fact.old, fact.new} == {"enabled", "disabled"}
        # other words each time, not one value swapped into the same sentence
        w0, w1, w2 = (_words(s.content, fact.subject, fact.old, fact.new) for s in (t0, t1, t2))
        assert w1 - w0 and w2 - w1 and w2 - w0, (t0.content, t1.content, t2.content)
    asked = {q.fact for q in stream.queries}
    assert asked == set(facts)
    for fact in facts:
        assert 1 <= sum(1 for q in stream.queries if q.fact == fact) <= 2
    for q in stream.queries:
        assert q.current and q.stale and not set(q.current) & set(q.stale)
        assert set(q.current) | set(q.stale) <= set(facts[q.fact].statement_keys())
        assert all(by_key[k].value == facts[q.fact].new for k in q.current)
        assert all(by_key[k].value == facts[q.fact].old for k in q.stale)


def test_a_rewritten_memory_is_judged_by_the_value_it_names() -> None:
    fact = next(f for f in build(7).facts if f.kind == "home-city")
    name = fact.subject
    assert value_held(f"{name} moved from {fact.old} to {fact.new}", fact) == "current"
    assert value_held(f"{name} lives in {fact.old}", fact) == "stale"
    assert value_held(f"Someone else lives in {fact.new}", fact) is None


def test_a_small_run_through_the_daemon(tmp_path: Path) -> None:
    report = run_over_time(5, facts=4, fillers=10, settle_s=0, home=tmp_path / "home")
    assert (report["facts"], report["fact_statements"], report["fillers"]) == (4, 12, 10)
    assert report["queries"] == len(report["per_query"]) >= 4
    for name in RATES:
        assert 0.0 <= report[name] <= 1.0, name
    assert 0.0 < report["live_rows_per_fact"] <= 3.0
    # the labels reach the daemon's answers: the current value is found, ranks are real
    assert report["current_in_top10"] > 0
    rows = report["per_query"]
    for row in rows:
        for rank in (row["current_rank"], row["stale_rank"]):
            assert rank is None or 1 <= rank <= 10
        assert row["current_at_1"] == (row["current_rank"] == 1)
    above = sum(1 for r in rows if r["stale_above_current"]) / len(rows)
    assert report["stale_above_current"] == round(above, 3)
    assert report["hook_current_injected"] == round(
        sum(1 for r in rows if r["hook"]["current"]) / len(rows), 3)


def test_the_cli_prints_the_json_report() -> None:
    out = CliRunner().invoke(cli, ["bench", "over-time", "--facts", "3", "--fillers", "5",
                                   "--seed", "2", "--json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["facts"] == 3 and report["seed"] == 2
    assert 0.0 <= report["stale_above_current"] <= 1.0
    assert report["goal"] == {"stale_above_current": 0.05, "live_rows_per_fact": 1.1}
    bad = CliRunner().invoke(cli, ["bench", "over-time", "--facts", str(max_facts() + 1)])
    assert bad.exit_code == 2 and "--facts" in bad.output
