"""Entities per scope (migration 15): a store built at migration 14 with two projects naming
the same entity is split into one entity per project, everything following the right copy;
new writes create entities in their memory's scope, so a private memory never creates or
changes a shared entity row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mnemonist.store import migrations
from mnemonist.store.db import Database
from pipeline_helpers import manual_daemon, remember

pytestmark = pytest.mark.both_stores

AT = "2025-01-01T00:00:00.000Z"
LATER = "2025-02-01T00:00:00.000Z"


def _store_at_14(path: Path) -> Database:
    db = Database(path)
    with db.write_tx() as conn:
        migrations.applied_versions(conn)
        for m in migrations.MIGRATIONS:
            if m.version < 15:
                m.apply(conn)
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                             (m.version, m.name, AT))
        memory = ("INSERT INTO memories (id, content, normalized_content, content_hash,"
                  " occurred_at, created_at, updated_at, project, agent_id, is_deleted)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        for mid, project, agent, deleted in [
                ("m-shop-1", "shop", None, 0), ("m-shop-2", "shop", None, 0),
                ("m-other", "other", None, 0), ("m-private", "shop", "bot", 0),
                ("m-gone", "other", None, 1)]:
            conn.execute(memory, (mid, f"text {mid}", f"text {mid}", f"h-{mid}", AT, AT, AT,
                                  project, agent, deleted))
        entity = ("INSERT INTO entities (id, name, canonical_name, entity_type, mentions,"
                  " created_at, updated_at, community_id) VALUES (?, ?, ?, 'name', ?, ?, ?, 1)")
        conn.execute(entity, ("db", "ShopDb", "shopdb", 5, AT, AT))
        conn.execute(entity, ("api", "ShopApi", "shopapi", 3, AT, AT))
        conn.execute(entity, ("lonely", "Lonely", "lonely", 0, AT, AT))
        conn.execute("INSERT INTO entity_communities VALUES (1, 'ShopDb', 2, ?)", (AT,))
        link = ("INSERT INTO memory_entity_mentions (memory_id, entity_id, mention_text,"
                " confidence, created_at) VALUES (?, ?, ?, 0.6, ?)")
        for mid, ent in [("m-shop-1", "db"), ("m-shop-1", "api"), ("m-shop-2", "db"),
                         ("m-shop-2", "api"), ("m-other", "db"), ("m-other", "api"),
                         ("m-private", "db"), ("m-gone", "db")]:
            conn.execute(link, (mid, ent, ent, AT))
        relation = ("INSERT INTO relations (id, source_entity_id, target_entity_id,"
                    " relation_type, strength, mentions, confidence, created_at, updated_at,"
                    " reason) VALUES (?, ?, ?, ?, 1.0, ?, ?, ?, ?, ?)")
        conn.execute(relation, ("co", "api", "db", "co_occurrence", 3, 0.7, AT, AT,
                                "co-occurrence"))
        conn.execute(relation, ("dep", "api", "db", "depends_on", 2, 0.9, AT, AT,
                                "multi-memory"))
        conn.execute("INSERT INTO entity_aspects VALUES ('asp', 'db', 'Operations',"
                     " 'operations', 0.8, ?, ?)", (AT, LATER))
        attribute = ("INSERT INTO entity_attributes (id, entity_id, memory_id, aspect_id, kind,"
                     " content, importance, source, created_at, updated_at)"
                     " VALUES (?, 'db', ?, ?, 'attribute', ?, 0.5, 'inline', ?, ?)")
        conn.execute(attribute, ("at-shop", "m-shop-1", "asp", "shop says", AT, AT))
        conn.execute(attribute, ("at-other", "m-other", "asp", "other says", AT, AT))
        conn.execute(attribute, ("at-private", "m-private", None, "bot says", AT, AT))
    return db


def _scope_of(conn: sqlite3.Connection, entity_id: str) -> tuple[str, str, str]:
    row = conn.execute("SELECT project, agent_id, user_id FROM entities WHERE id = ?",
                       (entity_id,)).fetchone()
    return tuple(row)


def test_migration_15_splits_entities_by_the_scopes_of_their_memories(tmp_path) -> None:
    db = _store_at_14(tmp_path / "m.db")
    assert migrations.migrate(db) == [m.version for m in migrations.MIGRATIONS
                                      if m.version >= 15]
    conn = db.reader()
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    entities = {(r["canonical_name"], r["project"], r["agent_id"]): dict(r)
                for r in conn.execute("SELECT * FROM entities")}
    # ShopDb: shop (2 links), other (2: one deleted memory), bot's private shop copy (1)
    assert {k: v["mentions"] for k, v in entities.items()} == {
        ("shopdb", "shop", ""): 2, ("shopdb", "other", ""): 2, ("shopdb", "shop", "bot"): 1,
        ("shopapi", "shop", ""): 2, ("shopapi", "other", ""): 1, ("lonely", "", ""): 0}
    # the most linked copy keeps the id; communities are dropped until computed again
    shop_db = entities[("shopdb", "shop", "")]["id"]
    other_db = entities[("shopdb", "other", "")]["id"]
    private_db = entities[("shopdb", "shop", "bot")]["id"]
    assert entities[("shopapi", "shop", "")]["id"] == "api"
    assert "db" in {shop_db, other_db} and len({shop_db, other_db, private_db}) == 3
    assert {v["community_id"] for v in entities.values()} == {None}
    assert conn.execute("SELECT COUNT(*) FROM entity_communities").fetchone()[0] == 0
    # every link goes to the copy of its memory's scope
    links = {(r[0], _scope_of(conn, r[1])) for r in conn.execute(
        "SELECT memory_id, entity_id FROM memory_entity_mentions mm JOIN entities e"
        " ON e.id = mm.entity_id WHERE e.canonical_name = 'shopdb'")}
    assert links == {("m-shop-1", ("shop", "", "")), ("m-shop-2", ("shop", "", "")),
                     ("m-other", ("other", "", "")), ("m-gone", ("other", "", "")),
                     ("m-private", ("shop", "bot", ""))}
    assert conn.execute("SELECT COUNT(*) FROM memory_entity_mentions").fetchone()[0] == 8
    # relations: in each scope where a memory links both ends; co-occurrence counts that
    # scope's live memories (never more than before), the dependency keeps its evidence
    rels = {(r["relation_type"], _scope_of(conn, r["source_entity_id"])):
            (r["mentions"], round(r["confidence"], 2), r["reason"])
            for r in conn.execute("SELECT * FROM relations")}
    assert rels == {
        ("co_occurrence", ("shop", "", "")): (2, 0.6, "co-occurrence"),
        ("co_occurrence", ("other", "", "")): (1, 0.5, "co-occurrence"),
        ("depends_on", ("shop", "", "")): (2, 0.9, "multi-memory"),
        ("depends_on", ("other", "", "")): (2, 0.9, "multi-memory")}
    for r in conn.execute("SELECT * FROM relations"):  # both ends in one scope
        assert _scope_of(conn, r["source_entity_id"]) == _scope_of(conn, r["target_entity_id"])
    # attributes follow their memory; aspects are copied to every copy, with their weight
    attrs = {r["id"]: (r["entity_id"], r["aspect_id"]) for r in conn.execute(
        "SELECT * FROM entity_attributes")}
    assert attrs["at-shop"][0] == shop_db and attrs["at-other"][0] == other_db
    assert attrs["at-private"] == (private_db, None)
    aspects = {r["entity_id"]: (r["id"], r["weight"], r["confirmed_at"]) for r in conn.execute(
        "SELECT * FROM entity_aspects")}
    assert set(aspects) == {shop_db, other_db, private_db}
    assert {w for _, w, _ in aspects.values()} == {0.8}
    assert {c for _, _, c in aspects.values()} == {LATER}
    assert attrs["at-shop"][1] == aspects[shop_db][0]
    assert attrs["at-other"][1] == aspects[other_db][0]
    assert aspects["db"][0] == "asp"  # the id-keeping copy keeps the aspect's id too
    # the same name may now exist once per scope, not twice in one
    assert migrations.migrate(db) == []
    with db.write_tx() as w:
        try:
            w.execute("INSERT INTO entities (id, name, canonical_name, created_at, updated_at,"
                      " project) VALUES ('x', 'ShopDb', 'shopdb', ?, ?, 'shop')", (AT, AT))
            duplicate = False
        except sqlite3.IntegrityError:
            duplicate = True
    assert duplicate


def test_new_writes_create_entities_in_their_memorys_scope(tmp_path) -> None:
    config = {"embedding": {"provider": "none"}}
    with manual_daemon(tmp_path, config) as d:
        remember(d, "Our ShopApi depends on ShopDb.", project="shop")
        remember(d, "Our ShopApi depends on ShopDb.", project="other")
        before = {tuple(r) for r in d.db.reader().execute(
            "SELECT id, mentions, updated_at FROM entities WHERE agent_id = ''")}
        remember(d, "again ShopDb was slow with ShopApi today.", project="shop",
                 agent_id="bot")
        conn = d.db.reader()
        rows = conn.execute("SELECT canonical_name, project, agent_id, mentions FROM entities"
                            " ORDER BY 1, 2, 3").fetchall()
        assert [tuple(r) for r in rows] == [
            ("shopapi", "other", "", 1), ("shopapi", "shop", "", 1),
            ("shopapi", "shop", "bot", 1), ("shopdb", "other", "", 1),
            ("shopdb", "shop", "", 1), ("shopdb", "shop", "bot", 1)]
        # the private memory changed no shared entity row
        assert before == {tuple(r) for r in conn.execute(
            "SELECT id, mentions, updated_at FROM entities WHERE agent_id = ''")}
        deps = conn.execute("SELECT e.project, e.agent_id, r.relation_type FROM relations r"
                            " JOIN entities e ON e.id = r.source_entity_id ORDER BY 1, 2, 3")
        assert [tuple(r) for r in deps] == [
            ("other", "", "co_occurrence"), ("other", "", "depends_on"),
            ("shop", "", "co_occurrence"), ("shop", "", "depends_on"),
            ("shop", "bot", "co_occurrence")]


def test_a_memory_moved_to_another_project_takes_its_links_along(tmp_path) -> None:
    from mnemonist.model.requests import MemoryPatch

    with manual_daemon(tmp_path, {"embedding": {"provider": "none"}}) as d:
        mid = remember(d, "Our ShopApi depends on ShopDb.", project="shop")
        d.service.memories.patch(mid, MemoryPatch(project="billing", reason="moved"))
        conn = d.db.reader()
        linked = conn.execute(
            "SELECT e.canonical_name, e.project, e.mentions FROM memory_entity_mentions mm"
            " JOIN entities e ON e.id = mm.entity_id WHERE mm.memory_id = ? ORDER BY 1",
            (mid,)).fetchall()
        assert [tuple(r) for r in linked] == [("shopapi", "billing", 1),
                                              ("shopdb", "billing", 1)]
        left = conn.execute("SELECT canonical_name, mentions FROM entities"
                            " WHERE project = 'shop' ORDER BY 1").fetchall()
        assert [tuple(r) for r in left] == [("shopapi", 0), ("shopdb", 0)]
        deps = conn.execute(
            "SELECT e.project, r.mentions FROM relations r JOIN entities e"
            " ON e.id = r.source_entity_id WHERE r.relation_type = 'co_occurrence'").fetchall()
        assert [tuple(r) for r in deps] == [("billing", 1)]  # the shop pair's count went
        attrs = conn.execute("SELECT e.project FROM entity_attributes a JOIN entities e"
                             " ON e.id = a.entity_id WHERE a.memory_id = ?", (mid,)).fetchall()
        assert {r[0] for r in attrs} == {"billing"}
