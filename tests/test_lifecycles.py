"""Typed lifecycles over a real daemon: keyed supersession in the remember write, validity in
time (`at_time`, `include_superseded`), the chain both ways, immutable decisions and events,
pinned memories left alone, and the MCP store with a key."""

from __future__ import annotations

import uuid

import anyio
import pytest

from mcp_flow import call
from test_mcp_http import http_session

pytestmark = pytest.mark.both_stores


def project() -> str:
    return f"lc-{uuid.uuid4().hex[:8]}"


def ids(answer: dict) -> list[str]:
    return [r["id"] for r in answer["results"]]


def listed(live, **params) -> list[str]:
    resp = live.http.get("/api/memories", params=params)
    assert resp.status_code == 200, resp.text
    return [m["id"] for m in resp.json()["memories"]]


def test_a_new_fact_under_the_same_key_supersedes_the_old_one(live) -> None:
    p = project()
    v1 = live.remember("The acme-api database is MySQL 5.7 on a single primary", project=p,
                       key="  Acme-API   Database ", occurred_at="2024-01-10")
    assert v1["key"] == "acme-api database" and v1["superseded"] is None
    v2 = live.remember("The acme-api database is PostgreSQL 16 with a read replica", project=p,
                       subject="acme-api database", occurred_at="2024-06-01")
    assert v2["created"] and v2["type"] == "fact"
    assert v2["superseded"] == v1["id"] and v2["supersedes"] == v1["id"]
    assert v2["valid_from"] == "2024-06-01T00:00:00.000Z" and v2["valid_to"] is None
    live.flush()

    old = live.http.get(f"/api/memory/{v1['id']}").json()
    assert old["superseded_by"] == v2["id"] and not old["is_deleted"]
    assert old["valid_from"] == "2024-01-10T00:00:00.000Z"
    assert old["valid_to"] == v2["valid_from"]  # validity ends where the successor's begins

    query = "which database does acme-api use"
    assert ids(live.recall(query, project=p)) == [v2["id"]]
    assert listed(live, project=p) == [v2["id"]]
    both = live.recall(query, project=p, include_superseded=True)
    assert set(ids(both)) == {v1["id"], v2["id"]}
    assert set(listed(live, project=p, include_superseded="true")) == {v1["id"], v2["id"]}

    then = live.recall(query, project=p, at_time="2024-03-01")
    assert ids(then) == [v1["id"]]
    assert then["results"][0]["scores"]["vector"] is not None  # scored from its stored vector
    assert listed(live, project=p, at_time="2024-03-01") == [v1["id"]]
    assert ids(live.recall(query, project=p, at_time="2024-06-01T00:00:00Z")) == [v2["id"]]
    assert ids(live.recall(query, project=p, at_time="2023-12-31")) == []

    hist = live.http.get(f"/api/memory/{v1['id']}/history").json()
    superseded = [e for e in hist["events"] if e["event"] == "superseded"]
    assert len(superseded) == 1 and superseded[0]["metadata"]["supersededBy"] == v2["id"]
    assert [v["id"] for v in hist["chain"]["superseded_by"]] == [v2["id"]]
    created = live.http.get(f"/api/memory/{v2['id']}/history").json()["events"][0]
    assert created["metadata"]["supersedes"] == v1["id"]
    assert created["metadata"]["key"] == "acme-api database"
    chain = live.http.get(f"/api/memory/{v2['id']}/chain").json()
    assert [v["id"] for v in chain["versions"]] == [v1["id"], v2["id"]]
    assert chain["supersedes"][0]["valid_to"] == v2["valid_from"]
    assert [v["current"] for v in chain["versions"]] == [False, True]


def test_keys_are_scoped_by_project_and_type_and_an_old_value_can_return(live) -> None:
    p, q = project(), project()
    a = live.remember("Deploys are frozen for the release", project=p, key="deploys",
                      type="status")
    other_project = live.remember("Deploys are open", project=q, key="deploys", type="status")
    other_type = live.remember("Deploys need two approvals", project=p, key="deploys")
    assert other_project["superseded"] is None and other_type["superseded"] is None
    b = live.remember("Deploys are open again", project=p, key="deploys", type="status")
    assert b["superseded"] == a["id"]
    again = live.remember("Deploys are frozen for the release", project=p, key="deploys",
                          type="status")
    assert again["created"] and not again["deduplicated"]  # a new version, not the old row
    assert again["superseded"] == b["id"]
    assert set(listed(live, project=p)) == {other_type["id"], again["id"]}
    chain = live.http.get(f"/api/memory/{again['id']}/chain").json()
    assert [v["id"] for v in chain["versions"]] == [a["id"], b["id"], again["id"]]


