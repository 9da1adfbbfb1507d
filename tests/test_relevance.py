"""Calibrated relevance (search/relevance.py): the shipped model, its checksum, the choice of
what to inject, and recall's "nothing relevant, nothing returned" through the real API with
the real embedding model."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import run_daemon
from mnemonist.bench.offtopic_prompts import NONSENSE
from mnemonist.bench.synthetic import SyntheticCorpus
from mnemonist.cli.main import cli
from mnemonist.search import relevance
from mnemonist.search.relevance import (
    FEATURES,
    QUERY_FEATURES,
    ModelError,
    choose,
    load_model,
    model_from_json,
)

pytestmark = pytest.mark.both_stores


def test_the_shipped_model_loads_and_its_checksum_holds() -> None:
    data = json.loads(relevance.MODEL_PATH.read_text())
    model = model_from_json(data)
    assert data["features"] == list(FEATURES) and data["query_features"] == list(QUERY_FEATURES)
    # fitted with cross-validation by conversation, on data named by its hash
    assert len(data["meta"]["data_sha256"]) == 64 and len(data["meta"]["conversations"]) >= 2
    assert 0 < data["meta"]["hook_selection"]["hit"] <= 1
    x = np.zeros((3, len(FEATURES)))
    p = model.predict(x)
    assert p.shape == (3,) and np.all((p >= 0) & (p <= 1))


def test_a_changed_model_file_is_refused(tmp_path: Path) -> None:
    data = json.loads(relevance.MODEL_PATH.read_text())
    tampered = copy.deepcopy(data)
    tampered["hit"]["init"] += 1.0
    with pytest.raises(ModelError, match="checksum"):
        model_from_json(tampered)
    other = copy.deepcopy(data)
    other["features"] = [*data["features"][:-1], "something_else"]
    other["sha256"] = relevance.checksum(other)
    with pytest.raises(ModelError, match="other features"):
        model_from_json(other)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data))
    assert load_model(path).answerable.bias == model_from_json(data).answerable.bias


def test_choose_gives_nothing_below_the_gate_and_few_after_a_confident_first() -> None:
    assert choose([0.1, 0.05], gate=0.2, marginal=0.05, cap=5) == []
    assert choose([], gate=0.2, marginal=0.05, cap=5) == []
    # a confident first leaves little chance for the next: 0.3 × (1 - 0.9) = 0.03 < 0.05
    assert choose([0.9, 0.3, 0.2], gate=0.2, marginal=0.05, cap=5) == [0]
    # several middling ones are all given, best first, within the cap
    assert choose([0.2, 0.3, 0.25, 0.22], gate=0.2, marginal=0.05, cap=3) == [1, 2, 3]
    assert choose([0.9, 0.3], gate=0.2, marginal=0.0, cap=5) == [0, 1]


def test_recall_of_a_string_stored_nowhere_returns_nothing(tmp_path: Path) -> None:
    """1,000 unrelated memories, embedded by the real model: a made-up string gets nothing
    (it gets 3 low-scored results without the rule), while a real question still gets its
    answer, and asking with an explicit min_relevance of 0 turns the rule off."""
    with run_daemon(tmp_path / "home") as live:
        body = [m.request_body() for m in SyntheticCorpus(seed=3).generate(1000)]
        for start in range(0, len(body), 250):
            resp = live.http.post("/api/memory/import", json={"items": body[start:start + 250]})
            assert resp.status_code in (200, 201), resp.text
        answer = live.remember("Deploys to production happen on Tuesdays after the standup")
        live.flush()
        for text in ("ZEBRA-QUOKKA-4471", *NONSENSE[1::2][:5]):
            got = live.recall(text, limit=5)
            assert got["count"] == 0 and got["results"] == [], (text, got["results"])
            assert got["answerable"] is not None and got["answerable"] < 0.05
        raw = live.recall("ZEBRA-QUOKKA-4471", limit=5, min_relevance=0)
        assert raw["count"] == 5  # the nearest vectors, as before: the rule made the difference
        asked = live.recall("when do we deploy to production?", limit=5)
        assert asked["answerable"] > 0.5
        assert asked["results"][0]["id"] == answer["id"]
        assert 0 < asked["results"][0]["relevance"] <= 1
        strict = live.recall("when do we deploy to production?", limit=5, min_relevance=0.2)
        assert all(r["relevance"] >= 0.2 for r in strict["results"])
        assert strict["count"] < asked["count"]


def test_the_cli_prints_relevance_and_takes_min_relevance(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home") as live:
        live.remember("The release train leaves every second Tuesday")
        live.remember("The office plants are watered on Fridays")
        live.flush()

        def recall(*args: str) -> str:
            out = CliRunner().invoke(cli, ["--url", live.url, "recall", *args],
                                     catch_exceptions=False)
            assert out.exit_code == 0, out.output
            return out.output

        found = recall("when does the release train leave?")
        first = found.splitlines()[0]
        assert "release train" in first and 0 < float(first.split()[0]) <= 1
        assert recall("ZEBRA-QUOKKA-4471").strip() == "no memories found"
        strict = recall("when does the release train leave?", "--min-relevance", "0.999")
        assert strict.strip() == "no memories found"  # the bar reaches the daemon
        help_text = CliRunner().invoke(cli, ["recall", "--help"]).output
        assert "--min-relevance" in help_text


def test_min_relevance_is_validated(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home") as live:
        resp = live.http.post("/api/memory/recall", json={"query": "x", "min_relevance": 2})
        assert resp.status_code == 400 and "min_relevance" in resp.text


def test_terms_held_are_counted_as_the_texts_words_hold_them() -> None:
    """A text's token ids are kept as a tuple (a fifth of a set's memory, kept for 8,192
    texts); a query term is held when all its ids are the text's, as with sets."""
    from mnemonist.search import relevance_features as rf

    texts = ["The deploy went out on Tuesday after the standup.",
             "Deployments are frozen until the 3rd; Ana's team owns the runbook.",
             "what's the weather like in next.js land?", "Nothing to see here."]
    terms = ["deployed", "tuesday", "ana's", "next.js", "runbook", "weather", "zebra"]
    facts = rf._facts_of(texts)
    assert all(isinstance(f[0], tuple) and len(set(f[0])) == len(f[0]) for f in facts)
    wanted = [frozenset(ids) for ids in rf._WORDS.encode_many(terms)]
    by_sets = [sum(1 for t in wanted if t and t <= frozenset(ids))
               for ids in rf._WORDS.encode_many(texts)]
    assert rf._held(terms, [f[0] for f in facts]) == by_sets
    assert by_sets[0] >= 2 and by_sets[3] == 0  # deploy and Tuesday; nothing held
    assert any(len(t) > 1 for t in wanted)  # a term of more than one token is asked too
