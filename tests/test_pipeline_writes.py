"""The extraction worker in-process, tick by tick: controlled writes and their gates, the
UNIQUE race, one-transaction atomicity, re-runs, full-mode supersession and deletes, pinned
memories, contradictions, graph persistence and its cleanup, the vector index on commit."""

from __future__ import annotations

import pytest

from embedding_servers import FakeEmbeddingServer
from llm_servers import FakeLlmServer
from mnemonist.model.requests import RecallRequest, RecoverRequest
from mnemonist.pipeline import controlled_writes
from mnemonist.pipeline.retention import RetentionWorker
from mnemonist.store import graph, jobs
from pipeline_helpers import (
    Brain,
    audits,
    decision_json,
    facts_json,
    job_of,
    manual_daemon,
    pipeline_config,
    remember,
    rows,
    run_jobs,
    target_containing,
)

PARAGRAPH = ("Planning notes: Alice decided the billing service keeps invoices in PostgreSQL. "
             "She prefers tabs over spaces. Lunch was fine.")


@pytest.fixture
def brain():
    return Brain()


@pytest.fixture
def llm(brain):
    with FakeLlmServer(script=brain) as srv:
        yield srv


def derived(d):
    return rows(d, "SELECT * FROM memories WHERE who = 'pipeline-v2' ORDER BY seq")


def test_controlled_writes_gates_and_audit(tmp_path, llm, brain):
    brain.extractions["Planning notes"] = facts_json(
        ("The billing service keeps invoices in PostgreSQL", 0.9, "decision"),
        ("Alice prefers tabs over spaces", 0.8, "preference"),
        ("Lunch was fine on the planning day", 0.3),          # below minConfidence 0.7
        entities=[("billing service", "stores invoices in", "PostgreSQL", 0.9)])
    with manual_daemon(tmp_path, pipeline_config(llm.url)) as d:
        src = remember(d, PARAGRAPH, project="acme", source_id="meeting-1")
        run_jobs(d)
        job = job_of(d, src)
        assert job["status"] == "completed" and job["attempts"] == 1
        facts = derived(d)
        assert [f["content"] for f in facts] == ["The billing service keeps invoices in PostgreSQL",
                                                 "Alice prefers tabs over spaces"]
        for f in facts:
            assert (f["why"], f["project"], f["source_id"]) == ("extracted-fact", "acme",
                                                                "meeting-1")
            assert f["extraction_model"] == "ollama/qwen3:4b"
        assert [f["importance"] for f in facts] == [0.9, 0.8]
        assert [f["type"] for f in facts] == ["decision", "preference"]
        outcomes = [(a["metadata"]["outcome"], a["metadata"]["skippedReason"])
                    for a in audits(d, src)]
        assert outcomes == [("created", None), ("created", None),
                            ("skipped", "low_fact_confidence")]
        assert all(a["changed_by"] == "pipeline-v2" for a in audits(d, src))
        created = rows(d, "SELECT * FROM memory_history WHERE memory_id = ?", facts[0]["id"])
        assert [(h["event"], h["changed_by"]) for h in created] == [("created", "pipeline-v2")]
        assert job["result"]["writes"]["added"] == 2 and job["result"]["facts"] == 3
        assert rows(d, "SELECT COUNT(*) AS n FROM memories WHERE id = ?", src)[0]["n"] == 1

        # the same facts again, from another memory: deduplicated with the existing ids
        brain.extractions["Follow-up"] = facts_json(
            ("Alice prefers tabs over spaces", 0.95))
        brain.decide = lambda call: decision_json("add", reason="looks new")
        again = remember(d, "Follow-up: Alice still prefers tabs over spaces.", project="acme")
        run_jobs(d)
        meta = audits(d, again)[0]["metadata"]
        assert meta["outcome"] == "deduped" and meta["dedupedMemoryId"] == facts[1]["id"]
        assert len(derived(d)) == 2


def test_unique_race_is_a_dedup(tmp_path, llm, brain, monkeypatch):
    brain.extractions["Standup"] = facts_json(("Alice prefers tabs over spaces", 0.9))
    brain.decide = lambda call: decision_json("add", reason="new")
    with manual_daemon(tmp_path, pipeline_config(llm.url)) as d:
        first = remember(d, "Alice prefers tabs over spaces", source_id="s1")
        run_jobs(d)  # its own job extracts nothing
        src = remember(d, "Standup: Alice prefers tabs over spaces, again.", source_id="s1")
        # the pre-insert check misses (another writer won the race): the UNIQUE index answers
        monkeypatch.setattr(controlled_writes.Applier, "_duplicate", lambda self, norm: None)
        run_jobs(d)
        meta = audits(d, src)[0]["metadata"]
        assert meta["outcome"] == "deduped" and meta["dedupedMemoryId"] == first
        assert job_of(d, src)["status"] == "completed" and derived(d) == []


