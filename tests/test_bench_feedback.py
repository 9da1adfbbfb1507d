"""`mnemonist bench feedback` on a small LoCoMo-format file: ratings on half the questions,
those asked again in other words, both modes reported, the other half untouched."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mnemonist.bench.feedback import paraphrase
from mnemonist.cli.bench_inject import feedback
from test_bench_locomo import write_data


def test_a_paraphrase_keeps_the_question_and_changes_its_words() -> None:
    asked = "What kind of music did Ava like when she started the band?"
    again = paraphrase(asked)
    assert again == paraphrase(asked)  # the same every run
    assert again != asked and not again.endswith("?")
    assert "enjoy" in again and "type" in again and "began" in again and "Ava" in again


def test_the_command_reports_both_modes_on_both_halves(tmp_path: Path) -> None:
    out = CliRunner().invoke(feedback, ["--data", str(write_data(tmp_path)), "--json", "-q"],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert report["questions"] >= 4
    for mode in ("honest", "inverted"):
        run = report[mode]
        assert run["ratings"] > 0 and run["pairs"]["explicit"] > 0
        for stage in ("before", "after"):
            for half in ("repeated", "elsewhere"):
                got = run[stage][half]
                assert got["questions"] > 0
                assert 0 <= got["recall@5"] <= got["recall@10"] <= 1
    cosine = report["paraphrase_cosine"]
    assert cosine["threshold"] == 0.85 and 0.5 < cosine["median"] < 1.0
    # honest ratings never make the questions they were given for worse
    assert report["honest"]["after"]["repeated"]["recall@5"] >= \
        report["honest"]["before"]["repeated"]["recall@5"]
    text = CliRunner().invoke(feedback, ["--data", str(write_data(tmp_path)), "-q"]).output
    assert "| honest | repeated |" in text and "| inverted | elsewhere |" in text
