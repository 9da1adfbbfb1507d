"""Event time, bulk import and ordered sources, over real HTTP."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mnemonist.cli.main import cli

pytestmark = pytest.mark.both_stores


def rows(live, sql: str, *args):
    return live.query(sql, *args)


def test_occurred_at_defaults_to_now_and_is_kept_apart_from_created_at(live):
    now_made = live.remember("Standup moved to 9:30")
    assert now_made["occurred_at"] == now_made["created_at"]
    past = live.remember("We signed the lease for the new office", occurred_at="2023-05-08")
    assert past["occurred_at"] == "2023-05-08T00:00:00.000Z"
    zoned = live.remember("Kickoff call with the vendor", occurred_at="2024-01-02T10:00:00+02:00")
    assert zoned["occurred_at"] == "2024-01-02T08:00:00.000Z"
    got = live.http.get(f"/api/memory/{past['id']}").json()
    assert got["occurred_at"] == "2023-05-08T00:00:00.000Z" and got["created_at"] > "2026"


def test_bad_event_times_are_rejected_and_write_nothing(live):
    before = rows(live, "SELECT COUNT(*) FROM memories")[0][0]
    for bad in ("yesterday-ish", "2023-13-45", "2023-02-30", 12345, ""):
        resp = live.http.post("/api/memory/remember",
                              json={"content": f"bad time {bad}", "occurred_at": bad})
        assert resp.status_code == 400, bad
        assert "occurred_at" in resp.json()["message"]
    assert rows(live, "SELECT COUNT(*) FROM memories")[0][0] == before


def test_modify_changes_event_time_and_records_it(live):
    made = live.remember("The audit happened in spring", occurred_at="2024-04-01")
    resp = live.http.patch(f"/api/memory/{made['id']}",
                           json={"occurred_at": "2024-03-15", "reason": "corrected date"})
    assert resp.status_code == 200 and resp.json()["status"] == "updated"
    assert live.http.get(f"/api/memory/{made['id']}").json()["occurred_at"].startswith(
        "2024-03-15")
    event = live.http.get(f"/api/memory/{made['id']}/history").json()["events"][-1]
    assert event["event"] == "modified" and "occurred_at" in event["metadata"]["fields"]
    assert event["metadata"]["before"]["occurred_at"].startswith("2024-04-01")


def test_import_array_object_and_jsonl_then_rerun_creates_nothing(live):
    items = [{"content": f"Import line {i} about the roadmap", "source_id": "import-a",
              "occurred_at": f"2024-06-0{i + 1}"} for i in range(5)]
    first = live.http.post("/api/memory/import", json=items)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["created"] == 5 and [it["status"] for it in body["items"]] == ["created"] * 5
    again = live.http.post("/api/memory/import", json={"items": items}).json()
    assert again["created"] == 0 and again["replayed"] == 5
    assert [it["id"] for it in again["items"]] == [it["id"] for it in body["items"]]
    jsonl = "\n".join(json.dumps(i) for i in items)
    third = live.http.post("/api/memory/import", content=jsonl.encode(),
                           headers={"content-type": "application/x-ndjson"}).json()
    assert third["created"] == 0
    assert rows(live, "SELECT COUNT(*) FROM memories WHERE source_id = 'import-a'")[0][0] == 5
    # the same normalisation, history and job enqueueing as remember (no LLM is configured
    # here: no extraction job; tests/test_import_batch.py compares the jobs with one)
    mid = body["items"][0]["id"]
    assert rows(live, "SELECT event FROM memory_history WHERE memory_id = ?", mid) == [
        ("created",)]
    assert rows(live, "SELECT status FROM memory_jobs WHERE memory_id = ?", mid) == []


def test_one_import_meets_stored_keys_stored_texts_and_its_own_repeats(live):
    """An import looks up which keys and texts the store holds once per chunk: each item
    still answers as if looked up alone (stored key: replayed; stored text: deduplicated; a
    text or key met earlier in the same import: replayed)."""
    live.remember("The staging cluster runs in eu-west-1", idempotency_key="k-stored")
    live.remember("Deploys freeze on Fridays after noon")
    items = [
        {"content": "Something else entirely", "idempotency_key": "k-stored"},
        {"content": "Deploys freeze on Fridays after noon"},
        {"content": "The on-call rota changes on Mondays"},
        {"content": "The on-call rota changes on Mondays"},
        {"content": "Backups run at 02:00 UTC", "idempotency_key": "k-new"},
        {"content": "A different text with a key used above", "idempotency_key": "k-new"},
    ]
    body = live.http.post("/api/memory/import", json={"items": items}).json()
    statuses = [it["status"] for it in body["items"]]
    # the repeated text has the same derived key (no source: its text and time): replayed
    assert statuses == ["replayed", "deduplicated", "created", "replayed", "created",
                        "replayed"], statuses
    ids = [it["id"] for it in body["items"]]
    assert ids[2] == ids[3] and ids[4] == ids[5]
    assert rows(live, "SELECT COUNT(*) FROM memories WHERE content = ?",
                "The on-call rota changes on Mondays")[0][0] == 1


def test_import_rejects_bad_items_and_writes_nothing(live):
    before = rows(live, "SELECT COUNT(*) FROM memories")[0][0]
    bad = [{"content": "fine item one"}, {"content": "  "}, {"content": "x", "importance": 7}]
    resp = live.http.post("/api/memory/import", json=bad)
    assert resp.status_code == 400
    message = resp.json()["message"]
    assert "items.1.content" in message and "items.2.importance" in message
    resp = live.http.post("/api/memory/import", content=b'{"content": "ok"}\n{broken',
                          headers={"content-type": "application/x-ndjson"})
    assert resp.status_code == 400 and "line 2" in resp.json()["message"]
    assert rows(live, "SELECT COUNT(*) FROM memories")[0][0] == before


def test_neighbours_follow_source_order_after_out_of_order_inserts(live):
    order = [3, 1, 4, 0, 2]
    ids = {}
    for i in order:
        ids[i] = live.remember(f"turn {i} of the planning chat", source_id="chat-7",
                               occurred_at=f"2024-02-01T10:0{i}:00Z")["id"]
    resp = live.http.get(f"/api/memory/{ids[2]}/neighbours", params={"n": 2}).json()
    assert [m["id"] for m in resp["before"]] == [ids[0], ids[1]]
    assert [m["id"] for m in resp["after"]] == [ids[3], ids[4]]
    edge = live.http.get(f"/api/memory/{ids[0]}/neighbours", params={"n": 3}).json()
    assert edge["before"] == [] and len(edge["after"]) == 3
    # same event time: arrival order decides
    a = live.remember("same time first", source_id="chat-8", occurred_at="2024-02-02")
    b = live.remember("same time second", source_id="chat-8", occurred_at="2024-02-02")
    assert live.http.get(f"/api/memory/{a['id']}/neighbours").json()["after"][0]["id"] == b["id"]


def test_since_until_filter_on_event_time(live):
    old = live.remember("Quarterly planning for the ferry project", occurred_at="2022-03-10",
                        project="ferry")
    new = live.remember("Quarterly planning for the ferry budget", occurred_at="2025-03-10",
                        project="ferry")
    live.flush()
    got = live.recall("quarterly planning ferry", project="ferry", until="2023-01-01")
    assert [r["id"] for r in got["results"]] == [old["id"]]
    got = live.recall("quarterly planning ferry", project="ferry", since="2024-01-01")
    assert [r["id"] for r in got["results"]] == [new["id"]]
    assert got["results"][0]["occurred_at"].startswith("2025-03-10")


def test_cli_imports_a_conversation_file_idempotently(live, tmp_path):
    conv = {"source_id": "support-call-1", "project": "support", "messages": [
        {"speaker": "Ana", "text": "The printer on floor two jams daily", "at": "2024-07-01T09:00"},
        {"role": "assistant", "content": "Logged it for facilities", "at": "2024-07-01T09:01"},
    ]}
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(conv))
    args = ["--url", live.url, "import", str(path), "--json"]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)["created"] == 2
    second = json.loads(CliRunner().invoke(cli, args).output)
    assert second["created"] == 0 and second["replayed"] == 2
    got = rows(live, "SELECT content, who, occurred_at FROM memories WHERE source_id = ?"
               " ORDER BY occurred_at", "support-call-1")
    assert got[0] == ("Ana: The printer on floor two jams daily", "Ana",
                      "2024-07-01T09:00:00.000Z")
    assert got[1][1] == "assistant"
