"""`mnemonist bench agent-memory`: the labelled agent-memory set, scored with variants."""

from __future__ import annotations

import json

from click.testing import CliRunner

from mnemonist.bench.agent_memory_set import MEMORIES, QUESTIONS
from mnemonist.cli.main import cli


def test_every_question_names_memories_of_the_corpus():
    assert len(QUESTIONS) >= 30
    for question, keys in QUESTIONS:
        assert keys and keys <= set(MEMORIES), question


def test_the_bench_scores_the_default_and_each_variant():
    out = CliRunner().invoke(cli, ["bench", "agent-memory", "--json",
                                   "--variant", "keyword-only: search.alpha=0"],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["questions"] == len(QUESTIONS)
    default, keyword = report["rows"]
    assert (default["name"], keyword["name"]) == ("default", "keyword-only")
    assert keyword["settings"] == {"search.alpha": 0}
    for row in report["rows"]:
        assert 0.0 <= row["recall@1"] <= row["recall@5"] <= row["recall@10"] <= 1.0
    # paraphrased questions: the hybrid ranks better than words alone
    assert default["mrr"] > keyword["mrr"]
