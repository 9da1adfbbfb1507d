"""Sleep replay end to end (docs/graph.md, "Sleep replay"): a real daemon on loopback and the
real embedding model. Two memories that embed alike but whose entities no relation joins get a
proposed `replay` edge (0.4) between their most mentioned entities, never across owners; a
near-identical pair is listed for review and one the text guards stop is not; feedback that
lowers the edge counts as a false positive; the idle trigger runs one cycle per idle period
and none while requests keep coming; turned off, only the on-demand cycle runs; the graph
diagnostics and the dashboard's graph page show the counts. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import LiveDaemon, run_daemon
from mnemonist.api.activity import counts
from mnemonist.graph import replay as sleep_replay
from mnemonist.model.config_consolidation import ConsolidationConfig, ReplayConfig

pytestmark = pytest.mark.both_stores

#: the consolidation engine would merge the restatements before replay sees them; the idle
#: trigger stays out of the way unless a test turns it on
QUIET: dict[str, Any] = {"memory": {"consolidation": {
    "intervalMs": 86400000, "replay": {"enabled": False, "pairsPerCycle": 60}}}}

FALCON = "The Falcon service caches checkout sessions for fifteen minutes before expiry."
FALCON_LOGS = "Falcon writes its logs to Pelican."
KESTREL = "Checkout sessions in Kestrel are cached by Wren for fifteen minutes, then they expire."
KESTREL_REGION = "Kestrel runs in the Dublin region."
#: as alike as KESTREL is to FALCON, but private to an agent: never paired with shop's
OSPREY = "Checkout sessions in Osprey are cached for fifteen minutes, then they expire."
HERON = "The Heron queue retries failed jobs 3 times."
HERON_AGAIN = "The Heron queue retries the failed jobs 3 times."
HERON_FIVE = "The Heron queue retries failed jobs 5 times."  # alike, but another number


def config(**replay: Any) -> dict[str, Any]:
    return {"memory": {"consolidation": {"intervalMs": 86400000, "replay": replay}}}


def seed(live: LiveDaemon, *texts: str, project: str = "shop") -> dict[str, str]:
    ids = {t: live.remember(t, project=project)["id"] for t in texts}
    live.flush()
    return ids


def replay_now(live: LiveDaemon, rng_seed: int = 7) -> dict[str, Any]:
    live.daemon.sleep_replay.rng = random.Random(rng_seed)
    resp = live.http.post("/api/repair/sleep-replay")
    assert resp.status_code == 200, resp.text
    return resp.json()


def entity_id(live: LiveDaemon, name: str) -> str:
    rows = live.query("SELECT id FROM entities WHERE canonical_name = ?", name.lower())
    assert len(rows) == 1, (name, rows)
    return rows[0][0]


def replay_edges(live: LiveDaemon) -> list[Any]:
    return live.query("SELECT source_entity_id, target_entity_id, relation_type, confidence,"
                      " note, boost FROM relations WHERE reason = 'replay'")


def diagnostics(live: LiveDaemon) -> dict[str, Any]:
    resp = live.http.get("/api/diagnostics/graph")
    assert resp.status_code == 200, resp.text
    return resp.json()["sleep_replay"]


def cycles(live: LiveDaemon) -> int:
    """Cycles so far, read from the store (a request would count as activity)."""
    rows = live.query("SELECT value FROM graph_state WHERE key = ?", sleep_replay.STATE_KEY)
    return 0 if not rows else int(json.loads(rows[0][0])["cycles"])


def wait_for(check: Callable[[], bool], seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_alike_memories_whose_entities_share_no_relation_get_a_replay_edge(
        daemon_store: str, tmp_path: Path):
    with run_daemon(tmp_path / "home", QUIET) as live:
        ids = seed(live, FALCON, FALCON_LOGS, KESTREL, KESTREL_REGION)
        live.remember(OSPREY, project="shop", agent_id="ana")
        live.flush()
        falcon, kestrel = entity_id(live, "Falcon"), entity_id(live, "Kestrel")
        assert not live.query(
            "SELECT 1 FROM relations WHERE ? IN (source_entity_id, target_entity_id)"
            " AND ? IN (source_entity_id, target_entity_id)", falcon, kestrel)

        cycle = replay_now(live)
        assert cycle["edges_proposed"] == 1 and cycle["communities"] is not None
        assert cycle["pairs_compared"] >= 6  # the shop's four memories, every pair
        edges = replay_edges(live)
        assert len(edges) == 1
        source, target, kind, confidence, note, _ = edges[0]
        # the most mentioned entity of each side: Kestrel (2 memories), not Wren (1)
        assert {source, target} == {falcon, kestrel} and source < target
        assert (kind, confidence) == ("related_to", 0.4)
        assert ids[FALCON] in note and ids[KESTREL] in note
        osprey = entity_id(live, "Osprey")  # another owner's: never paired with shop's
        assert not live.query("SELECT 1 FROM relations WHERE reason = 'replay' AND ? IN"
                              " (source_entity_id, target_entity_id)", osprey)

        # visible like any edge (below the walks' default minimum, so asked for)
        hood = live.http.get("/api/graph/neighbourhood", params={
            "entity": "Falcon", "project": "shop", "min_confidence": 0}).json()
        assert any(e["reason"] == "replay" for e in hood["edges"]), hood

        again = replay_now(live)
        assert again["edges_proposed"] == 0
        assert again["not_proposed"].get("already related", 0) >= 1
        assert len(replay_edges(live)) == 1

        report = diagnostics(live)
        assert (report["cycles"], report["edges_proposed"], report["present"]) == (2, 1, 1)
        assert report["pairs_compared"] == cycle["pairs_compared"] + again["pairs_compared"]
        assert report["false_positive_rate"] == 0.0
        assert report["last_cycle"]["edges_proposed"] == 0

        # a relation stated later takes the proposed row over
        stated = live.http.post("/api/graph/relations", json={
            "source": "Falcon" if source == falcon else "Kestrel",
            "target": "Kestrel" if source == falcon else "Falcon",
            "relation_type": "related_to", "reason": "they share the checkout cache",
            "project": "shop"})
        assert stated.status_code == 200, stated.text
        assert stated.json()["replaced_reason"] == "replay"
        assert not replay_edges(live)


def test_a_near_identical_pair_is_listed_for_review_and_a_guarded_one_is_not(
        daemon_store: str, tmp_path: Path):
    with run_daemon(tmp_path / "home", QUIET) as live:
        ids = seed(live, HERON, HERON_AGAIN, HERON_FIVE)
        cycle = replay_now(live)
        assert cycle["pairs_compared"] == 3
        assert cycle["duplicates_flagged"] == 1 and cycle["edges_proposed"] == 0
        assert set(cycle["guarded"]) == {"different numbers"}  # 5 times: alike, not the same
        assert cycle["not_proposed"] == {"an entity in common": 3}
        listed = live.http.get("/api/repair/duplicates", params={"kind": "duplicate"}).json()
        assert listed["total"] == 1
        (pair,) = listed["duplicates"]
        assert {pair["a"]["id"], pair["b"]["id"]} == {ids[HERON], ids[HERON_AGAIN]}
        assert pair["reason"].startswith("sleep replay: cosine") and pair["status"] == "open"
        again = replay_now(live)
        assert again["duplicates_flagged"] == 0  # a known pair is not flagged twice
        assert diagnostics(live)["duplicates_flagged"] == 1


def test_feedback_that_lowers_a_replay_edge_counts_as_a_false_positive(
        daemon_store: str, tmp_path: Path):
    with run_daemon(tmp_path / "home", QUIET) as live:
        ids = seed(live, FALCON, FALCON_LOGS, KESTREL, KESTREL_REGION)
        assert replay_now(live)["edges_proposed"] == 1
        before = diagnostics(live)
        assert (before["downgraded"], before["false_positive_rate"]) == (0, 0.0)
        resp = live.http.post(f"/api/memory/{ids[KESTREL]}/feedback", json={"helpful": False})
        assert resp.status_code == 200, resp.text
        assert resp.json()["edges_updated"] >= 1
        (_, _, _, confidence, _, boost), = replay_edges(live)
        assert confidence < 0.4 and boost < 0
        after = diagnostics(live)
        assert (after["downgraded"], after["false_positive_rate"]) == (1, 1.0)
        page = live.http.get("/ui/graph", params={"project": "shop"})
        assert page.status_code == 200
        section = page.text.split('id="sleep-replay"', 1)[1]
        assert "edges downgraded by feedback</th><td>1<" in section
        assert "100.0%" in section


def test_the_idle_trigger_runs_one_cycle_per_idle_period_and_none_while_busy(
        daemon_store: str, tmp_path: Path):
    with run_daemon(tmp_path / "home", config(idleTimeoutMs=2000, pairsPerCycle=60)) as live:
        live.daemon.sleep_replay.rng = random.Random(7)
        seed(live, FALCON, FALCON_LOGS, KESTREL, KESTREL_REGION)
        live.recall("checkout")  # a request: the idle clock starts again
        with live.daemon.sleep_replay._run_lock:  # a cycle begun while seeding is over
            start = cycles(live)
        # requests keep coming: well under the idle time apart, for several idle times
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            assert live.http.post("/api/memory/recall", json={"query": "checkout"}
                                  ).status_code == 200
            time.sleep(0.1)
        assert cycles(live) == start
        assert not replay_edges(live)
        # then quiet: one cycle runs, and it finds the edge
        assert wait_for(lambda: cycles(live) == start + 1)
        assert len(replay_edges(live)) == 1
        status = diagnostics(live)["worker"]  # watching reads do not count as activity
        assert status["running"] and status["replayed_this_idle_period"]
        # still quiet: no second cycle in the same idle period
        time.sleep(3)
        assert cycles(live) == start + 1
        # a request starts a new idle period
        live.recall("checkout")
        assert wait_for(lambda: cycles(live) == start + 2)


def test_turned_off_it_runs_only_on_demand(daemon_store: str, tmp_path: Path):
    with run_daemon(tmp_path / "home", config(enabled=False, idleTimeoutMs=1000)) as live:
        seed(live, FALCON, KESTREL)
        time.sleep(3)  # three idle times without a request
        assert cycles(live) == 0
        report = diagnostics(live)
        assert report["enabled"] is False and report["worker"]["running"] is False
        assert replay_now(live)["pairs_compared"] == 1
        assert cycles(live) == 1
        page = live.http.get("/ui/graph").text
        assert 'id="sleep-replay"' in page and "no (on demand only)" in page


def test_the_consolidation_switch_turns_the_idle_trigger_off_too():
    assert sleep_replay.scheduled(ConsolidationConfig())
    assert not sleep_replay.scheduled(ConsolidationConfig(enabled=False))
    assert not sleep_replay.scheduled(ConsolidationConfig(replay={"enabled": False}))
    assert ConsolidationConfig.model_validate({"replay": {
        "idleTimeoutMs": 1000, "pairsPerCycle": 5, "similarityThreshold": 0.8}}).replay == \
        ReplayConfig(idle_timeout_ms=1000, pairs_per_cycle=5, similarity_threshold=0.8)


def test_what_counts_as_activity():
    def scope(method: str, path: str) -> dict[str, Any]:
        return {"type": "http", "method": method, "path": path}

    assert counts(scope("POST", "/api/memory/recall"))
    assert counts(scope("POST", "/mcp"))
    assert counts(scope("POST", "/api/hooks/user-prompt-submit"))
    assert not counts(scope("GET", "/health"))
    assert not counts(scope("GET", "/api/status"))
    assert not counts(scope("GET", "/api/diagnostics/graph"))
    assert not counts(scope("GET", "/ui/graph"))
    assert counts(scope("POST", "/api/repair/sleep-replay"))
