"""The consolidation engine end to end: a real daemon on loopback, the real embedding model.
A fact said again is merged into its newer statement, an older value the newer statement says
changed is superseded, two statements that disagree with nothing to settle them are listed for
review; every action is in history and undone by one call, after which the engine leaves the
pair alone; decisions, events, pinned memories, other owners and conversation turns are never
touched; a batch that fails writes nothing and the next run does its work exactly once."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from conftest import LiveDaemon, run_daemon
from mnemonist.guards.background import LOW_PRIORITY
from mnemonist.pipeline import consolidation as engine
from mnemonist.store import consolidation as store
from mnemonist.store import memories

pytestmark = pytest.mark.both_stores

OLD = "The orders cluster runs in region ca-central-1."
NEW = "The orders cluster was moved; its nodes now sit in eu-north-1."
AGAIN = "Latency to the orders cluster is best from eu-north-1, where it lives now."
PRICE = "The Team plan costs $49 per month."
QUOTE = "Sales quotes $12 a month for the Team plan."
#: the background schedule stays out of the way: each test runs the engine itself
QUIET = {"memory": {"consolidation": {"intervalMs": 86400000}}}


@pytest.fixture()
def live(daemon_store: str, tmp_path) -> Any:
    with run_daemon(tmp_path / "home", QUIET) as d:
        yield d


def run(live: LiveDaemon) -> dict[str, Any]:
    resp = live.http.post("/api/consolidation/run", json={})
    assert resp.status_code == 200, resp.text
    return resp.json()


def state(live: LiveDaemon, memory_id: str) -> dict[str, Any]:
    """The memory as stored, whoever owns it."""
    found = memories.get(live.service.core.db.reader(), memory_id)
    assert found is not None
    return found.to_public()


def history_of(live: LiveDaemon, memory_id: str) -> list[dict[str, Any]]:
    resp = live.http.get(f"/api/memory/{memory_id}/history")
    assert resp.status_code == 200, resp.text
    return resp.json()["events"]


def test_a_changed_value_and_a_repeat_leave_one_live_memory(live):
    old = live.remember(OLD, project="ops", occurred_at="2025-01-10")
    new = live.remember(NEW, project="ops", occurred_at="2025-03-10")
    again = live.remember(AGAIN, project="ops", occurred_at="2025-05-10")
    live.flush()
    out = run(live)
    assert out["replaced"] >= 1 and out["restated"] >= 1 and out["done"], out
    assert "actions" not in out  # a face gets counts, never memory ids or text
    assert state(live, old["id"])["superseded_by"] in (new["id"], again["id"])
    assert state(live, new["id"])["superseded_by"] == again["id"]
    assert state(live, again["id"])["superseded_by"] is None
    found = live.recall("which region is the orders cluster in now?", project="ops")["results"]
    assert [r["id"] for r in found] == [again["id"]]
    events = [h for h in history_of(live, new["id"]) if h["event"] == "superseded"]
    assert events and events[-1]["changed_by"] == "consolidation"
    assert events[-1]["metadata"]["lifecycle"] == "consolidation"
    assert events[-1]["metadata"]["relation"] == "restates"
    settled = live.http.get("/api/repair/duplicates", params={
        "status": "resolved", "kind": "restated"}).json()["duplicates"]
    assert [(d["a"]["id"], d["b"]["id"], d["kept"]) for d in settled] == [
        (new["id"], again["id"], again["id"])]
    status = live.http.get("/api/consolidation/status").json()
    assert status["not_read_yet"] == 0 and status["restated"] >= 1 and status["replaced"] >= 1


def test_one_call_undoes_an_action_and_the_engine_leaves_the_pair_alone(live):
    new = live.remember(NEW, project="ops", occurred_at="2025-03-10")
    again = live.remember(AGAIN, project="ops", occurred_at="2025-05-10")
    live.flush()
    assert run(live)["restated"] == 1
    undo = live.http.post(f"/api/memory/{new['id']}/restore", json={"reason": "both matter"})
    assert undo.status_code == 200, undo.text
    assert state(live, new["id"])["superseded_by"] is None
    live.http.post("/api/memory/remember", json={"content": "An unrelated note about tea",
                                                 "project": "ops"})
    live.flush()
    run(live)
    assert state(live, new["id"])["superseded_by"] is None  # not settled again
    dismissed = live.http.get("/api/repair/duplicates", params={
        "status": "dismissed", "kind": "restated"}).json()["duplicates"]
    assert [d["b"]["id"] for d in dismissed] == [again["id"]]
    assert {r["id"] for r in live.recall("orders cluster region", project="ops")["results"]} >= {
        new["id"], again["id"]}


def test_a_contradiction_nothing_settles_is_listed_for_review(live):
    price = live.remember(PRICE, project="sales", occurred_at="2025-01-10")
    quote = live.remember(QUOTE, project="sales", occurred_at="2025-04-10")
    live.flush()
    out = run(live)
    assert out["flagged"] == 1 and out["replaced"] == 0 and out["restated"] == 0, out
    assert state(live, price["id"])["superseded_by"] is None
    listed = live.http.get("/api/repair/duplicates",
                           params={"kind": "contradiction"}).json()["duplicates"]
    assert len(listed) == 1 and listed[0]["status"] == "open"
    assert {listed[0]["a"]["id"], listed[0]["b"]["id"]} == {price["id"], quote["id"]}
    assert "$49" in listed[0]["reason"] or "49" in listed[0]["reason"]
    bad = live.http.get("/api/repair/duplicates", params={"kind": "bogus"})
    assert bad.status_code == 400 and "kind" in bad.text
    # a person settles it: keep the newer one
    resolved = live.http.post(f"/api/repair/duplicates/{listed[0]['id']}/resolve",
                              json={"keep": quote["id"], "reason": "the price changed"})
    assert resolved.status_code == 200, resolved.text
    assert state(live, price["id"])["superseded_by"] == quote["id"]
    assert live.http.get("/api/consolidation/status").json()["open_contradictions"] == 0


@pytest.mark.parametrize("older_fields", [
    {"type": "decision"}, {"type": "event"}, {"pinned": True}, {"agent_id": "someone-else"},
    {"source_type": "conversation", "source_id": "chat-1"},
], ids=["decision", "event", "pinned", "other-owner", "conversation-turn"])
def test_records_and_protected_memories_are_never_touched(live, older_fields):
    old = live.remember(OLD, project="ops", occurred_at="2025-01-10", **older_fields)
    new = live.remember(NEW, project="ops", occurred_at="2025-03-10")
    live.flush()
    out = run(live)
    assert out["replaced"] == 0 and out["restated"] == 0, out
    assert state(live, old["id"])["superseded_by"] is None
    assert state(live, new["id"])["superseded_by"] is None


def test_a_failed_batch_writes_nothing_and_the_next_run_does_it_once(live, monkeypatch):
    old = live.remember(OLD, project="ops", occurred_at="2025-01-10")
    new = live.remember(NEW, project="ops", occurred_at="2025-03-10")
    live.flush()
    real = store.advance

    def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("killed mid-batch")

    monkeypatch.setattr(store, "advance", crash)
    with pytest.raises(RuntimeError):
        live.service.curation.consolidate()
    assert state(live, old["id"])["superseded_by"] is None  # the batch's writes rolled back
    assert store.progress(live.service.core.db.reader())["last_seq"] == 0
    monkeypatch.setattr(store, "advance", real)
    first = live.service.curation.consolidate(details=True)
    assert [(a["older"], a["newer"], a["relation"]) for a in first["actions"]] == [
        (old["id"], new["id"], "replaces")]
    second = live.service.curation.consolidate(details=True)
    assert second["actions"] == [] and second["examined"] == 0
    assert state(live, old["id"])["superseded_by"] == new["id"]


def test_the_engine_reads_in_batches_and_resumes_at_its_cursor(live):
    ids = [live.remember(f"Note {i}: the tide gauge {i} reads {i * 7} cm", project="ops")["id"]
           for i in range(25)]
    live.flush()
    first = engine.run(
        live.service.core.db, live.service.core.index, live.service.core.provider.embed,
        live.service.core.config.memory.consolidation, max_batches=1, batch_size=10)
    assert first["examined"] == 10 and not first["done"]
    cursor = store.progress(live.service.core.db.reader())["last_seq"]
    rest = engine.run(
        live.service.core.db, live.service.core.index, live.service.core.provider.embed,
        live.service.core.config.memory.consolidation, batch_size=10)
    assert rest["examined"] == 15 and rest["done"]
    assert store.progress(live.service.core.db.reader())["last_seq"] > cursor
    assert all(state(live, i)["superseded_by"] is None for i in ids)  # notes of a log


def test_the_background_schedule_runs_it(daemon_store, tmp_path):
    config = {"memory": {"consolidation": {"intervalMs": 1000}}}
    with run_daemon(tmp_path / "home", config) as live:
        old = live.remember(OLD, project="ops", occurred_at="2025-01-10")
        new = live.remember(NEW, project="ops", occurred_at="2025-03-10")
        live.flush()
        import time
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and state(live, old["id"])["superseded_by"] is None:
            time.sleep(0.2)
        assert state(live, old["id"])["superseded_by"] == new["id"]
        worker = live.http.get("/api/consolidation/status").json()["worker"]
        assert worker["running"] and worker["last_run_at"]


def test_it_can_be_turned_off(daemon_store, tmp_path):
    config = {"memory": {"consolidation": {"enabled": False, "intervalMs": 1000}}}
    with run_daemon(tmp_path / "home", config) as live:
        status = live.http.get("/api/consolidation/status").json()
        assert status["enabled"] is False and status["worker"]["running"] is False


def test_frozen_mutations_stop_it(daemon_store, tmp_path):
    config = {**QUIET, "memory": {**QUIET["memory"], "pipelineV2": {"mutationsFrozen": True}}}
    with run_daemon(tmp_path / "home", config) as live:
        old = live.remember(OLD, project="ops", occurred_at="2025-01-10")
        live.remember(NEW, project="ops", occurred_at="2025-03-10")
        live.flush()
        assert "frozen" in run(live)["skipped"]
        assert state(live, old["id"])["superseded_by"] is None


def test_the_cli_runs_it_and_undoes_an_action(live, tmp_path):
    from click.testing import CliRunner

    from mnemonist.cli.main import cli
    old = live.remember(OLD, project="ops", occurred_at="2025-01-10")
    new = live.remember(NEW, project="ops", occurred_at="2025-03-10")
    live.flush()
    runner = CliRunner()
    out = runner.invoke(cli, ["consolidate", "--url", live.url])
    assert out.exit_code == 0 and "1 replaced" in out.output, out.output
    listed = runner.invoke(cli, ["duplicates", "list", "--kind", "replaced", "--status",
                                 "resolved", "--url", live.url])
    assert listed.exit_code == 0 and "replaced" in listed.output and "why:" in listed.output
    back = runner.invoke(cli, ["restore", old["id"], "--reason", "both stand", "--url",
                               live.url])
    assert back.exit_code == 0 and f"superseded by {new['id']}" in back.output, back.output
    status = runner.invoke(cli, ["consolidate", "--status", "--url", live.url])
    assert status.exit_code == 0 and "replaced 1" in status.output, status.output


def test_the_background_run_steps_aside_for_requests_in_flight(live, monkeypatch):
    """The worker's run waits while a request is in flight (the comparing holds the
    interpreter lock a request would wait for), and goes on when it ends. The patience is
    raised so that stepping aside shows as a run that cannot end meanwhile."""
    from mnemonist.providers.embedding.request_gate import REQUESTS

    ids = [live.remember(f"Note {i}: the tide gauge {i} reads {i * 7} cm", project="ops")["id"]
           for i in range(4)]
    live.flush()
    monkeypatch.setattr(engine, "PATIENCE_S", 3600.0)
    outcome: dict[str, Any] = {}

    def background() -> None:
        outcome["out"] = live.service.curation.consolidate(background=True)
        # the background run yields the CPU too: its thread's priority is lowered
        outcome["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    REQUESTS.enter()  # a request in flight
    try:
        worker = threading.Thread(target=background, daemon=True)
        worker.start()
        worker.join(3.0)
        assert worker.is_alive(), "the background run went on beside a request"
        assert store.progress(live.service.core.db.reader())["last_seq"] == 0
    finally:
        REQUESTS.leave()
    worker.join(120)
    assert not worker.is_alive()
    assert outcome["out"]["examined"] == len(ids)
    assert outcome["nice"] == LOW_PRIORITY


def test_an_on_demand_run_is_not_held_back_by_requests(live, monkeypatch):
    """A run asked for by a request (`POST /api/consolidation/run`, the CLI) is a request
    itself: it does not wait for requests in flight, its own included."""
    from mnemonist.providers.embedding.request_gate import REQUESTS

    ids = [live.remember(f"Note {i}: the tide gauge {i} reads {i * 7} cm", project="ops")["id"]
           for i in range(4)]
    live.flush()
    monkeypatch.setattr(engine, "PATIENCE_S", 3600.0)
    REQUESTS.enter()  # the on-demand run's own request, and another one
    try:
        out = live.service.curation.consolidate()
    finally:
        REQUESTS.leave()
    assert out["examined"] == len(ids)