def test_facts_commit_in_one_transaction_or_not_at_all(tmp_path, llm, brain, monkeypatch):
    brain.extractions["Retro"] = facts_json(("Deploys happen on Tuesdays only", 0.9),
                                            ("The staging cluster runs on ARM nodes", 0.9),
                                            ("Incidents are reviewed every Friday", 0.9))
    real_append = controlled_writes.history.append
    calls = {"n": 0}

    def crash_on_second_fact(conn, memory_id, event, **kw):
        if event == "created":
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError("power cut in the middle of the transaction")
        return real_append(conn, memory_id, event, **kw)

    with manual_daemon(tmp_path, pipeline_config(llm.url)) as d:
        src = remember(d, "Retro: deploys on Tuesdays, staging on ARM, incident reviews Friday")
        monkeypatch.setattr(controlled_writes.history, "append", crash_on_second_fact)
        d.extraction.worker.tick()
        job = job_of(d, src)
        assert (job["status"], job["attempts"]) == ("pending", 1) and "power cut" in job["error"]
        assert derived(d) == [] and audits(d, src) == []  # nothing half-written
        monkeypatch.setattr(controlled_writes.history, "append", real_append)
        with d.db.write_tx() as conn:
            conn.execute("UPDATE memory_jobs SET run_after = NULL")
        run_jobs(d)
        assert job_of(d, src)["status"] == "completed"
        assert len(derived(d)) == 3 and len(audits(d, src)) == 3


def test_a_crashed_lease_is_reaped_and_a_rerun_writes_nothing_twice(tmp_path, llm, brain):
    brain.extractions["Crash"] = facts_json(("The nightly backup runs at 02:00 UTC", 0.9))
    with manual_daemon(tmp_path, pipeline_config(llm.url)) as d:
        src = remember(d, "Crash test: the nightly backup runs at 02:00 UTC.")
        with d.db.write_tx() as conn:  # a worker leased it and died
            job = jobs.lease(conn, "extract")
            conn.execute("UPDATE memory_jobs SET leased_at = '2000-01-01T00:00:00.000Z'")
        d.extraction.worker.tick()  # the first tick reaps, then runs the job
        assert d.extraction.worker.stats.reaped == 1
        assert (job_of(d, src)["status"], job_of(d, src)["attempts"]) == ("completed", 2)
        assert len(derived(d)) == 1
        # the job's writes committed but the worker died before it said so: a re-run finds the
        # job completed inside its transaction and writes nothing
        out = d.extraction.pipeline.handle(job)
        assert out["alreadyCompleted"] and len(derived(d)) == 1 and len(audits(d, src)) == 1


def test_full_mode_update_supersedes_and_restore_brings_it_back(tmp_path, llm, brain):
    with FakeEmbeddingServer(dim=8) as emb:
        config = pipeline_config(llm.url, allowUpdateDelete=True, embedding={
            "provider": "openai", "base_url": emb.url, "model": "fake", "dimensions": 8})
        with manual_daemon(tmp_path, config) as d:
            old = remember(d, "The billing service stores invoices in PostgreSQL")
            run_jobs(d)
            d.service.flush(30)
            old_seq = rows(d, "SELECT seq FROM memories WHERE id = ?", old)[0]["seq"]
            assert old_seq in d.service.core.index
            brain.extractions["Migration"] = facts_json(
                ("The billing service does not store invoices in PostgreSQL any more", 0.9))
            brain.decide = target_containing("PostgreSQL")
            src = remember(d, "Migration done: billing invoices are not in PostgreSQL now.")
            run_jobs(d)
            new = derived(d)[0]
            old_row = rows(d, "SELECT * FROM memories WHERE id = ?", old)[0]
            assert old_row["superseded_by"] == new["id"] and old_row["is_deleted"] == 0
            assert old_row["content"] == "The billing service stores invoices in PostgreSQL"
            # the lifecycle mechanism of keyed remembers: validity ends where the new one's
            # begins (the source's event time), the new row names what it supersedes
            src_row = rows(d, "SELECT occurred_at FROM memories WHERE id = ?", src)[0]
            assert old_row["valid_to"] == max(src_row["occurred_at"], old_row["valid_from"])
            assert new["supersedes"] == old and new["valid_to"] is None
            chain = d.service.reads.chain(new["id"])
            assert [v["id"] for v in chain["supersedes"]] == [old]
            assert chain["supersedes"][0]["valid_to"] == old_row["valid_to"]
            arch = d.service.pipeline.archived_versions(old)["versions"]
            assert len(arch) == 1 and arch[0]["row"]["content"] == old_row["content"]
            assert arch[0]["superseded_by"] == new["id"]
            events = [h["event"] for h in rows(
                d, "SELECT event FROM memory_history WHERE memory_id = ? ORDER BY rowid", old)]
            assert events[-1] == "superseded"
            meta = audits(d, src)[0]["metadata"]
            assert meta["outcome"] == "superseded" and meta["contradictionRisk"]
            assert meta["reviewNeeded"] and meta["supersededMemoryId"] == old
            # off the vector index and out of recall; the new version is embedded and indexed
            assert old_seq not in d.service.core.index and new["seq"] in d.service.core.index
            assert new["embedding_model"] == "openai/fake"
            found = d.service.reads.recall(RecallRequest(query="billing invoices PostgreSQL"))
            assert old not in [r["id"] for r in found["results"]]
            d.service.pipeline.restore_superseded(old, RecoverRequest(
                reason="the migration was undone"))
            assert old_seq in d.service.core.index
            found = d.service.reads.recall(RecallRequest(query="billing invoices PostgreSQL"))
            assert old in [r["id"] for r in found["results"]]


