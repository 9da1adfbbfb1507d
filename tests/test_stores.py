"""The core of the API on both stores: every test here runs against the SQLite default and
against a real PostgreSQL + pgvector (the `store` fixture, tests/pg.py), through the real daemon
over loopback HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conftest import LiveDaemon, run_daemon


@pytest.fixture(scope="module")
def daemon(store: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[LiveDaemon]:
    with run_daemon(tmp_path_factory.mktemp("home"), store or None) as live:
        yield live


def ids(answer: dict[str, Any]) -> list[str]:
    return [r["id"] for r in answer["results"]]


def test_the_daemon_runs_on_the_chosen_store(daemon: LiveDaemon, store: dict[str, Any]) -> None:
    kind = type(daemon.daemon.db).__name__
    assert kind == ("PostgresDatabase" if store else "Database")


def test_remember_is_recalled_by_keyword_at_once(daemon: LiveDaemon) -> None:
    made = daemon.remember("The quarterly invoice batch runs on the fourth", project="billing")
    assert made["created"] is True
    found = daemon.http.get("/memory/search", params={"q": "invoice batch"}).json()
    assert made["id"] in ids(found)
    recalled = daemon.recall("quarterly invoice", project="billing")
    assert ids(recalled)[0] == made["id"]
    assert recalled["results"][0]["scores"]["keyword"] == pytest.approx(1.0)


def test_a_paraphrase_is_recalled_by_vector_once_embedded(daemon: LiveDaemon) -> None:
    made = daemon.remember("Our production database is PostgreSQL 16 on a dedicated host",
                           project="vectors")
    daemon.remember("The office plants are watered on Fridays", project="vectors")
    daemon.flush()
    got = daemon.recall("what kind of db server do we run live?", project="vectors")
    assert ids(got)[0] == made["id"]
    scores = got["results"][0]["scores"]
    assert not scores.get("keyword") and scores["vector"] > 0.1  # found by meaning alone


def test_get_patch_history_forget_recover(daemon: LiveDaemon) -> None:
    mid = daemon.remember("The VPN gateway lives in Frankfurt", project="net")["id"]
    got = daemon.http.get(f"/api/memory/{mid}").json()
    assert got["content"] == "The VPN gateway lives in Frankfurt" and got["version"] == 1
    resp = daemon.http.patch(f"/api/memory/{mid}", json={
        "content": "The VPN gateway lives in Dublin", "reason": "moved", "if_version": 1})
    assert resp.status_code == 200, resp.text
    assert daemon.http.get(f"/api/memory/{mid}").json()["version"] == 2
    conflict = daemon.http.patch(f"/api/memory/{mid}", json={
        "content": "The VPN gateway lives in Paris", "reason": "again", "if_version": 1})
    assert conflict.status_code == 409
    assert ids(daemon.recall("VPN gateway Dublin", project="net"))[0] == mid
    assert mid not in ids(daemon.http.get("/memory/search", params={"q": "Frankfurt"}).json())
    gone = daemon.http.request("DELETE", f"/api/memory/{mid}", json={"reason": "retired"})
    assert gone.status_code == 200, gone.text
    assert mid not in ids(daemon.recall("VPN gateway Dublin", project="net"))
    back = daemon.http.post(f"/api/memory/{mid}/recover", json={"reason": "wrong one"})
    assert back.status_code == 200, back.text
    events = [e["event"] for e in daemon.http.get(f"/api/memory/{mid}/history").json()["events"]]
    assert events == ["created", "modified", "deleted", "recovered"]
    assert ids(daemon.recall("VPN gateway Dublin", project="net"))[0] == mid


def test_bad_input_is_a_4xx_and_changes_nothing(daemon: LiveDaemon) -> None:
    before = daemon.http.get("/api/memories", params={"project": "bad"}).json()
    resp = daemon.http.post("/api/memory/remember", json={"content": "", "project": "bad"})
    assert resp.status_code == 400
    missing = daemon.http.get("/api/memory/00000000-0000-0000-0000-000000000000")
    assert missing.status_code == 404
    assert daemon.http.get("/api/memories", params={"project": "bad"}).json() == before


def test_duplicates_and_idempotency_keys(daemon: LiveDaemon) -> None:
    first = daemon.remember("Backups are kept for ninety days", project="dups")
    again = daemon.remember("Backups are kept for ninety days", project="dups")
    assert again["id"] == first["id"] and again["deduplicated"] is True
    keyed = daemon.remember("Release train leaves at noon", project="dups",
                            idempotency_key="release-1")
    replay = daemon.remember("Release train leaves at noon (retry)", project="dups",
                             idempotency_key="release-1")
    assert replay["id"] == keyed["id"] and replay["idempotent_replay"] is True


def test_key_supersedes_the_older_memory(daemon: LiveDaemon) -> None:
    old = daemon.remember("The deploy window is Tuesday", project="keys", key="deploy window")
    new = daemon.remember("The deploy window is Thursday", project="keys", key="deploy window")
    assert new["supersedes"] == old["id"]
    assert ids(daemon.recall("deploy window", project="keys")) == [new["id"]]


def test_bulk_import_is_recallable(daemon: LiveDaemon) -> None:
    items = [{"content": f"Import line {i}: the {w} service owns port {8000 + i}"}
             for i, w in enumerate(["billing", "search", "mailer", "ledger"])]
    resp = daemon.http.post("/api/memory/import",
                            json={"items": items, "project": "imported", "source_id": "s1"})
    assert resp.status_code == 200, resp.text
    listed = daemon.http.get("/api/memories", params={"project": "imported"}).json()
    assert len(listed["memories"]) == 4
    assert "mailer" in daemon.recall("which service owns the mailer port",
                                      project="imported")["results"][0]["content"]


def test_a_private_memory_is_invisible_to_other_agents(daemon: LiveDaemon) -> None:
    secret = daemon.remember("The staging vault code is 4471", project="scopes",
                             agent_id="agent-a")
    assert secret["agent_id"] == "agent-a"
    mine = daemon.http.post("/api/memory/recall", json={"query": "staging vault code",
                                                        "project": "scopes"},
                            headers={"x-mnemonist-agent": "agent-a"})
    theirs = daemon.http.post("/api/memory/recall", json={"query": "staging vault code",
                                                          "project": "scopes"},
                              headers={"x-mnemonist-agent": "agent-b"})
    assert mine.status_code == theirs.status_code == 200, theirs.text
    assert secret["id"] in ids(mine.json())
    assert secret["id"] not in ids(theirs.json())
    hidden = daemon.http.get(f"/api/memory/{secret['id']}",
                             headers={"x-mnemonist-agent": "agent-b"})
    assert hidden.status_code == 404


def test_forget_by_query_removes_only_clear_matches(daemon: LiveDaemon) -> None:
    keep = daemon.remember("Staging cluster notes: keep the green nodes", project="forget")
    old = daemon.remember("Old staging notes for the retired blue cluster", project="forget")
    daemon.flush()
    preview = daemon.http.post("/api/memory/forget", json={
        "mode": "preview", "query": "retired blue cluster", "project": "forget"})
    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert [c["id"] for c in body["candidates"]] == [old["id"]]
    done = daemon.http.post("/api/memory/forget", json={
        "mode": "execute", "query": "retired blue cluster", "project": "forget",
        "reason": "retired", "confirm_token": body["confirmToken"]})
    assert done.status_code == 200, done.text
    assert ids(daemon.recall("staging cluster notes", project="forget")) == [keep["id"]]


def test_a_query_of_stop_words_only_finds_its_memories(daemon: LiveDaemon) -> None:
    """Every word of "what is it" is a stop word: both stores then search all its words (on
    PostgreSQL, whose index drops stop words, on the text itself)."""
    made = daemon.remember("What is it that you want?", project="stops")
    daemon.remember("The gateway restarts nightly", project="stops")
    found = daemon.recall("what is it", project="stops")
    assert ids(found) == [made["id"]]
    assert found["results"][0]["scores"]["keyword"] == pytest.approx(1.0)
    searched = daemon.http.get("/memory/search", params={"q": "what is it"}).json()
    assert ids(searched)[0] == made["id"]