def test_a_pinned_memory_is_never_superseded_automatically(live) -> None:
    p = project()
    pinned = live.remember("critical: releases are cut from the main branch", project=p,
                           key="release branch")
    assert pinned["pinned"]
    newer = live.remember("Releases are cut from release/* branches", project=p,
                          key="release branch")
    assert newer["superseded"] is None and newer["kept_pinned"] == pinned["id"]
    assert set(listed(live, project=p)) == {pinned["id"], newer["id"]}
    assert live.http.get(f"/api/memory/{pinned['id']}").json()["superseded_by"] is None
    third = live.remember("Releases are cut from the trunk", project=p, key="release branch")
    assert third["superseded"] == newer["id"] and third["kept_pinned"] == pinned["id"]


def test_a_decision_is_immutable_and_superseded_by_a_new_decision(live) -> None:
    p = project()
    d1 = live.remember("We decided to queue jobs in Redis", project=p, type="decision",
                       key="job queue")
    resp = live.http.patch(f"/api/memory/{d1['id']}",
                           json={"content": "We decided to queue jobs in SQS", "reason": "x"})
    assert resp.status_code == 409, resp.text
    body = resp.json()
    assert body["error"] == "immutable"
    assert "immutable" in body["message"] and "job queue" in body["message"]
    for change in ({"type": "fact"}, {"occurred_at": "2020-01-01"}):
        resp = live.http.patch(f"/api/memory/{d1['id']}", json={**change, "reason": "x"})
        assert resp.status_code == 409 and resp.json()["error"] == "immutable", change
    batch = live.http.post("/api/memory/modify", json={"reason": "x", "patches": [
        {"id": d1["id"], "content": "We decided to queue jobs in Kafka"}]}).json()
    assert batch["results"][0]["status"] == "immutable" and batch["updated"] == 0
    meta = live.http.patch(f"/api/memory/{d1['id']}",
                           json={"tags": ["infra"], "importance": 0.9, "reason": "filing"})
    assert meta.status_code == 200 and meta.json()["status"] == "updated"
    stored = live.http.get(f"/api/memory/{d1['id']}").json()
    assert stored["content"] == "We decided to queue jobs in Redis" and stored["tags"] == ["infra"]

    d2 = live.remember("We decided to queue jobs in SQS", project=p, type="decision",
                       key="job queue")
    assert d2["superseded"] == d1["id"]
    assert listed(live, project=p, type="decision") == [d2["id"]]


def test_an_event_is_never_rewritten(live) -> None:
    ev = live.remember("The payment outage started at 14:02", project=project(), type="event")
    resp = live.http.patch(f"/api/memory/{ev['id']}",
                           json={"content": "The outage started at 14:05", "reason": "typo"})
    assert resp.status_code == 409 and resp.json()["error"] == "immutable"
    same = live.http.patch(f"/api/memory/{ev['id']}", json={"pinned": True, "reason": "key"})
    assert same.status_code == 200


def test_bad_lifecycle_input_is_a_400(live) -> None:
    cases = [
        {"content": "x happened", "type": "event", "key": "x"},
        {"content": "a fact", "key": "   "},
        {"content": "a fact", "key": "a", "subject": "b"},
        {"content": "a fact", "valid_from": "2024-02-01", "valid_to": "2024-01-01"},
        {"content": "a fact", "occurred_at": "2024-02-01", "valid_to": "2024-01-01"},
        {"content": "a fact", "valid_to": "not a time"},
    ]
    for body in cases:
        resp = live.http.post("/api/memory/remember", json=body)
        assert resp.status_code == 400, (body, resp.text)
        assert set(resp.json()) >= {"error", "message"}
    bad = live.http.post("/api/memory/recall", json={"query": "x", "at_time": "yesterday-ish"})
    assert bad.status_code == 400
    assert live.http.get("/api/memory/nope/chain").status_code == 404


def test_valid_to_on_write_bounds_what_at_time_returns(live) -> None:
    p = project()
    m = live.remember("The staging cluster runs on three spot nodes this sprint", project=p,
                      valid_from="2024-05-01", valid_to="2024-05-15")
    assert (m["valid_from"], m["valid_to"]) == ("2024-05-01T00:00:00.000Z",
                                                "2024-05-15T00:00:00.000Z")
    assert listed(live, project=p, at_time="2024-05-10") == [m["id"]]
    assert listed(live, project=p, at_time="2024-05-15") == []
    assert listed(live, project=p) == [m["id"]]  # not superseded: current by default