def test_full_mode_delete_is_soft_and_pinned_memories_are_never_touched(tmp_path, llm, brain):
    with manual_daemon(tmp_path, pipeline_config(llm.url, allowUpdateDelete=True)) as d:
        stale = remember(d, "The office wifi password rotates every month")
        pinned = remember(d, "critical: the office wifi must never be shared with guests")
        run_jobs(d)
        brain.extractions["Wifi"] = facts_json(
            ("The office wifi password no longer rotates monthly", 0.9),
            ("The office wifi may now be shared with guests", 0.9))

        def decide(call):
            for cid, content in call.candidates():
                if "rotates" in content and "rotates" in call.prompt.split("<<<END FACT")[0]:
                    return decision_json("delete", cid, "rotation stopped")
                if "guests" in content and "guests" in call.prompt.split("<<<END FACT")[0]:
                    return decision_json("update", cid, "policy changed")
            return decision_json("none")

        brain.decide = decide
        src = remember(d, "Wifi policy update: no monthly rotation; guests may use it.")
        run_jobs(d)
        outcome = {a["metadata"]["fact"]["content"][:30]: a["metadata"] for a in audits(d, src)}
        deleted = outcome["The office wifi password no lo"]
        assert deleted["outcome"] == "deleted" and deleted["deletedMemoryId"] == stale
        row = rows(d, "SELECT * FROM memories WHERE id = ?", stale)[0]
        assert row["is_deleted"] == 1 and row["delete_reason"].startswith("pipeline-v2:")
        blocked = outcome["The office wifi may now be sha"]
        assert blocked["outcome"] == "blocked" and blocked["blockedReason"] == "target_pinned"
        pin = rows(d, "SELECT * FROM memories WHERE id = ?", pinned)[0]
        assert (pin["version"], pin["superseded_by"], pin["is_deleted"]) == (1, None, 0)


def test_controlled_mode_blocks_destructive_proposals_and_flags_contradictions(
        tmp_path, llm, brain):
    with manual_daemon(tmp_path, pipeline_config(llm.url)) as d:
        target = remember(d, "Dark mode is enabled in the editor")
        run_jobs(d)
        brain.extractions["Settings"] = facts_json(("Dark mode is disabled in the editor", 0.9))
        brain.decide = target_containing("dark mode")
        src = remember(d, "Settings changed: dark mode disabled in the editor today")
        run_jobs(d)
        meta = audits(d, src)[0]["metadata"]
        assert (meta["outcome"], meta["blockedReason"]) == (
            "blocked", "destructive_mutations_disabled")
        assert meta["contradictionRisk"] and meta["reviewNeeded"]
        assert meta["targetMemoryId"] == target and derived(d) == []
        assert rows(d, "SELECT version FROM memories WHERE id = ?", target)[0]["version"] == 1


def test_semantic_contradiction_check_when_enabled(tmp_path, llm, brain):
    config = pipeline_config(llm.url, semanticContradictionEnabled=True,
                             semanticContradictionTimeoutMs=5000)
    with manual_daemon(tmp_path, config) as d:
        remember(d, "The billing service stores invoices in PostgreSQL tables")
        run_jobs(d)
        brain.extractions["Moved"] = facts_json(
            ("The billing service stores invoices in MongoDB collections", 0.9))
        brain.decide = target_containing("PostgreSQL")
        brain.contradicts = True
        src = remember(d, "Moved: billing service invoices now live in MongoDB")
        run_jobs(d)
        assert llm.generations("contradiction")
        meta = audits(d, src)[0]["metadata"]
        assert meta["reviewNeeded"] and meta["semanticContradiction"]["detected"]


