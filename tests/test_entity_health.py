"""Entity health and bridges (docs/graph.md, "Entity health" and "Bridges"): the extractor no
longer takes replies, roles and what a technology name leaves of a phrase for names; the pass
folds plural and spelling variants into one entity (links, attributes and relations moved,
counts right, the folded name an alias the linker and the reads resolve), removes entities no
memory's text yields any more with their links and relations, logs each action, and does
nothing the second time; bridges between two communities are listed; the diagnostics, the
repair endpoint and the dashboard's graph page show it all. Real daemons, keyword-only, on
SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import LiveDaemon, run_daemon
from mnemonist.graph import entity_health
from mnemonist.graph.entity_health import fold_groups, shape, singulars
from mnemonist.text.entities import Entity, extract
from pipeline_helpers import manual_daemon, remember

pytestmark = pytest.mark.both_stores

KEYWORD_ONLY: dict[str, Any] = {"embedding": {"provider": "none"}}


# --- the extractor ----------------------------------------------------------------------------


def _all(text: str) -> list[str]:
    found = extract(text)
    return [e.name for e in [*found.entities, *found.tentative]]


@pytest.mark.parametrize("text", [
    "Understood, I will do that.",
    "OK, Understood. Noted!",  # a reply after a comma is mid-sentence, still no name
    "Sure, Agreed.",
    "Owner: Alice",  # a field label, not a speaker
    "Assistant: Sure thing",
    "The Owner approves every release and the Hub is down.",
    "Thanks, Done.",
])
def test_replies_and_roles_are_no_names(text):
    assert not {"Understood", "Noted", "Agreed", "Owner", "Assistant", "Hub", "Done"} & set(
        _all(text))


def test_a_word_left_beside_a_technology_name_is_no_name():
    assert _all("We push images to Docker Hub daily.") == ["Docker"]
    assert _all("The Redis Cluster went down.") == ["Redis"]
    assert _all("See the GitHub Owner field.") == ["GitHub"]


def test_a_word_the_text_also_writes_in_lowercase_is_only_tentative():
    # maybe an ordinary word: it links to an entity named elsewhere, never creates one
    assert extract("We played Mario all night. The mario controller broke.") == (
        [], [Entity("Mario", "name")])
    assert extract("We played Mario all night.").entities == [Entity("Mario", "name")]
    # names still are: mid-sentence, labels, phrases
    assert _all("Caroline: I went to the support group") == ["Caroline"]
    assert _all("I met John Smith at Bank of America") == ["John Smith", "Bank of America"]
    assert _all("We set TTLs on every key") == ["TTLs"]


# --- what folds ---------------------------------------------------------------------------------


def _e(name: str, entity_type: str = "name", mentions: int = 1, n: int = 0) -> dict[str, Any]:
    return {"id": f"{n:04d}", "name": name, "canonical_name": name.lower(),
            "entity_type": entity_type, "mentions": mentions}


def _groups(*entities: dict[str, Any]) -> list[list[str]]:
    return [[e["name"] for e in g] for g in fold_groups(list(entities))]


def test_plural_case_and_punctuation_variants_fold_the_most_linked_first():
    assert shape("next.js") == shape("nextjs") == "nextjs"
    assert shape("v1.2") == "v1.2"  # between digits the dot stays: not "v12"
    assert singulars("databases") == {"databas", "database"}
    assert singulars("status") == singulars("redis") == singulars("class") == set()
    assert singulars("GPUs") == {"gpu"} and singulars("KPIs") == {"kpi"}  # acronyms
    assert singulars("CSS") == set()
    assert _groups(_e("TTL", n=1), _e("TTLs", n=2)) == [["TTL", "TTLs"]]  # a tie: shorter
    assert _groups(_e("APIs", mentions=3, n=1), _e("API", n=2)) == [["APIs", "API"]]
    assert _groups(_e("databases", "extracted", 1, 1), _e("database", "extracted", 2, 2)) == [
        ["database", "databases"]]
    assert _groups(_e("policies", n=1), _e("policy", n=2)) == [["policy", "policies"]]
    assert _groups(_e("Feature Flags", n=1), _e("Feature Flag", n=2)) == [
        ["Feature Flag", "Feature Flags"]]
    assert _groups(_e("Next.js", "quoted", n=1), _e("NextJS", "name", n=2)) == [
        ["NextJS", "Next.js"]]
    assert _groups(_e("GPT-4", n=1), _e("GPT4", n=2), _e("GPT 4", n=3)) == [
        ["GPT4", "GPT-4", "GPT 4"]]
    assert _groups(_e("Build 1.2", n=1), _e("Build 12", n=2)) == []  # digits stay apart


def test_names_that_only_look_alike_do_not_fold():
    assert _groups(_e("William", n=1), _e("Williams", n=2)) == []  # maybe two people
    assert _groups(_e("pandas", "technology", n=1), _e("Panda", n=2)) == []
    assert _groups(_e("Go", "technology", n=1), _e("Gos", "technology", n=2)) == []
    assert _groups(_e("example.com", "domain", n=1), _e("examplecom", n=2)) == []
    assert _groups(_e("example.com", "domain", n=1), _e("Example Com", n=2),
                   _e("ExampleCom", n=3)) == [["ExampleCom", "Example Com"]]


# --- the pass on a daemon ---------------------------------------------------------------------


def _entities(live: LiveDaemon, project: str) -> dict[str, dict[str, Any]]:
    rows = live.query("SELECT id, name, mentions FROM entities WHERE project = ?", project)
    return {r["name"]: {"id": r["id"], "mentions": r["mentions"]} for r in rows}


def _links(live: LiveDaemon, entity_id: str) -> set[str]:
    return {r[0] for r in live.query(
        "SELECT memory_id FROM memory_entity_mentions WHERE entity_id = ?", entity_id)}


def _pair(live: LiveDaemon, a: str, b: str) -> tuple[int, float] | None:
    rows = live.query(
        "SELECT mentions, confidence FROM relations WHERE relation_type = 'co_occurrence'"
        " AND ((source_entity_id = ? AND target_entity_id = ?)"
        " OR (source_entity_id = ? AND target_entity_id = ?))", a, b, b, a)
    return (rows[0][0], round(rows[0][1], 4)) if rows else None


def _repair(live: LiveDaemon) -> dict[str, Any]:
    resp = live.http.post("/api/repair/entity-health")
    assert resp.status_code == 200, resp.text
    return resp.json()["result"]


def _health(live: LiveDaemon, project: str) -> dict[str, Any]:
    out = live.http.get("/api/diagnostics/graph", params={"project": project}).json()
    return out["entity_health"]


def test_ttl_and_ttls_become_one_entity_and_the_alias_resolves(tmp_path: Path):
    p = "cache"
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        m1 = live.remember("Redis expires the TTL of keys after five minutes.",
                           project=p)["id"]
        m2 = live.remember("Redis keeps TTLs on every session key.", project=p)["id"]
        before = _entities(live, p)
        assert {n: e["mentions"] for n, e in before.items()} == {
            "Redis": 2, "TTL": 1, "TTLs": 1}
        out = _repair(live)
        [fold] = [f for f in out["folded"] if f["kept_id"] == before["TTL"]["id"]]
        assert (fold["kept"], fold["folded"], fold["links_moved"]) == ("TTL", "TTLs", 1)
        after = _entities(live, p)
        assert set(after) == {"Redis", "TTL"}
        ttl, redis = after["TTL"], after["Redis"]
        assert ttl["id"] == before["TTL"]["id"] and ttl["mentions"] == 2
        assert _links(live, ttl["id"]) == {m1, m2}
        assert {r[0] for r in live.query(
            "SELECT memory_id FROM entity_attributes WHERE entity_id = ?", ttl["id"])} == {
            m1, m2}
        assert _pair(live, ttl["id"], redis["id"]) == (2, 0.6)  # two memories, one row
        assert not live.query("SELECT 1 FROM relations WHERE source_entity_id = ?"
                              " OR target_entity_id = ?", before["TTLs"]["id"],
                              before["TTLs"]["id"])
        assert [tuple(r) for r in live.query(
            "SELECT canonical_name, entity_id FROM entity_aliases WHERE project = ?", p)] == [
            ("ttls", ttl["id"])]

        # the alias resolves: a later memory naming TTLs links the kept entity, and a read
        # by the folded name finds it
        m3 = live.remember("Postgres has no TTLs for rows.", project=p)["id"]
        after = _entities(live, p)
        assert set(after) == {"Redis", "TTL", "PostgreSQL"} and after["TTL"]["mentions"] == 3
        got = live.http.get("/api/entities/TTLs", params={"project": p})
        assert got.status_code == 200 and got.json()["entity"]["id"] == ttl["id"]
        pg = after["PostgreSQL"]["id"]
        assert _pair(live, ttl["id"], pg) == (1, 0.5)
        # ... and the counts follow the folded name: a modify that stops naming it unlinks,
        # a delete takes its pair off
        resp = live.http.patch(f"/api/memory/{m2}", json={
            "content": "Redis keeps every session key.", "reason": "rewording"})
        assert resp.status_code == 200, resp.text
        assert _links(live, ttl["id"]) == {m1, m3}
        assert _entities(live, p)["TTL"]["mentions"] == 2
        assert _pair(live, ttl["id"], redis["id"]) == (1, 0.5)
        assert live.http.delete(f"/api/memory/{m3}", params={"reason": "wrong"}).status_code == 200
        assert _pair(live, ttl["id"], pg) is None

        # logged, counted, and a second run does nothing
        health = _health(live, p)
        assert (health["folded"], health["junk_removed"], health["aliases"]) == (1, 0, 1)
        assert [(r["action"], r["name"], r["kept"]) for r in health["recent"]] == [
            ("fold", "TTLs", "TTL")]
        _repair(live)  # examines what the later memories created
        again = _repair(live)
        assert (again["examined"], again["folded"], again["junk_removed"]) == (0, [], [])
        assert _health(live, p)["pending"] == 0


def test_variants_fold_only_inside_one_scope_and_private_names_are_not_listed(tmp_path: Path):
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        live.remember("Redis expires the TTL of cache keys.", project="alpha")
        live.remember("Redis keeps TTLs on every key.", project="beta")  # another project
        live.remember("Redis expires the TTL of cache keys.", project="gamma", agent_id="a1")
        live.remember("Redis keeps TTLs on every key.", project="gamma", agent_id="a1")
        out = _repair(live)
        assert [(f["kept"], f["folded"]) for f in out["folded"]] == [("TTL", "TTLs")]
        assert {r[0] for r in live.query("SELECT project FROM entities WHERE canonical_name"
                                         " IN ('ttl', 'ttls') AND agent_id = ''")} == {
            "alpha", "beta"}
        private = live.query("SELECT name, mentions FROM entities WHERE agent_id = 'a1'"
                             " AND canonical_name IN ('ttl', 'ttls')")
        assert [tuple(r) for r in private] == [("TTL", 2)]
        health = _health(live, "gamma")
        assert health["folded"] == 1 and health["recent"] == []  # counted, not named


JUNK_TEXT = "OK, Understood. I will ask Priya about the Docker Hub limits."


def _plant(live: LiveDaemon, memory_id: str, name: str, other: str, *, n: int,
           confidence: float = 0.6) -> str:
    """An entity older rules wrote for the memory: linked, with its attribute and a
    co-occurrence edge to `other`."""
    entity_id = f"00000000-0000-7000-8000-00000000000{n}"
    at = "2025-01-01T00:00:00.000Z"
    live.write("INSERT INTO entities (id, name, canonical_name, entity_type, mentions,"
               " created_at, updated_at, project, agent_id, user_id) VALUES (?, ?, ?, 'name',"
               " 1, ?, ?, 'junk', '', '')", entity_id, name, name.lower(), at, at)
    live.write("INSERT INTO memory_entity_mentions (memory_id, entity_id, mention_text,"
               " confidence, created_at) VALUES (?, ?, ?, ?, ?)",
               memory_id, entity_id, name, confidence, at)
    live.write("INSERT INTO entity_attributes (id, entity_id, memory_id, kind, content,"
               " importance, source, created_at, updated_at) VALUES (?, ?, ?, 'attribute',"
               " ?, 0.5, 'inline', ?, ?)", f"attr-{n}", entity_id, memory_id, JUNK_TEXT, at, at)
    a, b = sorted((entity_id, other))
    live.write("INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
               " strength, mentions, confidence, reason, created_at, updated_at) VALUES (?, ?,"
               " ?, 'co_occurrence', 1.0, 1, 0.5, 'co-occurrence', ?, ?)",
               f"rel-{n}", a, b, at, at)
    return entity_id


def test_junk_from_older_rules_goes_with_its_links_and_relations(tmp_path: Path):
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        memory = live.remember(JUNK_TEXT, project="junk")["id"]
        assert set(_entities(live, "junk")) == {"Priya", "Docker"}  # what the rules find now
        priya = _entities(live, "junk")["Priya"]["id"]
        junk = {name: _plant(live, memory, name, priya, n=n)
                for n, name in enumerate(["Understood", "Hub", "<b>Owner</b>"], start=1)}
        # an entity the LLM pipeline linked (another confidence) is not the extractor's
        kept = _plant(live, memory, "Acme", priya, n=9, confidence=0.9)
        out = _repair(live)
        assert sorted(r["name"] for r in out["junk_removed"]) == sorted(junk)
        assert out["skipped"] == {"linked by the LLM pipeline": 1}
        left = _entities(live, "junk")
        assert set(left) == {"Priya", "Docker", "Acme"}
        assert left["Priya"]["mentions"] == 1 and left["Acme"]["id"] == kept
        for entity_id in junk.values():
            for table, column in [("memory_entity_mentions", "entity_id"),
                                  ("entity_attributes", "entity_id"),
                                  ("relations", "source_entity_id"),
                                  ("relations", "target_entity_id")]:
                assert not live.query(f"SELECT 1 FROM {table} WHERE {column} = ?", entity_id)
        assert _links(live, priya) == {memory}
        health = _health(live, "junk")
        assert (health["junk_removed"], health["folded"], health["pending"]) == (3, 0, 0)
        assert {r["name"] for r in health["recent"]} == set(junk)
        again = _repair(live)
        assert (again["examined"], again["folded"], again["junk_removed"]) == (0, [], [])

        page = live.http.get("/ui/graph", params={"project": "junk"})
        assert page.status_code == 200
        html = page.text
        assert 'id="entity-health"' in html and "Understood removed" in html
        assert "&lt;b&gt;Owner&lt;/b&gt;" in html and "<b>Owner</b>" not in html


CLUSTERS = (("Orion", "Lyra", "Vega"), ("Draco", "Hydra", "Cetus"))


def test_bridges_join_two_communities(tmp_path: Path):
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        for a, b, c in CLUSTERS:
            for what in ("shipped the release", "fixed the build", "wrote the docs"):
                live.remember(f"We saw {a}, {b} and {c} as they {what}.", project="stars")
        live.remember("Later Atlas paired with Orion.", project="stars")
        live.remember("Later Atlas paired with Draco.", project="stars")
        assert live.http.post("/api/repair/cluster-entities").status_code == 200
        out = live.http.get("/api/diagnostics/graph", params={"project": "stars"}).json()
        assert out["community_count"] == 2
        bridges = {b["name"]: b for b in out["bridges"]}
        assert "Atlas" in bridges
        atlas = bridges["Atlas"]
        assert atlas["connects"] == 2 and atlas["strength"] > 0
        assert {c["label"] for c in atlas["communities"]} == {"Orion", "Draco"}
        assert not {"Lyra", "Vega", "Hydra", "Cetus"} & set(bridges)  # no edge leaves theirs
        assert out["bridges"][0]["connects"] >= out["bridges"][-1]["connects"]
        page = live.http.get("/ui/graph", params={"project": "stars"}).text
        assert 'id="bridges"' in page and "Atlas" in page
        assert live.http.get("/api/diagnostics/graph",
                             params={"project": "nowhere"}).json()["bridges"] == []


def test_the_maintenance_worker_runs_it_as_routine_work(tmp_path: Path):
    with manual_daemon(tmp_path / "on", KEYWORD_ONLY) as d:
        remember(d, "Redis expires the TTL of cache keys.")
        remember(d, "Redis keeps TTLs on every key.")
        cycle = d.maintenance.tick("execute")
        result = cycle["entity_health"]["result"]
        assert [(f["kept"], f["folded"]) for f in result["folded"]] == [("TTL", "TTLs")]
        assert "cooldown" in d.maintenance.tick("execute")["entity_health"]["skipped"]
        assert d.maintenance.tick("observe").get("entity_health") is None
    off = {**KEYWORD_ONLY, "memory": {"pipelineV2": {"graph": {"entityHealth": {
        "enabled": False}}}}}
    with manual_daemon(tmp_path / "off", off) as d:
        remember(d, "Redis expires the TTL of cache keys.")
        remember(d, "Redis keeps TTLs on every key.")
        assert d.maintenance.tick("execute")["entity_health"] is None
        # on demand it still runs
        assert len(d.maintenance.run_action("entityHealth")["folded"]) == 1


def test_it_resumes_in_batches_and_new_extractor_rules_start_it_over(tmp_path: Path,
                                                                     monkeypatch):
    with manual_daemon(tmp_path, KEYWORD_ONLY) as d:
        remember(d, "We asked Priya and Tomas about Redis.")
        cfg = d.config.memory.pipeline_v2.graph
        assert entity_health.report(d.db.reader())["pending"] == 3
        first = entity_health.run(d.db, cfg, batch_size=2)
        assert (first["examined"], first["caught_up"]) == (2, False)
        assert entity_health.report(d.db.reader())["pending"] == 1
        assert entity_health.run(d.db, cfg, batch_size=2)["examined"] == 1  # where it stopped
        assert entity_health.run(d.db, cfg)["examined"] == 0
        monkeypatch.setattr(entity_health, "RULES", entity_health.RULES + 1)
        assert entity_health.report(d.db.reader())["pending"] == 3
        again = entity_health.run(d.db, cfg)
        assert (again["examined"], again["folded"], again["junk_removed"]) == (3, [], [])
