"""`mnemonist bench inject`: questions replayed through the real session-start and prompt
hooks on a small synthetic LoCoMo-format file; the numbers are in range and follow what the
hooks did (every injected id is a memory of the question's conversation)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mnemonist.bench.inject import Tally, markdown
from mnemonist.cli.bench_inject import inject
from test_bench_locomo import write_data


def test_tally_counts_hits_precision_and_what_session_start_gave() -> None:
    t = Tally()
    t.add(["a", "b"], {"a"}, 0.01)
    t.add([], {"c"}, 0.02, at_start=["c"])
    t.add(["d"], {"e"}, 0.03)
    r = t.report()
    assert r["questions"] == 3 and r["hit"] == round(1 / 3, 4)
    assert r["in_context"] == round(2 / 3, 4)
    assert r["memories_per_question"] == 1.0 and r["precision"] == round(1 / 3, 4)
    assert r["latency_ms"]["count"] == 3


def test_the_command_replays_questions_through_the_hooks(tmp_path: Path) -> None:
    data = write_data(tmp_path)
    out = tmp_path / "results"
    result = CliRunner().invoke(inject, ["--data", str(data), "--out", str(out), "--json",
                                         "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    loco = report["locomo"]
    assert loco["questions"] >= 3
    for key in ("hit", "in_context", "precision"):
        assert 0.0 <= loco[key] <= 1.0
    assert loco["hit"] <= loco["in_context"]
    assert 0.0 <= loco["memories_per_question"] <= 5.0
    assert loco["latency_ms"]["p95"] > 0
    off = report["offtopic"]
    # every off-topic prompt went to every conversation's folder
    assert off["sent"] == off["prompts"] * len(report["conversations"])
    assert 0.0 <= off["with_any"] <= 1.0
    assert report["agent_memory"]["questions"] == 33
    assert report["hooks"]["promptMinRelevance"] == 0.2
    files = list(out.glob("inject-*.md"))
    assert len(files) == 1 and "Off-topic prompts" in files[0].read_text()
    assert "| LoCoMo, categories 1-4 |" in markdown(report)