@pytest.mark.parametrize(("flags", "mode", "blocked"), [
    ({"shadowMode": True}, "shadow", None),
    ({"mutationsFrozen": True}, "frozen", "mutations_frozen"),
])
def test_shadow_and_frozen_only_audit(tmp_path, llm, brain, flags, mode, blocked):
    brain.extractions["Note"] = facts_json(("Alice prefers tabs over spaces", 0.9),
                                           entities=[("Alice", "prefers", "tabs", 0.8)])
    with manual_daemon(tmp_path, pipeline_config(llm.url, **flags)) as d:
        src = remember(d, "Note: Alice prefers tabs over spaces.")
        run_jobs(d)
        assert job_of(d, src)["result"]["mode"] == mode
        assert rows(d, "SELECT COUNT(*) AS n FROM memories")[0]["n"] == 1
        assert graph.counts(d.db.reader()) == {"entities": 0, "relations": 0, "mentions": 0}
        (a,) = audits(d, src)
        assert (a["event"], a["changed_by"]) == ("none", "pipeline-shadow")
        m = a["metadata"]
        assert m["shadow"] and m["proposedAction"] == "add" and m["blockedReason"] == blocked
        for key in ("targetMemoryId", "confidence", "contradictionRisk", "reviewNeeded", "fact"):
            assert key in m


def test_graph_persistence_is_idempotent_averaged_and_cleaned_by_retention(tmp_path, llm, brain):
    triple = ("billing service", "uses", "PostgreSQL")
    brain.extractions["Arch"] = facts_json(entities=[(*triple, 0.9)])
    brain.extractions["Again"] = facts_json(entities=[("Billing  Service", "USES",
                                                       "postgresql", 0.5)])
    # the pipeline's graph writes alone: the inline linker would add its own rows
    config = pipeline_config(llm.url, graph={"inlineLinker": False})
    with manual_daemon(tmp_path, config) as d:
        first = remember(d, "Arch: the billing service uses PostgreSQL")
        run_jobs(d)
        job = job_of(d, first)
        d.extraction.pipeline.handle(jobs.Job(  # the same memory processed again
            id="rerun", job_type="extract", memory_id=first, document_id=None, payload={},
            attempts=1, max_attempts=3))
        second = remember(d, "Again: Billing Service USES postgresql")
        run_jobs(d)
        rel = rows(d, "SELECT * FROM relations")
        assert len(rel) == 1 and rel[0]["mentions"] == 3 and rel[0]["strength"] == 1.0
        assert rel[0]["confidence"] == pytest.approx((0.9 + 0.9 + 0.5) / 3)
        ents = {e["canonical_name"]: e for e in rows(d, "SELECT * FROM entities")}
        assert set(ents) == {"billing service", "postgresql"}
        assert ents["billing service"]["mentions"] == 2  # two memories, not three runs
        links = rows(d, "SELECT * FROM memory_entity_mentions WHERE memory_id = ?", second)
        assert {m["mention_text"] for m in links} == {"Billing Service", "postgresql"}
        assert job["result"]["graph"]["relations_created"] == 1
        # tombstones past retention take their links, and orphaned entities and relations go
        with d.db.write_tx() as conn:
            conn.execute("UPDATE memories SET is_deleted = 1, deleted_at = '2000-01-01T00:00:00"
                         ".000Z' WHERE id IN (?, ?)", (first, second))
        report = RetentionWorker(d.db, d.config.memory.retention).sweep()
        assert report.graph_links == 4 and report.orphan_entities == 2
        assert graph.counts(d.db.reader()) == {"entities": 0, "relations": 0, "mentions": 0}


def test_graph_failure_never_reverts_the_facts(tmp_path, llm, brain, monkeypatch):
    brain.extractions["Graph"] = facts_json(("The search team owns the ranking service", 0.9),
                                            entities=[("search team", "owns", "ranking", 0.9)])

    def boom(*args, **kwargs):
        raise RuntimeError("graph tables are locked")

    monkeypatch.setattr(graph, "upsert_entity", boom)
    with manual_daemon(tmp_path, pipeline_config(llm.url)) as d:
        src = remember(d, "Graph: the search team owns the ranking service")
        run_jobs(d)
        job = job_of(d, src)
        assert job["status"] == "completed" and len(derived(d)) == 1
        assert any("graph persistence failed" in w for w in job["result"]["warnings"])
