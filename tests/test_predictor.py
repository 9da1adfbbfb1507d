"""The learned ranker learning from a home (service/predictor.py, search/adaptation.py): pairs
recorded from ratings, reads after a recall and session use; a question asked again in other
words follows its ratings; inverted ratings are not trusted; the home's trees take over only
while they beat the shipped ranker on held-back pairs; pairs leave with their memory and with
age. Real daemon, real embedding model, real HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import run_daemon
from mnemonist.cli.main import cli
from mnemonist.model.config_predictor import PredictorConfig
from mnemonist.search import adaptation
from mnemonist.search.relevance import FEATURES, load_model
from mnemonist.store.predictor_pairs import Labelled, held_out

pytestmark = pytest.mark.both_stores

NOTES = [
    "Deploys to production happen on Tuesdays after the standup",
    "Production deploys need two approvals in the release channel",
    "The deploy pipeline runs on GitHub Actions",
    "The staging database is refreshed nightly from a production snapshot",
    "We deploy the marketing frontend with Vercel",
    "Alice owns the billing service and its on-call rota",
    "The billing service retries failed charges three times",
    "Our error budget for the checkout API is 0.1 percent a month",
]
ASKED = "how do we ship a release to production?"
AGAIN = "how do we ship a new release to production"


def _store(live) -> dict[str, str]:
    ids = {text: live.remember(text, project="ops")["id"] for text in NOTES}
    live.flush()
    return ids


def _rank(live, query: str, memory_id: str) -> int:
    got = live.recall(query, project="ops", limit=8, min_relevance=0)
    order = [r["id"] for r in got["results"]]
    return order.index(memory_id) if memory_id in order else 99


def _feedback(live, memory_id: str, helpful: bool, query: str = ASKED) -> dict:
    resp = live.http.post(f"/api/memory/{memory_id}/feedback",
                          json={"helpful": helpful, "query": query})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_a_rating_is_a_training_pair_and_the_question_asked_again_follows_it(
        tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home") as live:
        ids = _store(live)
        staging = ids[NOTES[3]]
        before = _rank(live, AGAIN, staging)
        assert before > 0  # not the answer the ranker puts first
        out = _feedback(live, staging, True)
        assert out["training_pair"]
        rows = live.query("SELECT memory_id, label, source, features, query, query_vector"
                          " FROM predictor_pairs")
        assert len(rows) == 1 and rows[0]["memory_id"] == staging
        assert rows[0]["label"] == 1.0 and rows[0]["source"] == "explicit"
        assert len(json.loads(rows[0]["features"])) == len(FEATURES)
        assert rows[0]["query"] == ASKED and rows[0]["query_vector"] is not None
        # the same question in other words: the rated memory comes first now
        assert _rank(live, AGAIN, staging) == 0
        # a question about something else does not move it
        other = live.recall("who owns billing?", project="ops", limit=3)
        assert other["results"][0]["id"] == ids[NOTES[5]]
        # a memory rated unhelpful for the question is less relevant when it is asked again
        second = live.recall(AGAIN, project="ops", limit=8, min_relevance=0)["results"][1]
        assert second["id"] != staging
        _feedback(live, second["id"], False)
        again = {r["id"]: r for r in live.recall(AGAIN, project="ops", limit=8,
                                                min_relevance=0)["results"]}
        assert again[second["id"]]["relevance"] < 0.5 * second["relevance"]


def test_a_memory_recall_does_not_rank_for_the_query_gives_no_pair(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home", {"predictor": {"depth": 10}}) as live:
        ids = _store(live)
        for i in range(12):  # more memories than the ranker looks at, all about deploys
            live.remember(f"Deploy checklist item {i}: production release step {i}",
                          project="ops")
        live.flush()
        out = _feedback(live, ids[NOTES[5]], True, "production release deploy step")
        assert out["training_pair"] is None
        assert live.query("SELECT COUNT(*) AS n FROM predictor_pairs")[0]["n"] == 0


def test_reading_a_result_after_a_recall_is_an_opened_pair(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home") as live:
        ids = _store(live)
        got = live.recall(ASKED, project="ops", limit=3)
        chosen = got["results"][1]["id"]
        assert live.http.get(f"/api/memory/{chosen}").status_code == 200
        live.http.get(f"/api/memory/{chosen}")  # a second read of the same result: one pair
        unrelated = ids[NOTES[6]]  # not a result of that recall
        assert unrelated not in {r["id"] for r in got["results"]}
        live.http.get(f"/api/memory/{unrelated}")
        rows = live.query("SELECT memory_id, label, source FROM predictor_pairs")
        assert [(r["memory_id"], r["label"], r["source"]) for r in rows] == \
            [(chosen, 1.0, "opened")]


def test_what_a_session_was_handed_becomes_used_and_ignored_pairs(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home") as live:
        _store(live)
        # no session start: its block would already hold these memories, and the prompt hook
        # never hands over again what the session has
        session = {"session_id": "s-1", "project": "ops", "harness": "claude-code"}
        first = live.http.post("/api/hooks/user-prompt-submit",
                               json={**session, "prompt": "When do deploys to production"
                                     " happen, and who approves them?"}).json()
        handed = first["memories"]
        assert handed, first
        # a later prompt of the session surfaces the first memory again: it was used
        live.http.post("/api/hooks/user-prompt-submit",
                       json={**session, "prompt": "remind me when production deploys happen"})
        end = live.http.post("/api/hooks/session-end", json={**session, "reason": "exit"})
        assert end.status_code == 200, end.text
        rows = live.query("SELECT memory_id, label, source FROM predictor_pairs"
                          " WHERE session_key IS NOT NULL")
        by_memory = {r["memory_id"]: (r["label"], r["source"]) for r in rows}
        assert set(handed) <= set(by_memory)
        hits = {r["memory_id"]: r["fts_hit_count"] for r in live.query(
            "SELECT memory_id, fts_hit_count FROM session_memories WHERE was_injected = 1")}
        for mid in handed:
            used = hits[mid] >= 2
            assert by_memory[mid] == ((1.0, "used") if used else (0.0, "ignored"))


def test_pairs_leave_with_a_purged_memory_and_with_age(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home") as live:
        ids = _store(live)
        _feedback(live, ids[NOTES[0]], True)
        _feedback(live, ids[NOTES[1]], False)
        assert live.query("SELECT COUNT(*) AS n FROM predictor_pairs")[0]["n"] == 2
        resp = live.http.request("DELETE", f"/api/memory/{ids[NOTES[0]]}",
                                 json={"purge": True, "reason": "test"})
        assert resp.status_code == 200, resp.text
        left = live.query("SELECT memory_id FROM predictor_pairs")
        assert [r["memory_id"] for r in left] == [ids[NOTES[1]]]
        live.write("UPDATE predictor_pairs SET created_at = '2020-01-01T00:00:00.000Z'")
        report = live.daemon.retention.sweep()
        assert report.training_pairs == 1
        assert live.query("SELECT COUNT(*) AS n FROM predictor_pairs")[0]["n"] == 0


def test_the_cli_rates_and_reports(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home") as live:
        ids = _store(live)

        def run(*args: str) -> str:
            out = CliRunner().invoke(cli, ["--url", live.url, *args], catch_exceptions=False)
            assert out.exit_code == 0, out.output
            return out.output

        said = run("feedback", ids[NOTES[2]], "--helpful", "--query", ASKED)
        assert "recorded as a training pair" in said
        status = run("predictor", "status")
        assert "ranker in use: shipped" in status and "explicit 1" in status
        trained = json.loads(run("predictor", "train", "--json"))
        assert trained["check"]["pairs"] == 1 and not trained["check"]["active"]
        assert "training pairs" in trained["check"]["reason"]


# -- the guard, on pairs made to order -------------------------------------------------------


def _pairs(n: int, seed: int, *, invert: bool = False, local_rule: bool = True) -> Labelled:
    """Pairs as recall would record them, from a latent goodness (a better match has a higher
    cosine, keyword score, coverage, a better rank), labelled by the shipped ranker's own
    probability (so it is right about them), plus a rule it cannot know: in this home a
    pinned memory always helps."""
    shipped = load_model()
    rng = np.random.default_rng(seed)
    g = rng.uniform(0, 1, n)
    x = np.zeros((n, len(FEATURES)))
    col = FEATURES.index
    for name in ("cos", "vec", "context_cos"):
        x[:, col(name)] = 0.2 + 0.5 * g
    for name in ("kw", "coverage", "score", "rel_top", "source_best"):
        x[:, col(name)] = g
    x[:, col("strength")] = np.log1p(10 * g)
    x[:, col("log_rank")] = np.log1p(np.round(20 * (1 - g)))
    x[:, col("top_cos")], x[:, col("top_coverage")] = 0.7, 1.0
    x[:, col("top_strength")], x[:, col("n_terms")] = np.log1p(10), np.log1p(4)
    x[:, col("source_hits")] = np.log1p(1)
    pinned = rng.uniform(0, 1, n) < 0.3
    x[:, col("pinned")] = pinned
    y = (rng.uniform(0, 1, n) < shipped.hit_of(x)).astype(float)
    if local_rule:
        y[pinned] = 1.0
    if invert:
        y = 1.0 - y
    keys = [f"{seed}/q{i // 5}" for i in range(n)]  # five rated results a query
    held = np.array([held_out(k) for k in keys])
    return Labelled(x, y, held, np.ones(n), ["explicit"] * n, keys)


def test_honest_feedback_with_a_pattern_of_its_own_puts_the_home_ranker_in_use() -> None:
    local, check = adaptation.adapt(load_model(), _pairs(600, 1), PredictorConfig())
    assert check.trusted and check.agreement is not None and check.agreement > 0.55
    assert local is not None and local.size == PredictorConfig().local_trees
    assert check.active and check.local_loss < check.shipped_loss


def test_inverted_feedback_is_not_trusted_and_nothing_is_fitted() -> None:
    local, check = adaptation.adapt(load_model(), _pairs(600, 2, invert=True, local_rule=False),
                                    PredictorConfig())
    assert check.agreement is not None and check.agreement < 0.45
    assert not check.trusted and local is None and not check.active
    assert "disagrees" in check.reason


def test_feedback_that_teaches_nothing_new_leaves_the_shipped_ranker_in_use() -> None:
    """Ratings the shipped ranker already predicts (no pattern of the home's own): the home's
    trees fit only noise, and on the held-back pairs they do not beat the shipped ranker by
    `min_gain`, so they stay in shadow. Every refit judges again this way, so a home ranker in
    use is dropped as soon as the pairs that taught it are outweighed or gone."""
    local, check = adaptation.adapt(load_model(), _pairs(1600, 4, local_rule=False),
                                    PredictorConfig())
    assert check.trusted and local is not None
    assert not check.active and "chance" in check.reason


def test_too_few_pairs_keep_the_shipped_ranker() -> None:
    local, check = adaptation.adapt(load_model(), _pairs(20, 5), PredictorConfig())
    assert local is None and not check.active and "of 40 training pairs" in check.reason


def test_feedback_paths_follow_similar_questions_only() -> None:
    q = np.array([1.0, 0.0], dtype=np.float32)
    near = np.array([0.9, np.sqrt(1 - 0.81)], dtype=np.float32)
    far = np.array([0.5, np.sqrt(0.75)], dtype=np.float32)
    paths = adaptation.feedback_paths(q, [("a", 1.0, 1.0, near), ("b", 0.0, 1.0, near),
                                          ("c", 1.0, 1.0, far), ("d", 0.0, 0.2, near)], 0.8)
    assert paths["a"] == pytest.approx(1.0) and paths["b"] == pytest.approx(-1.0)
    assert "c" not in paths and paths["d"] == pytest.approx(-0.2)
    assert adaptation.moved(0.2, 1.0, 0.5) == pytest.approx(0.6)
    assert adaptation.moved(0.6, -1.0, 0.5) == pytest.approx(0.3)


def test_pairs_in_order_are_counted_within_each_query() -> None:
    p = np.array([0.9, 0.1, 0.2, 0.8, 0.5])
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    # query a: 0.9 above 0.1 (right); query b: 0.2 below 0.8 (wrong); query c: no pair
    assert adaptation.ordered_share(p, y, ["a", "a", "b", "b", "c"]) == 0.5
    assert adaptation.ordered_share(p[:1], y[:1], ["a"]) == 1.0


def test_a_private_memory_handed_to_its_agent_gives_a_pair_at_session_end(
        tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home") as live:
        mine = live.remember("The agent's deploy key rotates every ninety days", project="ops",
                             agent_id="builder")["id"]
        live.flush()
        session = {"session_id": "s-private", "project": "ops", "harness": "claude-code"}
        as_builder = {"X-Mnemonist-Agent": "builder"}
        given = live.http.post("/api/hooks/user-prompt-submit", headers=as_builder, json={
            **session, "prompt": "how often does the deploy key rotate?"}).json()
        assert mine in given["memories"], given
        live.http.post("/api/hooks/session-end", headers=as_builder,
                       json={**session, "reason": "exit"})
        rows = live.query("SELECT source, agent_id FROM predictor_pairs WHERE memory_id = ?",
                          mine)
        assert [(r["source"], r["agent_id"]) for r in rows] == [("ignored", "builder")]


def test_inverted_ratings_through_the_api_leave_recall_as_it_was(tmp_path: Path) -> None:
    """A home that rates every result the wrong way round: once each label has enough pairs,
    the status says the feedback is not trusted, and recall ranks as before any rating."""
    with run_daemon(tmp_path / "home") as live:
        ids = _store(live)
        for i in range(12):
            live.remember(f"Release note {i}: production deploy {i} shipped the checkout API",
                          project="ops")
        live.flush()
        questions = ["how do we ship a release to production?", "who owns billing?",
                     "what is the checkout API error budget?", "where does the deploy run?",
                     "when is the staging database refreshed?", "what did release 3 ship?"]
        before = {q: [r["id"] for r in live.recall(q, project="ops", limit=8,
                                                  min_relevance=0)["results"]]
                  for q in questions}
        for q in questions:  # the two best results called unhelpful, the next three helpful
            for n, mid in enumerate(before[q][:5]):
                _feedback(live, mid, n >= 2, q)
        status = live.http.post("/api/predictor/train").json()["status"]
        check = status["check"]
        assert check["agreement"] is not None and check["agreement"] < 0.55, check
        assert not check["trusted"] and status["ranker"] == "shipped"
        for q in questions:
            after = [r["id"] for r in live.recall(q, project="ops", limit=8,
                                                 min_relevance=0)["results"]]
            assert after == before[q], q
        assert ids  # the notes were stored in the project asked about
