"""Time-aware recall over real HTTP with a fixed `now`, and the temporal benchmark."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mnemonist.cli.main import cli

pytestmark = pytest.mark.both_stores

NOW = "2026-11-18T15:00:00Z"  # a Wednesday
DEPLOYS = {
    "2026-11-10T11:00:00Z": "Deployed payments-api version 4.2 to production",  # last week
    "2026-09-17T11:00:00Z": "Deployed search-indexer version 1.9 to production",  # 2 months ago
    "2026-03-05T11:00:00Z": "Deployed auth-gateway version 7.0 to production",  # in March
    "2025-06-20T11:00:00Z": "Deployed mail-worker version 2.3 to production",
}


@pytest.fixture(scope="module")
def ids(live):
    """The four deploys, stored once for the module (each test may run first, or alone)."""
    stored = {when: live.remember(text, occurred_at=when, project="ops")["id"]
              for when, text in DEPLOYS.items()}
    live.flush()
    return stored


def test_a_relative_time_prefers_its_window(live, ids):
    for question, when in [
        ("which service did we deploy last week?", "2026-11-10T11:00:00Z"),
        ("which service did we deploy two months ago?", "2026-09-17T11:00:00Z"),
        ("which service did we deploy in March?", "2026-03-05T11:00:00Z"),
    ]:
        out = live.recall(question, project="ops", now=NOW)
        assert out["results"][0]["id"] == ids[when], question
        assert out["time_window"]["mode"] == "prefer"
        assert len(out["results"]) == 4  # a preference, not a filter
    window = live.recall("which service did we deploy last week?", project="ops",
                         now=NOW)["time_window"]
    assert window == {"expression": "last week", "start": "2026-11-09T00:00:00.000Z",
                      "end": "2026-11-16T00:00:00.000Z", "mode": "prefer"}


def test_time_filter_keeps_only_the_window_and_now_moves_it(live, ids):
    out = live.recall("which service did we deploy last week?", project="ops", now=NOW,
                      time_filter=True)
    assert [r["content"] for r in out["results"]] == [DEPLOYS["2026-11-10T11:00:00Z"]]
    later = live.recall("which service did we deploy last week?", project="ops",
                        now="2026-09-24T09:00:00Z", time_filter=True)
    assert [r["content"] for r in later["results"]] == [DEPLOYS["2026-09-17T11:00:00Z"]]


def test_a_phrase_that_names_no_time_changes_nothing(live, ids):
    out = live.recall("which service did we deploy since the migration", project="ops", now=NOW)
    assert out["time_window"] is None and len(out["results"]) == 4


def test_time_words_are_not_required_by_the_keyword_leg(live):
    made = live.remember("Rotated the staging certificates", project="certs",
                         occurred_at="2026-11-17T08:00:00Z")
    live.flush()
    out = live.recall("what did we rotate yesterday", project="certs", now=NOW)
    assert out["results"][0]["id"] == made["id"]
    assert out["results"][0]["scores"]["keyword"] == 1.0  # "rotate" alone carried the match


def test_bad_now_is_rejected(live):
    resp = live.http.post("/api/memory/recall", json={"query": "x", "now": "someday"})
    assert resp.status_code == 400 and "now" in resp.json()["message"]


def test_recall_returns_context_from_the_source(live):
    for i, line in enumerate(["we need a venue", "the old mill is free in June",
                              "book the old mill then", "and order catering"]):
        live.remember(line, source_id="party-chat", project="party",
                      occurred_at=f"2026-05-01T10:0{i}:00Z")
    live.flush()
    out = live.recall("when is the old mill free", project="party", context=1, limit=1)
    hit = out["results"][0]
    assert hit["content"] == "the old mill is free in June"
    assert [c["content"] for c in hit["context"]["before"]] == ["we need a venue"]
    assert [c["content"] for c in hit["context"]["after"]] == ["book the old mill then"]


def test_temporal_benchmark_shows_the_gain():
    out = CliRunner().invoke(cli, ["bench", "temporal", "--json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["queries"] >= 40 and report["memories"] >= 200
    rows = report["results"]
    assert rows["prefer, weight 1.0"]["mrr"] > rows["time-aware off"]["mrr"] + 0.3
