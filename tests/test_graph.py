"""The inline entity linker on every write path, and graph-augmented search, over real
SQLite files through the real service (keyword-only where exact scores are compared)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from llm_servers import FakeLlmServer
from mnemonist.daemon import Daemon
from mnemonist.graph import boost as gb
from mnemonist.model.requests import (
    DeleteRequest,
    ForgetRequest,
    ImportRequest,
    MemoryPatch,
    RecallFilters,
    RecallRequest,
    RecoverRequest,
)
from mnemonist.pipeline.retention import RetentionWorker
from mnemonist.search.dampening import hub
from mnemonist.search.hits import Hit
from mnemonist.store import entity_links, graph, memories
from pipeline_helpers import (
    Brain,
    facts_json,
    manual_daemon,
    pipeline_config,
    remember,
    run_jobs,
    run_prose,
)

pytestmark = pytest.mark.both_stores

KEYWORD_ONLY = {"embedding": {"provider": "none"}}


@contextmanager
def daemon(home: Path, graph_cfg: dict[str, Any] | None = None,
           **sections: Any) -> Iterator[Daemon]:
    config: dict[str, Any] = {**KEYWORD_ONLY, **sections}
    memory = config.setdefault("memory", {})
    memory.setdefault("pipelineV2", {})["graph"] = graph_cfg or {}
    with manual_daemon(home, config) as d:
        yield d


def entities(d: Daemon) -> dict[str, tuple[str, int]]:
    return {r["canonical_name"]: (r["entity_type"], r["mentions"])
            for r in d.db.reader().execute("SELECT * FROM entities")}


def links(d: Daemon, memory_id: str) -> dict[str, float]:
    return {r[0]: r[1] for r in d.db.reader().execute(
        "SELECT e.canonical_name, mm.confidence FROM memory_entity_mentions mm"
        " JOIN entities e ON e.id = mm.entity_id WHERE mm.memory_id = ?", (memory_id,))}


def pairs(d: Daemon) -> dict[frozenset[str], int]:
    return {frozenset((r[0], r[1])): r[2] for r in d.db.reader().execute(
        "SELECT a.canonical_name, b.canonical_name, r.mentions FROM relations r"
        " JOIN entities a ON a.id = r.source_entity_id"
        " JOIN entities b ON b.id = r.target_entity_id WHERE r.relation_type = 'co_occurrence'")}


def assert_mentions_exact(d: Daemon) -> None:
    """Every entity's mention count is the number of memories linked to it."""
    wrong = d.db.reader().execute(
        "SELECT * FROM (SELECT canonical_name, mentions, (SELECT COUNT(*)"
        " FROM memory_entity_mentions mm WHERE mm.entity_id = e.id) AS n FROM entities e) x"
        " WHERE mentions != n").fetchall()
    assert [tuple(r) for r in wrong] == []


# --- the inline linker -------------------------------------------------------------------


def test_remember_links_entities_mentions_and_co_occurrence(tmp_path):
    with daemon(tmp_path) as d:
        first = remember(d, "We moved billing from MySQL to postgres at Acme Corp")
        assert entities(d) == {"mysql": ("technology", 1), "postgresql": ("technology", 1),
                               "acme corp": ("name", 1)}
        assert links(d, first) == {"mysql": 0.6, "postgresql": 0.6, "acme corp": 0.6}
        assert pairs(d) == {frozenset(("mysql", "postgresql")): 1,
                            frozenset(("mysql", "acme corp")): 1,
                            frozenset(("postgresql", "acme corp")): 1}
        second = remember(d, "Acme Corp runs PostgreSQL on Kubernetes")
        assert entities(d)["postgresql"] == ("technology", 2)
        assert entities(d)["acme corp"] == ("name", 2)
        assert pairs(d)[frozenset(("postgresql", "acme corp"))] == 2
        assert pairs(d)[frozenset(("kubernetes", "acme corp"))] == 1
        assert set(links(d, second)) == {"acme corp", "postgresql", "kubernetes"}
        row = d.db.reader().execute("SELECT strength FROM relations LIMIT 1").fetchone()
        assert row[0] == 1.0
        # a duplicate remember is deduplicated: nothing is linked twice
        remember(d, "Acme Corp runs PostgreSQL on Kubernetes")
        assert entities(d)["kubernetes"] == ("technology", 1)
        assert_mentions_exact(d)