def test_mcp_store_with_a_key_supersedes(live) -> None:
    p = project()

    async def main() -> None:
        async with http_session(live.url) as session:
            first = await call(session, "memory_store", {
                "content": "The docs site is built with Sphinx", "project": p,
                "key": "docs generator"})
            second = await call(session, "memory_store", {
                "content": "The docs site is built with MkDocs", "project": p,
                "key": "Docs Generator"})
            assert second["superseded"] == first["id"] and second["key"] == "docs generator"
            now = await call(session, "memory_list", {"project": p})
            assert [m["id"] for m in now["memories"]] == [second["id"]]
            both = await call(session, "memory_list", {"project": p, "include_superseded": True})
            assert {m["id"] for m in both["memories"]} == {first["id"], second["id"]}

    anyio.run(main)


def test_migration_10_backfills_validity_and_chains(tmp_path) -> None:
    """A database at version 9 with a pipeline-superseded pair: after migration 10 every row
    is valid from its event time, the superseded one until it was superseded, the newer one
    names what it supersedes, and the duplicate guard no longer counts superseded rows."""
    from mnemonist.store import migrations
    from mnemonist.store.db import Database

    db = Database(tmp_path / "m.db")
    with db.write_tx() as conn:
        migrations.applied_versions(conn)
        for m in migrations.MIGRATIONS:
            if m.version < 10:
                m.apply(conn)
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                             (m.version, m.name, "2024-01-01T00:00:00.000Z"))
        insert = ("INSERT INTO memories (id, content, normalized_content, content_hash,"
                  " occurred_at, created_at, updated_at, superseded_by, superseded_at)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        old_at, new_at = "2024-01-01T00:00:00.000Z", "2024-02-01T00:00:00.000Z"
        conn.execute(insert, ("old", "old text", "old text", "h0", old_at, old_at, old_at,
                              "new", "2024-03-01T00:00:00.000Z"))
        conn.execute(insert, ("new", "new text", "new text", "h1", new_at, new_at, new_at,
                              None, None))
    assert migrations.migrate(db) == [m.version for m in migrations.MIGRATIONS
                                      if m.version >= 10]  # 10 and any later ones
    rows = {r["id"]: dict(r) for r in db.reader().execute(
        "SELECT id, valid_from, valid_to, supersedes, key FROM memories")}
    assert rows["old"]["valid_from"] == "2024-01-01T00:00:00.000Z"
    assert rows["old"]["valid_to"] == "2024-03-01T00:00:00.000Z"
    assert rows["new"]["valid_from"] == "2024-02-01T00:00:00.000Z"
    assert rows["new"]["valid_to"] is None and rows["new"]["supersedes"] == "old"
    with db.write_tx() as conn:  # the old text may come back beside its superseded copy
        conn.execute(
            "INSERT INTO memories (id, content, normalized_content, content_hash, occurred_at,"
            " created_at, updated_at) VALUES ('again', 'old text', 'old text', 'h0', ?, ?, ?)",
            ("2024-04-01T00:00:00.000Z",) * 3)
    assert migrations.migrate(db) == []


def test_an_import_in_time_order_rebuilds_the_chain(live) -> None:
    p = project()
    items = [
        {"content": f"The on-call rotation is owned by team {team}", "key": "on-call owner",
         "type": "status", "occurred_at": when}
        for team, when in (("red", "2023-01-01"), ("blue", "2023-05-01"), ("green", "2023-09-01"))
    ]
    resp = live.http.post("/api/memory/import", json={"items": items, "project": p})
    assert resp.status_code == 200 and resp.json()["created"] == 3, resp.text
    red, blue, green = (i["id"] for i in resp.json()["items"])
    assert listed(live, project=p) == [green]
    assert listed(live, project=p, at_time="2023-06-15") == [blue]
    chain = live.http.get(f"/api/memory/{blue}/chain").json()
    assert [v["id"] for v in chain["versions"]] == [red, blue, green]
    assert [v["valid_to"] for v in chain["versions"]] == [
        "2023-05-01T00:00:00.000Z", "2023-09-01T00:00:00.000Z", None]
    again = live.http.post("/api/memory/import", json={"items": items, "project": p})
    assert again.json()["created"] == 0  # a re-run adds nothing and supersedes nothing
    assert listed(live, project=p) == [green]
