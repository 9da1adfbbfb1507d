"""The knowledge graph agents use: impact tiers, knowledge expansion within a budget, entity
reads, traversal limits, decision auto-protection, communities and feedback. A real daemon
over HTTP (keyword-only: the graph needs no vectors) on real SQLite files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import LiveDaemon, run_daemon
from hook_payloads import payload
from mnemonist.graph.walks import DEPENDENCY_TYPES, Limits, walk
from mnemonist.model.config import MemoryConfig
from mnemonist.search.signals import effective_importance
from mnemonist.store import memories
from mnemonist.text.prose_graph import read

pytestmark = pytest.mark.both_stores

#: the walks get the longest deadline there is: these tests are about what a whole walk finds,
#: and on a loaded machine with PostgreSQL a 200 ms walk can stop early (its deadline has
#: tests of its own)
KEYWORD_ONLY: dict[str, Any] = {
    "embedding": {"provider": "none"},
    "memory": {"pipelineV2": {"graph": {"traversal": {"timeoutMs": 5000}}}},
}

SERVICE_GRAPH = [
    "Our ShopApi depends on ShopDb for orders.",
    "The nightly BackupJob reads from ShopDb.",
    "The Storefront calls ShopApi on every page view.",
    "We chart ShopDb latency in Grafana.",
]


@pytest.fixture(scope="module")
def shop(daemon_store: str, tmp_path_factory: pytest.TempPathFactory):
    """The service graph (api -> db, backups -> db, storefront -> api, a dashboard) in
    project shop, and one more dependent of ShopDb known only to project other."""
    with run_daemon(tmp_path_factory.mktemp("shop"), KEYWORD_ONLY) as live:
        ids = {text: live.remember(text, project="shop")["id"] for text in SERVICE_GRAPH}
        ids["ledger"] = live.remember("The Ledger depends on ShopDb.",
                                      project="other")["id"]
        yield live, ids


def post(live: LiveDaemon, path: str, body: dict[str, Any], status: int = 200) -> dict:
    resp = live.http.post(path, json=body)
    assert resp.status_code == status, resp.text
    return resp.json()


def names(items: list[dict[str, Any]]) -> list[str]:
    return [i["entity"]["name"] for i in items]


# --- stated dependencies (pure) -----------------------------------------------------------


@pytest.mark.parametrize(("text", "pairs"), [
    ("Our ShopApi service depends on ShopDb.", [("shopapi service", "shopdb")]),
    ("Our ShopApi depends on ShopDb.", [("shopapi", "shopdb")]),
    ("The nightly BackupJob reads from ShopDb.", [("backupjob", "shopdb")]),
    ("Our ShopDb is used by ShopApi.", [("shopapi", "shopdb")]),
    ("Our ShopDb runs on postgres.", [("shopdb", "postgresql")]),
    ("Our ShopApi and ShopDb were slow today.", []),
    ("Our ShopApi depends on the network and ShopDb.", []),  # not adjacent: no claim
])
def test_dependencies_read_off_one_sentence(text: str, pairs: list[tuple[str, str]]) -> None:
    assert [(r.source, r.target) for r in read(text).relations
            if r.relation_type in DEPENDENCY_TYPES] == pairs


# --- graph_impact ---------------------------------------------------------------------------


def test_impact_tiers_from_plain_remembers(shop) -> None:
    live, ids = shop
    out = post(live, "/api/graph/impact", {"entity": "shopdb", "project": "shop"})
    assert out["entity"]["name"] == "ShopDb"
    tiers = out["tiers"]
    assert sorted(names(tiers["will_break"])) == ["BackupJob", "ShopApi"]
    assert names(tiers["likely_affected"]) == ["Storefront"]
    assert names(tiers["may_need_testing"]) == ["Grafana"]
    api = next(i for i in tiers["will_break"] if i["entity"]["name"] == "ShopApi")
    assert api["tier"] == "WILL BREAK" and api["depth"] == 1 and api["confidence"] == 0.8
    assert api["path"] == ["ShopDb", "ShopApi"]
    assert api["edges"][0]["type"] == "depends_on"
    assert api["edges"][0]["reason"] == "pattern-matched"
    assert api["supporting_memory_ids"] == [ids[SERVICE_GRAPH[0]]]
    front = tiers["likely_affected"][0]
    assert front["depth"] == 2 and front["confidence"] == 0.64
    assert front["path"] == ["ShopDb", "ShopApi", "Storefront"]
    assert front["supporting_memory_ids"] == [ids[SERVICE_GRAPH[2]]]
    grafana = tiers["may_need_testing"][0]
    # named together once (0.5), an association counts half in an impact walk
    assert grafana["confidence"] == 0.25 and grafana["edges"][0]["reason"] == "co-occurrence"
    assert grafana["edges"][0]["counted_as"] == 0.25
    # the other project's dependent is not reachable from project shop, but is unscoped
    everywhere = post(live, "/api/graph/impact", {"entity": "ShopDb"})
    assert "Ledger" in names(everywhere["tiers"]["will_break"])
    assert out["affected"] == 4


def test_impact_honours_depth_and_min_confidence(shop) -> None:
    live, _ = shop
    shallow = post(live, "/api/graph/impact",
                   {"entity": "ShopDb", "project": "shop", "max_depth": 1})
    assert "Storefront" not in names(shallow["tiers"]["likely_affected"])
    assert shallow["limits"]["max_hops"] == 1
    strict = post(live, "/api/graph/impact",
                  {"entity": "ShopDb", "project": "shop", "min_confidence": 0.6})
    assert strict["tiers"]["may_need_testing"] == []  # the co-occurrence edge (0.5) is not followed
    assert sorted(names(strict["tiers"]["will_break"])) == ["BackupJob", "ShopApi"]


def test_a_second_memory_stating_a_dependency_makes_it_multi_memory(tmp_path: Path) -> None:
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        for text in SERVICE_GRAPH:
            live.remember(text)
        before = post(live, "/api/graph/impact", {"entity": "ShopDb"})
        assert names(before["tiers"]["likely_affected"]) == ["Storefront"]
        live.remember("The ShopApi relies on ShopDb for sessions too.")
        after = post(live, "/api/graph/impact", {"entity": "ShopDb"})
        api = next(i for i in after["tiers"]["will_break"] if i["entity"]["name"] == "ShopApi")
        assert api["edges"][0]["reason"] == "multi-memory" and api["confidence"] == 0.9
        assert len(api["supporting_memory_ids"]) == 2
        # 0.9 x 0.8: a chain of confident dependencies breaks too
        front = next(i for i in after["tiers"]["will_break"]
                     if i["entity"]["name"] == "Storefront")
        assert front["confidence"] == 0.72


def test_impact_of_an_unknown_entity_is_a_404_naming_it(shop) -> None:
    live, _ = shop
    body = post(live, "/api/graph/impact", {"entity": "NoSuchThing"}, status=404)
    assert body["error"] == "not_found" and "NoSuchThing" in body["message"]
    bad = post(live, "/api/graph/impact", {"entity": "ShopDb", "max_depth": 0}, status=400)
    assert "max_depth" in bad["message"]


# --- knowledge_expand ---------------------------------------------------------------------


def test_expand_gives_neighbours_with_their_supporting_memories(shop) -> None:
    live, ids = shop
    out = post(live, "/api/knowledge/expand",
               {"entity": "ShopApi", "hops": 1, "project": "shop"})
    assert [e["name"] for e in out["entities"]] == ["ShopApi"]
    assert {m["id"] for m in out["memories"]} == {ids[SERVICE_GRAPH[0]], ids[SERVICE_GRAPH[2]]}
    by_name = {n["entity"]["name"]: n for n in out["neighbours"]}
    assert set(by_name) == {"ShopDb", "Storefront"}
    assert by_name["ShopDb"]["relation"]["type"] == "depends_on"
    assert by_name["ShopDb"]["supporting_memory_ids"] == [ids[SERVICE_GRAPH[0]]]
    assert by_name["ShopDb"]["memories"] == []  # already shown with the entity itself
    assert all(n["hops"] == 1 for n in out["neighbours"])
    assert out["tokens"] <= out["max_tokens"] and out["truncated"] is False
    # two hops: what ShopDb leads to, with the memory that says so
    far = post(live, "/api/knowledge/expand", {"entity": "ShopApi", "hops": 2,
                                               "project": "shop"})
    backup = next(n for n in far["neighbours"] if n["entity"]["name"] == "BackupJob")
    assert backup["hops"] == 2 and backup["via"] == ["ShopApi", "ShopDb", "BackupJob"]
    assert [m["id"] for m in backup["memories"]] == [ids[SERVICE_GRAPH[1]]]


def test_expand_respects_the_token_budget(shop) -> None:
    live, ids = shop
    tiny = post(live, "/api/knowledge/expand",
                {"entity": "ShopDb", "hops": 2, "max_tokens": 25, "project": "shop"})
    assert tiny["truncated"] is True and tiny["tokens"] <= 25
    shown = [m["id"] for m in tiny["memories"]] + [
        m["id"] for n in tiny["neighbours"] for m in n["memories"]]
    assert len(shown) == len(set(shown)) and len(shown) < 4
    whole = post(live, "/api/knowledge/expand",
                 {"entity": "ShopDb", "hops": 2, "max_tokens": 5000, "project": "shop"})
    assert whole["truncated"] is False
    shown = {m["id"] for m in whole["memories"]} | {
        m["id"] for n in whole["neighbours"] for m in n["memories"]}
    assert shown == {ids[t] for t in SERVICE_GRAPH}  # every shop memory, not the ledger's


def test_expand_from_a_memory_starts_at_its_entities(shop) -> None:
    live, ids = shop
    mid = ids[SERVICE_GRAPH[1]]
    out = post(live, "/api/knowledge/expand", {"memory_id": mid, "hops": 1, "project": "shop"})
    assert out["memory"]["id"] == mid
    assert sorted(e["name"] for e in out["entities"]) == ["BackupJob", "ShopDb"]
    assert {"ShopApi", "Grafana"} <= set(names(out["neighbours"]))
    elsewhere = post(live, "/api/knowledge/expand", {"memory_id": ids["ledger"],
                                                     "project": "shop"}, status=404)
    assert ids["ledger"] in elsewhere["message"]
    both = post(live, "/api/knowledge/expand", {"memory_id": mid, "entity": "ShopDb"},
                status=400)
    assert "entity and memory_id" in both["message"]


# --- entity reads ---------------------------------------------------------------------------


def test_entities_list_counts_only_memories_passing_the_filters(shop) -> None:
    live, _ = shop
    every = live.http.get("/api/entities", params={"limit": 100}).json()
    # each project has its own ShopDb: counts and ids never mix projects
    counts = {(e["name"], e["project"]): (e["memories"], e["mentions"])
              for e in every["entities"]}
    assert counts[("ShopDb", "shop")] == (3, 3) and counts[("ShopDb", "other")] == (1, 1)
    assert counts[("Ledger", "other")] == (1, 1)
    scoped = live.http.get("/api/entities", params={"project": "shop"}).json()
    counts = {e["name"]: e["memories"] for e in scoped["entities"]}
    assert counts["ShopDb"] == 3 and "Ledger" not in counts
    assert {e["project"] for e in scoped["entities"]} == {"shop"}
    assert scoped["entities"][0]["name"] == "ShopDb"  # most memories first
    found = live.http.get("/api/entities", params={"q": "shop"}).json()
    assert sorted(e["name"] for e in found["entities"]) == ["ShopApi", "ShopDb", "ShopDb"]
    bad = live.http.get("/api/entities", params={"limit": 0})
    assert bad.status_code == 400 and "limit" in bad.json()["message"]


def test_entity_detail_and_neighbourhood(shop) -> None:
    live, ids = shop
    listed = live.http.get("/api/entities", params={"q": "shopapi"}).json()["entities"]
    entity_id = listed[0]["id"]
    detail = live.http.get(f"/api/entities/{entity_id}").json()
    assert detail["entity"]["name"] == "ShopApi" and detail["memories_count"] == 2
    assert {a["memory_id"] for a in detail["attributes"]} == {
        ids[SERVICE_GRAPH[0]], ids[SERVICE_GRAPH[2]]}
    assert {a["kind"] for a in detail["attributes"]} == {"attribute"}
    assert {r["entity"]["name"] for r in detail["relations"]} == {"ShopDb", "Storefront"}
    by_name = live.http.get("/api/entities/ShopApi").json()
    assert by_name["entity"]["id"] == entity_id
    assert live.http.get("/api/entities/nope-nothing").status_code == 404
    hood = live.http.get("/api/graph/neighbourhood",
                         params={"entity": "ShopDb", "hops": 1, "project": "shop"}).json()
    assert {n["name"] for n in hood["nodes"]} == {"ShopDb", "ShopApi", "BackupJob", "Grafana"}
    node_ids = {n["id"] for n in hood["nodes"]}
    assert all(e["source"] in node_ids and e["target"] in node_ids for e in hood["edges"])


# --- traversal limits ---------------------------------------------------------------------

GODS = ["Apollo", "Athena", "Hermes", "Ares", "Hera", "Demeter", "Poseidon", "Hades"]


def test_walk_honours_branching_paths_hops_and_deadline(tmp_path: Path) -> None:
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        for god in GODS:
            live.remember(f"Our Zeus depends on {god}.")
        for god in ("Hades", "Hera"):  # stated twice: the most confident edges
            live.remember(f"Our Zeus relies on {god} as well.")
        live.remember("Our Hades depends on Cerberus.")
        conn = live.daemon.db.reader()
        zeus = conn.execute("SELECT id FROM entities WHERE canonical_name = 'zeus'").fetchone()[0]
        name = dict(conn.execute("SELECT id, name FROM entities").fetchall())

        def run(**kw: Any):
            limits = {"min_confidence": 0.5, "max_branching": 4, "max_paths": 50,
                      "max_hops": 3, "timeout_ms": 1000, **kw}
            return walk(conn, [zeus], Limits(**limits))

        wide = run(max_branching=20)
        assert {name[e] for e in wide.reached} == {*GODS, "Cerberus"}
        four = run()
        first = {name[r.entity_id] for r in four.reached.values() if r.hops == 1}
        assert len(first) == 4 and {"Hades", "Hera"} <= first
        assert "max_branching" in four.limited_by
        assert "Cerberus" in {name[e] for e in four.reached}  # through Hades, two hops
        one_hop = run(max_hops=1)
        assert "Cerberus" not in {name[e] for e in one_hop.reached}
        three = run(max_paths=3)
        assert three.paths == 3 and len(three.reached) == 3 and "max_paths" in three.limited_by
        late = run(timeout_ms=-1)
        assert late.timed_out and late.reached == {} and late.limited_by == ["deadline"]
        confident = run(min_confidence=0.85, max_branching=20)
        assert {name[e] for e in confident.reached} == {"Hades", "Hera"}


# --- decision auto-protection -----------------------------------------------------------


def test_decision_language_is_stored_as_a_protected_decision(tmp_path: Path) -> None:
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        stored = live.remember("We decided to go with SQLite for the cache")
        assert stored["type"] == "decision" and stored["importance"] == 0.85
        conn = live.daemon.db.reader()
        rows = conn.execute(
            "SELECT e.canonical_name, a.kind, a.importance, a.content FROM entity_attributes a"
            " JOIN entities e ON e.id = a.entity_id WHERE a.memory_id = ?",
            (stored["id"],)).fetchall()
        assert [tuple(r) for r in rows] == [
            ("sqlite", "constraint", 0.85, "We decided to go with SQLite for the cache")]
        # decisions do not decay, even where every other type does: a year unaccessed, a
        # fact lost most of its weight
        m = memories.get(conn, stored["id"])
        assert m is not None
        later = datetime.now(UTC) + timedelta(days=365)
        for cfg in (MemoryConfig(decay_types=["fact", "status"]),
                    MemoryConfig(decay_by_type=False)):
            assert effective_importance(m, cfg, later) == 0.85
        fact = memories.get(conn, live.remember("The cache holds session data")["id"])
        everything = MemoryConfig(decay_by_type=False)
        assert fact is not None and effective_importance(fact, everything, later) < 0.01
        # decisions are immutable
        resp = live.http.patch(f"/api/memory/{stored['id']}",
                               json={"content": "We use Redis for the cache", "reason": "x"})
        assert resp.status_code == 409 and resp.json()["error"] == "immutable"
        # "went with" is decision language the keyword typing does not know
        went = live.remember("The team went with Redis for the queue")
        assert went["type"] == "decision" and went["importance"] == 0.85
        # a preference stays a preference; an explicit type or importance wins
        assert live.remember("The user prefers tabs over spaces")["type"] == "preference"
        typed = live.remember("We settled on Caddy as the proxy", type="fact", importance=0.3)
        assert typed["type"] == "fact" and typed["importance"] == 0.3
        entity = live.http.get("/api/entities/SQLite").json()
        assert entity["attributes"][0]["kind"] == "constraint"
        expand = post(live, "/api/knowledge/expand", {"entity": "SQLite"})
        assert expand["constraints"] == [{"memory_id": stored["id"], "content": (
            "We decided to go with SQLite for the cache")}]


def test_decision_protection_can_be_turned_off(tmp_path: Path) -> None:
    config = {**KEYWORD_ONLY,
              "memory": {"pipelineV2": {"graph": {"decisionProtection": False}}}}
    with run_daemon(tmp_path, config) as live:
        went = live.remember("The team went with Redis for the queue")
        assert went["type"] == "fact" and went["importance"] == 0.8


# --- live co-occurrence counts ------------------------------------------------------------


def test_co_occurrence_falls_with_deletes_and_comes_back_with_recover(tmp_path: Path) -> None:
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        live.remember("Later Caroline called Melanie about the painting")
        first = live.remember("Caroline met Melanie at the Pride parade")["id"]
        conn = live.daemon.db.reader()

        def pair() -> tuple[int, float] | None:
            row = conn.execute(
                "SELECT r.mentions, r.confidence FROM relations r JOIN entities a"
                " ON a.id = r.source_entity_id JOIN entities b ON b.id = r.target_entity_id"
                " WHERE r.relation_type = 'co_occurrence' AND r.reason = 'co-occurrence'"
                " AND a.canonical_name IN ('caroline', 'melanie')"
                " AND b.canonical_name IN ('caroline', 'melanie')"
                ).fetchone()
            return (row[0], round(row[1], 4)) if row else None

        assert pair() == (2, 0.6)
        resp = live.http.request("DELETE", f"/api/memory/{first}", json={"reason": "test"})
        assert resp.status_code == 200, resp.text
        assert pair() == (1, 0.5)
        assert live.http.post(f"/api/memory/{first}/recover",
                              json={"reason": "undo"}).status_code == 200
        assert pair() == (2, 0.6)


# --- communities ----------------------------------------------------------------------------

CLUSTERS = (
    ["Caroline", "Melanie", "Jordan"],
    ["Zofia", "Kasimir", "Lorenzo"],
)


def test_communities_and_modularity_in_the_graph_diagnostics(tmp_path: Path) -> None:
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        for a, b, c in CLUSTERS:
            for day in ("Monday", "Tuesday", "Friday"):
                live.remember(f"We saw {a} meet {b} and {c} for lunch on {day}.")
        live.remember(f"Once {CLUSTERS[0][0]} waved at {CLUSTERS[1][0]}.")  # a weak bridge
        out = live.http.get("/api/diagnostics/graph").json()
        assert out["community_count"] == 2
        assert out["modularity"] is not None and out["modularity"] > 0.3
        assert sorted(c["member_count"] for c in out["communities"]) == [3, 3]
        assert out["relations_by_reason"] == {"co-occurrence": 7}
        entities = live.http.get("/api/entities", params={"limit": 100}).json()["entities"]
        community = {e["name"]: e["community"] for e in entities if e["name"] in
                     {*CLUSTERS[0], *CLUSTERS[1]}}
        first = {community[n] for n in CLUSTERS[0]}
        second = {community[n] for n in CLUSTERS[1]}
        assert len(first) == 1 and len(second) == 1 and first != second
        (number,) = first
        members = live.http.get("/api/entities", params={"community": number}).json()
        assert {e["name"] for e in members["entities"]} == set(CLUSTERS[0])
        # a community is a recall filter: only memories naming one of its entities
        lunch = live.recall("lunch", limit=20, community=number)["results"]
        assert len(lunch) == 3 and all(CLUSTERS[0][0] in r["content"] for r in lunch)
        assert len(live.recall("lunch", limit=20)["results"]) == 6
        # a recompute on demand gives the same partition (fixed seed)
        again = live.http.get("/api/diagnostics/graph", params={"recompute": "true"}).json()
        assert again["modularity"] == out["modularity"]
        assert again["communities"] == out["communities"]
        tick = live.http.post("/api/repair/cluster-entities").json()
        assert tick["result"]["communities"] == 2


# --- feedback -------------------------------------------------------------------------------

FEEDBACK_CONFIG: dict[str, Any] = {**KEYWORD_ONLY, "hooks": {"promptMinScore": 0.0}}


def test_a_memory_rated_unhelpful_twice_for_a_prompt_is_not_injected_for_it(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    with run_daemon(tmp_path / "home", FEEDBACK_CONFIG) as live:
        mid = live.remember("The staging Kubernetes cluster runs in Frankfurt")["id"]
        prompt = "where does the staging kubernetes cluster run?"

        def injected(session: str, text: str = prompt) -> list[str]:
            body = payload("UserPromptSubmit", session, repo, prompt=text)
            resp = live.http.post("/api/hooks/user-prompt-submit", json=body)
            assert resp.status_code == 200, resp.text
            return resp.json()["memories"]

        assert injected("s1") == [mid]
        for n, session in ((1, "s1"), (2, "s2")):
            rated = post(live, f"/api/memory/{mid}/feedback",
                         {"helpful": False, "query": prompt, "session_key": session})
            assert rated["unhelpful_for_prompt"] == n
        assert rated["suppressed_for_prompt"] is True
        assert injected("s3") == []  # a fresh session, the same prompt (case aside)
        assert injected("s4", prompt.upper()) == []
        assert injected("s5", "kubernetes staging cluster location") == [mid]  # another prompt
        gone = post(live, "/api/memory/00000000-no-such/feedback", {"helpful": True}, 404)
        assert gone["error"] == "not_found"
        bad = post(live, f"/api/memory/{mid}/feedback", {"helpful": "maybe"}, 400)
        assert "helpful" in bad["message"]


def test_session_end_reinforces_what_was_used_and_scores_the_session(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    with run_daemon(tmp_path / "home", FEEDBACK_CONFIG) as live:
        live.remember("Later Caroline told Melanie about adoption agencies")
        used = live.remember("Caroline and Melanie run the pride parade stall")["id"]
        conn = live.daemon.db.reader()

        def confidence() -> float:
            return conn.execute(
                "SELECT r.confidence FROM relations r JOIN entities a ON a.id ="
                " r.source_entity_id JOIN entities b ON b.id = r.target_entity_id"
                " WHERE r.relation_type = 'co_occurrence' AND a.canonical_name IN"
                " ('caroline', 'melanie') AND b.canonical_name IN ('caroline', 'melanie')"
                ).fetchone()[0]

        assert confidence() == pytest.approx(0.6)
        key = "learn-1"
        for text in ("who runs the pride parade stall?", "caroline melanie pride stall"):
            body = payload("UserPromptSubmit", key, repo, prompt=text)
            assert live.http.post("/api/hooks/user-prompt-submit", json=body).status_code == 200
        row = conn.execute("SELECT was_injected, fts_hit_count FROM session_memories WHERE"
                           " session_key = ? AND memory_id = ?", (key, used)).fetchone()
        assert row[0] == 1 and row[1] >= 2  # injected, then surfaced again: used
        end = live.http.post("/api/hooks/session-end", json=payload("SessionEnd", key, repo))
        learned = end.json()["feedback"]
        assert learned["used"] >= 1 and learned["edges_reinforced"] >= 1
        assert confidence() == pytest.approx(0.6 + 0.02 * learned["used"])
        score = conn.execute("SELECT injected, used, scored_by FROM session_scores"
                             " WHERE session_key = ?", (key,)).fetchone()
        assert tuple(score) == (learned["injected"], learned["used"], "hits")
        # once per session: a second end learns nothing more
        again = live.http.post("/api/hooks/session-end", json=payload("SessionEnd", key, repo))
        assert again.json()["feedback"] is None
        assert confidence() == pytest.approx(0.6 + 0.02 * learned["used"])
        # what the session was given, and the entities around it
        out = post(live, "/api/knowledge/expand-session", {"session_key": key})
        assert used in {m["id"] for m in out["memories"]}
        assert {e["name"] for e in out["entities"]} >= {"Caroline", "Melanie"}
        assert out["tokens"] <= out["max_tokens"]
        assert post(live, "/api/knowledge/expand-session", {"session_key": "nope"},
                    404)["error"] == "not_found"


# --- structural classification (LLM) ------------------------------------------------------


def test_structural_classify_files_attributes_under_aspects(tmp_path: Path) -> None:
    import json

    from llm_servers import FakeLlmServer
    from pipeline_helpers import manual_daemon, pipeline_config, remember

    with FakeLlmServer() as srv:
        def script(call: Any) -> str:
            if "<<<ENTITY FACTS>>>" not in call.prompt:
                return '{"facts": []}'
            if "Entity: Zofia" in call.prompt:
                return json.dumps({"type": "person", "items": [
                    {"i": 1, "aspect": "Work", "kind": "attribute", "new": True}]})
            # SQLite: the decision stays a constraint whatever the LLM says; fact 9 is no fact
            return json.dumps({"type": "tool", "items": [
                {"i": 1, "aspect": "storage", "kind": "attribute"},
                {"i": 9, "aspect": "nothing", "kind": "attribute"}]})
        srv.script = script
        config = pipeline_config(srv.url, structural={"pollIntervalMs": 100})
        with manual_daemon(tmp_path, config) as d:
            mid = remember(d, "Our lead Zofia decided to go with SQLite for the cache")
            conn = d.db.reader()
            job = conn.execute("SELECT id FROM memory_jobs WHERE job_type ="
                               " 'structural_classify' AND memory_id = ?", (mid,)).fetchone()
            assert job is not None
            d.structural.worker.tick()
            rows = {r[0]: tuple(r[1:]) for r in conn.execute(
                "SELECT e.canonical_name, a.kind, asp.name, e.entity_type FROM entity_attributes a"
                " JOIN entities e ON e.id = a.entity_id"
                " LEFT JOIN entity_aspects asp ON asp.id = a.aspect_id WHERE a.memory_id = ?",
                (mid,))}
            assert rows == {"zofia": ("constraint", "work", "person"),
                            "sqlite": ("constraint", "storage", "technology")}
            result = json.loads(conn.execute("SELECT result FROM memory_jobs WHERE id = ?",
                                              (job[0],)).fetchone()[0])
            assert result["classified"] == 2 and result["aspectsCreated"] == 2
            assert result["typed"] == 1  # Zofia was typed by spelling only; SQLite keeps its
            assert any("no such fact" in w for w in result["warnings"])
            prompts = [c.prompt for c in srv.calls if "<<<ENTITY FACTS>>>" in c.prompt]
            assert len(prompts) == 2  # one call per entity
            assert all("Our lead Zofia decided to go with SQLite" in p for p in prompts)


def test_no_structural_job_without_an_llm(tmp_path: Path) -> None:
    from pipeline_helpers import manual_daemon, remember

    with manual_daemon(tmp_path, KEYWORD_ONLY) as d:
        remember(d, "Our lead Zofia decided to go with SQLite for the cache")
        assert d.db.reader().execute("SELECT COUNT(*) FROM memory_jobs WHERE job_type ="
                                     " 'structural_classify'").fetchone()[0] == 0


def test_a_purge_takes_the_memorys_attributes_and_ratings_with_it(tmp_path: Path) -> None:
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        live.remember("Later Caroline told Melanie about the adoption agency")
        mid = live.remember("We decided to go with Melanie's adoption agency plan, Caroline")["id"]
        post(live, f"/api/memory/{mid}/feedback", {"helpful": False, "query": "adoption?"})
        conn = live.daemon.db.reader()

        def rows(table: str) -> int:
            return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE memory_id = ?",
                                (mid,)).fetchone()[0]

        assert rows("entity_attributes") >= 2 and rows("memory_feedback") == 1
        resp = live.http.request("DELETE", f"/api/memory/{mid}",
                                 json={"reason": "test", "purge": True})
        assert resp.status_code == 200, resp.text
        assert rows("entity_attributes") == 0 and rows("memory_feedback") == 0
        pair = conn.execute(
            "SELECT r.mentions FROM relations r JOIN entities a ON a.id = r.source_entity_id"
            " JOIN entities b ON b.id = r.target_entity_id WHERE r.relation_type ="
            " 'co_occurrence' AND a.canonical_name IN ('caroline', 'melanie')"
            " AND b.canonical_name IN ('caroline', 'melanie')").fetchone()
        assert pair[0] == 1  # the other memory still names both


def test_continuity_scoring_rates_each_injected_memory_with_an_llm(tmp_path: Path) -> None:
    import json

    from llm_servers import FakeLlmServer
    from mnemonist.model.hooks import PromptSubmitRequest, SessionEndRequest
    from pipeline_helpers import manual_daemon, pipeline_config, remember

    repo = tmp_path / "repo"
    repo.mkdir()
    with FakeLlmServer() as srv:
        srv.script = lambda call: (json.dumps({"scores": [{"i": 1, "relevance": 0.9},
                                                          {"i": 7, "relevance": 1}]})
                                   if "<<<GIVEN MEMORIES>>>" in call.prompt else "{}")
        config = pipeline_config(srv.url, hooks={"promptMinScore": 0.0})
        config["hooks"] = config["memory"]["pipelineV2"].pop("hooks")
        with manual_daemon(tmp_path / "home", config) as d:
            mid = remember(d, "The staging Kubernetes cluster runs in Frankfurt")
            prompt = "where does the staging kubernetes cluster run?"
            given = d.service.hooks.hook_user_prompt_submit(PromptSubmitRequest.model_validate(
                payload("UserPromptSubmit", "c1", repo, prompt=prompt)))
            assert given["memories"] == [mid]
            end = d.service.hooks.hook_session_end(SessionEndRequest.model_validate(
                payload("SessionEnd", "c1", repo)))
            assert end["feedback"]["continuity_job"] is not None
            d.continuity.worker.tick()
            conn = d.db.reader()
            assert conn.execute("SELECT relevance_score FROM session_memories WHERE"
                                " session_key = 'c1' AND memory_id = ?",
                                (mid,)).fetchone()[0] == 0.9
            score = conn.execute("SELECT score, scored_by FROM session_scores"
                                 " WHERE session_key = 'c1'").fetchone()
            assert tuple(score) == (0.9, "ollama/qwen3:4b")
            (call,) = [c for c in srv.calls if "<<<GIVEN MEMORIES>>>" in c.prompt]
            assert prompt in call.prompt and "Frankfurt" in call.prompt


def test_an_entity_only_another_project_names_is_not_found_in_this_one(shop) -> None:
    live, _ = shop
    for path, body in (("/api/graph/impact", {"entity": "Ledger", "project": "shop"}),
                       ("/api/knowledge/expand", {"entity": "Ledger", "project": "shop"})):
        err = post(live, path, body, status=404)
        assert "Ledger" in err["message"]
    assert live.http.get("/api/entities/Ledger", params={"project": "shop"}).status_code == 404
    assert live.http.get("/api/graph/neighbourhood",
                         params={"entity": "Ledger", "project": "shop"}).status_code == 404
    assert post(live, "/api/graph/impact", {"entity": "Ledger", "project": "other"})[
        "entity"]["name"] == "Ledger"


# --- stated relations -------------------------------------------------------------------------


def test_stated_relations_promote_restore_and_refuse_bad_input(tmp_path) -> None:
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        live.remember("Our ShopApi depends on ShopDb.", project="shop")
        before = live.http.get("/api/diagnostics/graph", params={"project": "shop"}).json()
        for bad, field in [({"relation_type": "loves"}, "relation_type"),
                           ({"target": "  shopapi "}, "same entity"),
                           ({"reason": ""}, "reason"), ({"agent_id": "*"}, "agent_id")]:
            body = {"source": "ShopApi", "target": "ShopDb", "relation_type": "depends_on",
                    "reason": "x", "project": "shop", **bad}
            resp = live.http.post("/api/graph/relations", json=body)
            assert resp.status_code == 400 and field in resp.json()["message"], resp.text
        after = live.http.get("/api/diagnostics/graph", params={"project": "shop"}).json()
        assert after["relations"] == before["relations"]
        assert after["entities"] == before["entities"]
        # stating what the text showed promotes that edge; retracting gives its evidence back
        body = {"source": "shopapi", "target": "SHOPDB", "relation_type": "depends_on",
                "reason": "the order service cannot start without it", "project": "shop"}
        stated = post(live, "/api/graph/relations", body)
        assert stated["created"] is False and stated["replaced_reason"] == "pattern-matched"
        rid = stated["relation"]["id"]
        out = post(live, "/api/graph/impact", {"entity": "ShopDb", "project": "shop"})
        edge = out["tiers"]["will_break"][0]["edges"][0]
        assert (edge["reason"], edge["confidence"]) == ("user-stated", 1.0)
        back = live.http.delete(f"/api/graph/relations/{rid}").json()
        assert back["restored_reason"] == "pattern-matched"
        out = post(live, "/api/graph/impact", {"entity": "ShopDb", "project": "shop"})
        edge = out["tiers"]["will_break"][0]["edges"][0]
        assert (edge["id"], edge["reason"], edge["confidence"]) == (
            rid, "pattern-matched", 0.8)
        refused = live.http.delete(f"/api/graph/relations/{rid}")
        assert refused.status_code == 409 and refused.json()["error"] == "not_stated"
        # a statement may name what no memory names yet; retracting it removes those entities
        new = live.http.post("/api/graph/relations", json={
            **body, "source": "Ledger", "target": "postgres", "relation_type": "runs_on"})
        assert new.status_code == 201 and new.json()["entities_created"] == 2
        assert new.json()["relation"]["target"]["name"] == "PostgreSQL"
        expand = post(live, "/api/knowledge/expand", {"entity": "Ledger", "project": "shop"})
        assert [n["entity"]["name"] for n in expand["neighbours"]] == ["PostgreSQL"]
        assert expand["neighbours"][0]["relation"]["reason"] == "user-stated"
        assert expand["neighbours"][0]["supporting_memory_ids"] == []
        other = post(live, "/api/graph/impact", {"entity": "Ledger", "project": "other"}, 404)
        assert other["error"] == "not_found"
        gone = live.http.delete(f"/api/graph/relations/{new.json()['relation']['id']}").json()
        assert gone["entities_removed"] == 2
        post(live, "/api/knowledge/expand", {"entity": "Ledger", "project": "shop"}, 404)


def test_graph_diagnostics_and_communities_per_project(tmp_path) -> None:
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        for project in ("shop", "billing"):
            for text in SERVICE_GRAPH:
                live.remember(text, project=project)
        live.remember("Our Ledger depends on ShopDb.", project="billing")
        live.remember("Our ShopApi is slow with ShopDb today.", project="shop", agent_id="bot")
        every = live.http.get("/api/diagnostics/graph").json()
        shop = live.http.get("/api/diagnostics/graph", params={"project": "shop"}).json()
        billing = live.http.get("/api/diagnostics/graph", params={"project": "billing"}).json()
        assert (shop["entities"], billing["entities"], every["entities"]) == (7, 6, 13)
        assert shop["relations_by_reason"]["pattern-matched"] == 3
        assert billing["relations_by_reason"]["pattern-matched"] == 4
        # communities are per project, over shared entities only (bot's own ShopApi and
        # ShopDb are in no community), each labelled within its project
        assert {c["project"] for c in shop["communities"]} == {"shop"}
        assert {c["project"] for c in every["communities"]} == {"shop", "billing"}
        assert every["community_count"] == shop["community_count"] + billing["community_count"]
        listed = live.http.get("/api/entities", params={
            "project": "shop", "agents": "*", "limit": 100}).json()["entities"]
        private = [e for e in listed if e["agent_id"] == "bot"]
        assert {e["name"] for e in private} == {"ShopApi", "ShopDb"}
        assert {e["community"] for e in private} == {None}
        assert all(e["community"] is not None for e in listed if e["agent_id"] is None
                   and e["name"] in ("ShopApi", "ShopDb"))