def test_a_tentative_name_links_only_to_a_known_entity(tmp_path):
    with daemon(tmp_path) as d:
        early = remember(d, "Zofia prefers tabs")  # a sentence start proves nothing yet
        assert entities(d) == {} and links(d, early) == {}
        remember(d, "The review is with Zofia tomorrow")  # mid-sentence: now a name
        later = remember(d, "Zofia approved the release")
        assert links(d, later) == {"zofia": 0.6}
        assert entities(d) == {"zofia": ("name", 2)}
        assert_mentions_exact(d)


def test_co_occurrence_is_capped_per_memory(tmp_path):
    names = ["Anna", "Boris", "Clara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines",
             "Jonas", "Kira", "Lars"]
    with daemon(tmp_path) as d:
        mid = remember(d, "invited today: " + ", ".join(f"dear {n}" for n in names))
        assert len(links(d, mid)) == 12
        cap = entity_links.MAX_PAIR_ENTITIES
        assert len(pairs(d)) == cap * (cap - 1) // 2  # 45, not 66


def test_import_links_every_item_and_a_rerun_adds_nothing(tmp_path):
    items = [{"content": "Caroline: I joined the LGBTQ support group", "source_id": "chat"},
             {"content": "Melanie: Proud of you, Caroline!", "source_id": "chat"},
             {"content": "Caroline: Thanks Melanie", "source_id": "chat"}]
    with daemon(tmp_path) as d:
        out = d.service.carry.import_memories(ImportRequest(items=items))
        assert out["created"] == 3
        # the names in the import's transaction, the noun phrases from the background job
        assert entities(d) == {"caroline": ("name", 3), "lgbtq": ("name", 1),
                               "melanie": ("name", 2)}
        assert run_prose(d) == 1
        assert entities(d) == {"caroline": ("name", 3), "lgbtq": ("name", 1),
                               "lgbtq support group": ("phrase", 1), "melanie": ("name", 2)}
        before = (entities(d), pairs(d))
        again = d.service.carry.import_memories(ImportRequest(items=items))
        run_prose(d)
        assert again["created"] == 0 and (entities(d), pairs(d)) == before
        assert_mentions_exact(d)


def test_modify_relinks_only_what_changed(tmp_path):
    with daemon(tmp_path) as d:
        mid = remember(d, "Acme Corp keeps invoices in PostgreSQL")
        other = remember(d, "PostgreSQL is backed up at night")
        d.service.memories.patch(mid, MemoryPatch(
            content="Acme Corp keeps invoices in SQLite via Fly",
            reason="moved"))
        assert links(d, mid) == {"acme corp": 0.6, "sqlite": 0.6, "fly": 0.6}
        assert entities(d)["postgresql"] == ("technology", 1)  # only `other` now
        assert entities(d)["acme corp"] == ("name", 1)  # kept, not counted twice
        assert pairs(d)[frozenset(("acme corp", "sqlite"))] == 1
        # the pair's only memory no longer names both: the count falls to 0 and the row goes
        assert frozenset(("acme corp", "postgresql")) not in pairs(d)
        # a change that names the same entities, or no text change, writes no graph row
        before = (entities(d), pairs(d))
        d.service.memories.patch(mid, MemoryPatch(
            content="Acme Corp stores invoices in SQLite via Fly",
            reason="reworded"))
        d.service.memories.patch(mid, MemoryPatch(tags=["billing"], reason="tagged"))
        assert (entities(d), pairs(d)) == before
        # one more entity: only its pairs are new; the pairs already seen are not recounted
        d.service.memories.patch(mid, MemoryPatch(
            content="Acme Corp stores invoices in SQLite via Fly"
            " and Redis", reason="cache"))
        assert pairs(d)[frozenset(("acme corp", "sqlite"))] == 1
        assert pairs(d)[frozenset(("redis", "sqlite"))] == 1
        assert set(links(d, other)) == {"postgresql"}
        assert_mentions_exact(d)


def test_linking_again_is_idempotent(tmp_path):
    with daemon(tmp_path) as d:
        mid = remember(d, "Acme Corp runs PostgreSQL on Kubernetes")
        before = (entities(d), pairs(d), links(d, mid))
        with d.db.write_tx() as conn:
            assert entity_links.link(conn, mid, "Acme Corp runs PostgreSQL on Kubernetes") == 0
            entity_links.relink(conn, mid, "Acme Corp runs PostgreSQL on Kubernetes",
                                "Acme Corp runs PostgreSQL on Kubernetes")
        assert (entities(d), pairs(d), links(d, mid)) == before


