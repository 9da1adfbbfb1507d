"""Pipeline v2 end to end on a running daemon (HTTP), with the real provider clients talking
to a local server that speaks the Ollama and OpenAI protocols."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import open_store, query, run_daemon, with_store
from llm_servers import FakeLlmServer, Reply, closed_port
from mnemonist.daemon import Daemon
from mnemonist.model.requests import RememberRequest
from mnemonist.settings import Paths, load_config
from mnemonist.store import jobs
from pipeline_helpers import (
    Brain,
    decision_json,
    facts_json,
    pipeline_config,
    target_containing,
    wait_for,
)

pytestmark = pytest.mark.both_stores

LOCAL = {"provider": "local"}
PARAGRAPH = ("Planning notes from Tuesday: Alice decided that the billing service keeps its "
             "invoices in PostgreSQL. She prefers tabs over spaces in every repository. "
             "The coffee machine was broken again.")


def db_rows(home: Path, sql: str, *args) -> list[dict]:
    with open_store(home) as db:
        return [dict(zip(r.keys(), r, strict=True)) for r in query(db, sql, *args)]


def extract_state(live, memory_id: str) -> dict:
    row = live.service.core.db.reader().execute(
        "SELECT status, attempts, error, result FROM memory_jobs WHERE memory_id = ?"
        " AND job_type = 'extract'", (memory_id,)).fetchone()
    return dict(row)


def finished(live, memory_id: str, states=("completed", "dead"), timeout=30.0) -> dict:
    state = wait_for(lambda: extract_state(live, memory_id)["status"] in states, timeout)
    assert state, extract_state(live, memory_id)
    return extract_state(live, memory_id)


def history(live, memory_id: str) -> list[dict]:
    resp = live.http.get(f"/api/memory/{memory_id}/history")
    assert resp.status_code == 200, resp.text
    return resp.json()["events"]


def test_remember_a_paragraph_and_get_facts_history_and_entities(tmp_path):
    brain = Brain()
    brain.extractions["Planning notes"] = facts_json(
        ("The billing service keeps its invoices in PostgreSQL", 0.92, "decision"),
        ("Alice prefers tabs over spaces in every repository", 0.85, "preference"),
        entities=[("billing service", "stores invoices in", "PostgreSQL", 0.9),
                  ("Alice", "prefers", "tabs", 0.8)])
    with FakeLlmServer(script=brain) as srv, run_daemon(
            tmp_path, pipeline_config(srv.url, embedding=LOCAL)) as live:
        src = live.remember(PARAGRAPH, project="acme")["id"]
        state = finished(live, src)
        assert (state["status"], state["attempts"]) == ("completed", 1)
        assert any(c.path == "/api/generate" for c in srv.calls)

        facts = live.http.get("/api/memories", params={"who": "pipeline-v2"}).json()["memories"]
        assert sorted(f["content"] for f in facts) == [
            "Alice prefers tabs over spaces in every repository",
            "The billing service keeps its invoices in PostgreSQL"]
        for f in facts:
            assert (f["why"], f["project"]) == ("extracted-fact", "acme")
            events = history(live, f["id"])
            assert [(e["event"], e["changed_by"]) for e in events] == [
                ("created", "pipeline-v2")]
            assert events[0]["metadata"]["sourceMemoryId"] == src
        audit = [e for e in history(live, src) if e["event"] == "none"]
        assert {e["metadata"]["outcome"] for e in audit} == {"created"} and len(audit) == 2
        models = db_rows(tmp_path, "SELECT DISTINCT extraction_model FROM memories"
                         " WHERE who = 'pipeline-v2'")
        assert models == [{"extraction_model": "ollama/qwen3:4b"}]

        names = {r["canonical_name"] for r in db_rows(tmp_path, "SELECT * FROM entities")}
        # the LLM's "billing service" is the entity the inline linker read from the paragraph
        assert names == {"billing service", "postgresql", "alice", "tabs", "coffee machine"}
        reasons = sorted(r["reason"] for r in db_rows(tmp_path, "SELECT * FROM relations"))
        # the writes_to the paragraph and the derived fact both state: multi-memory
        assert reasons.count("extracted") == 2 and "multi-memory" in reasons
        mentions = db_rows(tmp_path, "SELECT * FROM memory_entity_mentions")
        assert len([m for m in mentions if m["memory_id"] == src]) == 5
        # the inline linker linked the derived facts when they were written
        inline = sorted((m["mention_text"], m["confidence"]) for m in mentions
                        if m["memory_id"] != src)
        assert inline == [("PostgreSQL", 0.6), ("billing service", 0.6)]

        live.flush()
        found = live.recall("does Alice like tabs or spaces?", project="acme")["results"]
        assert "Alice prefers tabs over spaces in every repository" in [
            r["content"] for r in found]
        assert live.service.reads.get(src)["content"] == PARAGRAPH  # the raw memory, untouched

        status = live.http.get("/api/pipeline/status").json()
        assert status["mode"] == "controlled" and status["flags"]["enabled"]
        assert status["workers"]["extract"]["running"]
        assert status["workers"]["extract"]["processed"] >= 1
        assert status["queue"]["by_type"]["extract"]["completed"] >= 1
        assert status["provider"]["name"] == "ollama" and status["provider"]["available"]
        assert status["counters"]["calls"] >= 1 and status["counters"]["prompt_tokens"] > 0
        assert status["graph"]["entities"] == 5
        brief = live.http.get("/api/status").json()["pipeline"]
        assert brief["extraction_worker"] == "running" and brief["llm_available"]
        assert "llm_unavailable" not in live.http.get("/health").json()["degraded"]


@pytest.mark.parametrize(("flags", "mode"), [({"shadowMode": True}, "shadow"),
                                             ({"mutationsFrozen": True}, "frozen")])
def test_shadow_and_frozen_write_only_history(tmp_path, flags, mode):
    brain = Brain()
    brain.extractions["Planning notes"] = facts_json(
        ("Alice prefers tabs over spaces in every repository", 0.9),
        entities=[("Alice", "prefers", "tabs", 0.8)])
    config = pipeline_config("", protocol="openai", **flags)
    with FakeLlmServer(script=brain) as srv:
        config["memory"]["pipelineV2"]["extraction"]["baseUrl"] = srv.url
        with run_daemon(tmp_path, config) as live:
            src = live.remember(PARAGRAPH)["id"]
            assert finished(live, src)["status"] == "completed"
            assert srv.generations()[0].path == "/v1/chat/completions"
            assert live.http.get("/api/memories").json()["total"] == 1
            # no graph rows from the pipeline; the inline linker ran at remember time
            names = db_rows(tmp_path, "SELECT canonical_name, entity_type FROM entities")
            assert sorted((n["canonical_name"], n["entity_type"]) for n in names) == [
                ("billing service", "phrase"), ("coffee machine", "phrase"),
                ("postgresql", "technology")]
            reasons = {r["reason"] for r in db_rows(tmp_path, "SELECT * FROM relations")}
            assert reasons <= {"co-occurrence", "pattern-matched"}
            (audit,) = [e for e in history(live, src) if e["event"] == "none"]
            assert audit["changed_by"] == "pipeline-shadow"
            assert audit["metadata"]["shadow"] and audit["metadata"]["proposedAction"] == "add"
            assert live.http.get("/api/pipeline/status").json()["mode"] == mode


def test_full_mode_contradiction_supersedes_without_losing_the_old_memory(tmp_path):
    brain = Brain()
    brain.extractions["Migration finished"] = facts_json(
        ("The billing service no longer keeps invoices in PostgreSQL; they are in SQLite", 0.9))
    brain.decide = target_containing("PostgreSQL")
    with FakeLlmServer(script=brain) as srv, run_daemon(
            tmp_path, pipeline_config(srv.url, embedding=LOCAL, allowUpdateDelete=True)) as live:
        old = live.remember("The billing service keeps invoices in PostgreSQL")["id"]
        finished(live, old)
        src = live.remember("Migration finished: billing invoices moved from PostgreSQL to "
                            "SQLite last night.")["id"]
        assert finished(live, src)["status"] == "completed"
        (new,) = live.http.get("/api/memories", params={"who": "pipeline-v2"}).json()["memories"]

        kept = live.http.get(f"/api/memory/{old}").json()  # kept and linked
        assert kept["content"] == "The billing service keeps invoices in PostgreSQL"
        assert kept["superseded_by"] == new["id"] and not kept["is_deleted"]
        archived = live.http.get(f"/api/memory/{old}/archive").json()["versions"]
        assert archived[0]["content"] == kept["content"]
        assert [e["event"] for e in history(live, old)][-1] == "superseded"
        assert history(live, new["id"])[0]["metadata"]["supersedes"] == old
        audit = next(e for e in history(live, src) if e["event"] == "none")["metadata"]
        assert audit["outcome"] == "superseded" and audit["reviewNeeded"]

        live.flush()
        recalled = [r["id"] for r in live.recall("billing invoices PostgreSQL")["results"]]
        assert old not in recalled and new["id"] in recalled
        listed = [m["id"] for m in live.http.get("/api/memories").json()["memories"]]
        assert old not in listed

        resp = live.http.post(f"/api/memory/{old}/restore", json={"reason": "rolled back"})
        assert resp.status_code == 200, resp.text
        assert old in [r["id"] for r in live.recall("billing invoices PostgreSQL")["results"]]
        again = live.http.post(f"/api/memory/{old}/restore", json={"reason": "twice"})
        assert again.status_code == 409 and again.json()["error"] == "not_superseded"


def test_each_failure_keeps_the_raw_memory_and_records_the_outcome(tmp_path):
    brain = Brain()
    brain.extractions["CASE-MALFORMED"] = "Sure! Here are the facts: {facts: [oops"
    brain.extractions["CASE-500"] = Reply(status=500, body="model crashed")
    brain.extractions["CASE-SLOW"] = Reply(text=facts_json(), delay_s=6.5)
    brain.extractions["CASE-THINK"] = ("<think>The memory mentions CI.</think>\n```json\n"
                                       + facts_json(("Builds are cached for seven days", 0.9))
                                       + "\n```")
    brain.extractions["CASE-HALLUCINATE"] = facts_json(
        ("The deploy pipeline runs on Buildkite agents", 0.9))
    brain.decide = lambda call: (
        decision_json("update", "00000000-dead-beef-0000-000000000000", "made up")
        if "Buildkite" in call.prompt else decision_json("add", reason="new"))
    config = pipeline_config("", worker={"maxRetries": 1})
    with FakeLlmServer(script=brain) as srv:
        config["memory"]["pipelineV2"]["extraction"]["baseUrl"] = srv.url
        with run_daemon(tmp_path, config) as live:
            live.remember("The deploy pipeline runs on GitHub Actions runners")
            cases = {name: live.remember(f"{name}: notes about the deploy pipeline and CI "
                                         f"builds")["id"]
                     for name in ("CASE-MALFORMED", "CASE-500", "CASE-SLOW", "CASE-THINK",
                                  "CASE-HALLUCINATE")}
            states = {name: finished(live, mid, timeout=60) for name, mid in cases.items()}

            malformed = states["CASE-MALFORMED"]
            assert malformed["status"] == "completed" and "not valid JSON" in malformed["result"]
            assert (states["CASE-500"]["status"], states["CASE-500"]["attempts"]) == ("dead", 1)
            assert "HTTP 500" in states["CASE-500"]["error"]
            assert states["CASE-SLOW"]["status"] == "dead"
            assert "timed out" in states["CASE-SLOW"]["error"]
            assert states["CASE-THINK"]["status"] == "completed"
            hallucinated = states["CASE-HALLUCINATE"]
            assert hallucinated["status"] == "completed"
            assert "non-candidate id" in hallucinated["result"]
            audit = next(e for e in history(live, cases["CASE-HALLUCINATE"])
                     if e["event"] == "none")["metadata"]
            assert (audit["outcome"], audit["rejectedReason"]) == (
                "rejected", "hallucinated_target")

            facts = live.http.get("/api/memories", params={"who": "pipeline-v2"}).json()
            assert [f["content"] for f in facts["memories"]] == [
                "Builds are cached for seven days"]
            for name, mid in cases.items():  # every raw memory intact
                got = live.service.reads.get(mid)
                assert got["content"].startswith(name) and got["version"] == 1
                assert not got["is_deleted"]

            status = live.http.get("/api/pipeline/status").json()
            assert status["counters"]["timeouts"] >= 1 and status["counters"]["failures"] >= 2
            assert status["queue"]["by_type"]["extract"]["dead"] == 2
            assert {j["memory_id"] for j in status["last_errors"]["jobs"]} >= {
                cases["CASE-500"], cases["CASE-SLOW"]}
            assert "dead_jobs" in live.http.get("/health").json()["degraded"]


def test_llm_down_jobs_wait_without_burning_attempts(tmp_path):
    config = pipeline_config(f"http://127.0.0.1:{closed_port()}")
    with run_daemon(tmp_path, config) as live:
        mid = live.remember(PARAGRAPH)["id"]
        status = wait_for(lambda: (s := live.http.get("/api/pipeline/status").json())[
            "waiting_reason"] and s)
        assert "cannot connect" in status["waiting_reason"]
        assert not status["provider"]["available"]
        assert status["queue"]["by_type"]["extract"] == {"pending": 1}
        assert (extract_state(live, mid)["status"], extract_state(live, mid)["attempts"]) == (
            "pending", 0)
        health = live.http.get("/health").json()
        assert health["status"] == "degraded" and "llm_unavailable" in health["degraded"]
        assert not live.http.get("/api/status").json()["pipeline"]["llm_available"]
        assert live.recall("billing invoices")["count"] >= 1  # remember and recall still work


def test_llm_failing_with_503_defers_the_job(tmp_path):
    with FakeLlmServer() as srv:
        srv.script = lambda call: Reply(status=503, body="model is loading")
        with run_daemon(tmp_path, pipeline_config(srv.url)) as live:
            mid = live.remember(PARAGRAPH)["id"]
            wait_for(lambda: srv.generations())
            reason = wait_for(lambda: live.http.get("/api/pipeline/status").json()[
                "waiting_reason"])
            assert "503" in reason
            state = wait_for(lambda: (s := extract_state(live, mid))["status"] == "pending" and s)
            assert state["attempts"] == 0 and "waiting" in state["error"]


def test_a_worker_killed_mid_job_is_recovered_by_the_reaper(tmp_path):
    brain = Brain()
    brain.extractions["Crash"] = facts_json(("The nightly backup runs at 02:00 UTC", 0.9),
                                            ("Backups are kept for thirty days", 0.9))
    with FakeLlmServer(script=brain) as srv:
        config = pipeline_config(srv.url, worker={"leaseTimeoutMs": 10000})
        paths = Paths(tmp_path)
        tmp_path.mkdir(exist_ok=True)
        first = Daemon(paths, load_config(paths, with_store(tmp_path, config)),
                       workers=False).start()
        mid = first.service.memories.remember(RememberRequest(
            content="Crash drill: the nightly backup runs at 02:00 UTC, kept thirty days."))["id"]
        with first.db.write_tx() as conn:
            assert jobs.lease(conn, "extract") is not None
        first.stop()  # killed while holding the lease: nothing completed, nothing written
        with open_store(tmp_path) as db, db.write_tx() as conn:
            conn.execute("UPDATE memory_jobs SET leased_at = '2000-01-01T00:00:00.000Z'")
        assert db_rows(tmp_path, "SELECT * FROM memories WHERE who = 'pipeline-v2'") == []

        with run_daemon(tmp_path, config) as live:
            state = finished(live, mid)
            assert (state["status"], state["attempts"]) == ("completed", 2)
            assert live.daemon.extraction.worker.stats.reaped == 1
            facts = live.http.get("/api/memories", params={"who": "pipeline-v2"}).json()
            assert facts["total"] == 2