def test_soft_delete_keeps_links_hard_delete_and_retention_remove_them(tmp_path):
    with daemon(tmp_path) as d:
        soft = remember(d, "Acme Corp signed with Stripe")
        hard = remember(d, "Acme Corp pays with PayPal")
        keep = remember(d, "Acme Corp is based in Oslo")
        d.service.memories.delete(soft, DeleteRequest(reason="wrong"))
        assert set(links(d, soft)) == {"acme corp", "stripe"}
        assert entities(d)["acme corp"] == ("name", 3)
        d.service.memories.recover(soft, RecoverRequest(reason="it was right"))
        assert set(links(d, soft)) == {"acme corp", "stripe"}

        d.service.memories.forget(ForgetRequest(
            mode="execute", ids=[hard], force=True, reason="purge"))
        assert links(d, hard) == {}
        assert entities(d)["acme corp"] == ("name", 2)
        assert "paypal" not in entities(d)  # a purge drops what only that memory named
        assert_mentions_exact(d)

        d.service.memories.delete(soft, DeleteRequest(reason="wrong after all"))
        with d.db.write_tx() as conn:
            conn.execute("UPDATE memories SET deleted_at = '2000-01-01T00:00:00.000Z'"
                         " WHERE id = ?", (soft,))
        report = RetentionWorker(d.db, d.config.memory.retention).sweep()
        assert report.graph_links == 2 and report.tombstones == 1
        assert entities(d) == {"acme corp": ("name", 1), "oslo": ("name", 1)}
        assert set(links(d, keep)) == {"acme corp", "oslo"}
        assert_mentions_exact(d)


@pytest.mark.parametrize("graph_cfg", [{"inlineLinker": False}, {"enabled": False}])
def test_turned_off_nothing_is_written(tmp_path, graph_cfg):
    with daemon(tmp_path, graph_cfg) as d:
        mid = remember(d, "Acme Corp runs PostgreSQL on Kubernetes")
        d.service.carry.import_memories(ImportRequest(items=[{"content": "Caroline met Melanie"}]))
        d.service.memories.patch(mid, MemoryPatch(content="Acme Corp runs SQLite", reason="moved"))
        assert graph.counts(d.db.reader()) == {"entities": 0, "relations": 0, "mentions": 0}


def test_pipeline_writes_are_linked_too(tmp_path):
    brain = Brain()
    brain.extractions["Planning notes"] = facts_json(
        ("The billing service keeps its invoices in PostgreSQL at Acme Corp", 0.9))
    with FakeLlmServer(script=brain) as srv, manual_daemon(tmp_path,
                                                           pipeline_config(srv.url)) as d:
        src = remember(d, "Planning notes: billing is done")
        run_jobs(d)
        fact = d.db.reader().execute(
            "SELECT id FROM memories WHERE who = 'pipeline-v2'").fetchone()[0]
        assert links(d, src) == {}
        assert links(d, fact) == {"postgresql": 0.6, "acme corp": 0.6, "billing service": 0.6}


# --- graph-augmented search -------------------------------------------------------------

NO_DAMPING = {"dampening": {"gravityEnabled": False, "hubEnabled": False}}


def recall_scores(d: Daemon, query: str, **filters: Any) -> dict[str, float]:
    out = d.service.reads.recall(RecallRequest(query=query, min_score=0.0, limit=50, **filters))
    return {r["id"]: r["score"] for r in out["results"]}


def test_boost_lifts_a_named_entity_and_its_neighbour(tmp_path):
    graph_cfg = {"boostWeight": 0.15, "hopWeight": 0.5}
    with daemon(tmp_path, graph_cfg, memory={"pipelineV2": dict(NO_DAMPING)}) as d:
        seed = remember(d, "Kubernetes upgrade notes for Acme Corp")
        hop = remember(d, "Acme Corp renewal notes")  # a neighbour of Kubernetes via `seed`
        plain = remember(d, "Initech Ltd renewal notes")  # the same words, no relation
        query = "kubernetes upgrade notes"
        boosted = recall_scores(d, query)
        d.config.memory.pipeline_v2.graph.boost_weight = 0.0
        base = recall_scores(d, query)
        assert boosted[seed] == pytest.approx(base[seed] + 0.15, abs=1e-4)
        assert boosted[hop] == pytest.approx(base[hop] + 0.075, abs=1e-4)
        assert boosted[plain] == pytest.approx(base[plain], abs=1e-4)
        assert base[hop] == pytest.approx(base[plain], abs=1e-4)
        assert boosted[hop] > boosted[plain]


def test_boost_matches_whole_names_not_substrings(tmp_path):
    with daemon(tmp_path) as d:
        art = remember(d, "We love modern Art and the Bank of America lobby")
        conn = d.db.reader()
        assert gb.graph_boost(conn, "party planning", None, timeout_ms=5000).weights == {}
        assert gb.graph_boost(conn, "america trip", None, timeout_ms=5000).weights == {}
        found = gb.graph_boost(conn, "who was at bank of america?", None, timeout_ms=5000,
                               hop_weight=0.0)
        assert found.weights == {art: 1.0}
    assert "next.js" in gb.query_names("is Next.js fast") and "postgresql" in gb.query_names(
        "postgres tuning")


def test_boost_respects_the_project_filter_and_deleted_memories(tmp_path):
    with daemon(tmp_path) as d:
        ours = remember(d, "Acme Corp budget review", project="alpha")
        theirs = remember(d, "Acme Corp budget review", project="beta")
        gone = remember(d, "Acme Corp budget draft", project="alpha")
        d.service.memories.delete(gone, DeleteRequest(reason="draft"))
        conn = d.db.reader()
        found = gb.graph_boost(conn, "acme corp", RecallFilters(project="alpha"), timeout_ms=5000)
        assert found.weights == {ours: 1.0}
        everywhere = gb.graph_boost(conn, "acme corp", None, timeout_ms=5000)
        assert everywhere.weights == {ours: 1.0, theirs: 1.0}
        assert set(recall_scores(d, "acme corp budget", project="alpha")) == {ours}


def test_timeout_returns_what_was_found_and_reports_degraded(tmp_path, monkeypatch):
    with daemon(tmp_path, {"boostTimeoutMs": 50}) as d:
        seed = remember(d, "Kubernetes upgrade notes for Acme Corp")
        remember(d, "Acme Corp renewal notes")

        def slow(conn, seeds, *_):
            time.sleep(0.08)
            return []

        monkeypatch.setattr(gb, "_neighbours", slow)
        found = gb.graph_boost(d.db.reader(), "kubernetes notes", None, timeout_ms=50)
        assert found.timed_out and found.weights == {seed: 1.0}
        out = d.service.reads.recall(RecallRequest(query="kubernetes notes", min_score=0.0))
        assert "graph_timeout" in out["degraded"]

        def endless(conn, seeds, *_):  # a statement past the deadline is interrupted (either store)
            conn.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"
                         " SELECT COUNT(*) FROM c").fetchone()
            return []

        monkeypatch.setattr(gb, "_neighbours", endless)
        started = time.monotonic()
        found = gb.graph_boost(d.db.reader(), "kubernetes notes", None, timeout_ms=50)
        assert found.timed_out and found.weights == {seed: 1.0}
        assert time.monotonic() - started < 30  # the query alone would never end
        # the reader is left without a progress handler (statement_timeout on PostgreSQL)
        assert d.db.reader().execute("SELECT 1").fetchone()[0] == 1


def test_an_error_means_no_boost_not_a_failed_recall(tmp_path, monkeypatch):
    with daemon(tmp_path) as d:
        mid = remember(d, "Kubernetes upgrade notes")

        def broken(conn, names, filters):
            raise RuntimeError("boom")

        monkeypatch.setattr(gb, "_seeds", broken)
        assert gb.graph_boost(d.db.reader(), "kubernetes", None, timeout_ms=5000).weights == {}
        out = d.service.reads.recall(RecallRequest(query="kubernetes upgrade", min_score=0.0))
        assert [r["id"] for r in out["results"]] == [mid] and out["degraded"] == [
            "vector_index_unavailable"]


def test_hub_dampening_acts_on_inline_linked_hubs(tmp_path):
    with daemon(tmp_path) as d:
        for i in range(12):
            remember(d, f"Caroline: note number {i} about Project {chr(65 + i)}x")
        only_hub = remember(d, "Caroline: plain note")
        specific = remember(d, "Caroline: a note about Lisbon")
        conn = d.db.reader()
        rows = memories.get_many_by_seq(conn, [r[0] for r in conn.execute(
            "SELECT seq FROM memories WHERE id IN (?, ?)", (only_hub, specific))])
        hits = {m.id: Hit(m, 1.0, "keyword", 1.0, None) for m in rows.values()}
        hub(conn, list(hits.values()), percentile=0.9, penalty=0.7)
        assert hits[only_hub].score == pytest.approx(0.7)  # linked only to the hub
        assert hits[specific].score == 1.0  # also linked to a rare entity
