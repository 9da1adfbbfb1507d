"""Unused events expire into the archive (store/expiry.py, the retention worker's first step):
which events go, that they stay recoverable and are never purged, the switch and its checks,
and the sweep's clean-up of expansions left by purged memories. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import LiveDaemon, run_daemon
from mnemonist.model.memory import format_ts
from mnemonist.settings import ConfigError, Paths, load_config

pytestmark = pytest.mark.both_stores

REASON = "expired: unused event older than 30 days"


def ago(days: float) -> str:
    return format_ts(datetime.now(UTC) - timedelta(days=days))


def config(**retention: Any) -> dict[str, Any]:
    return {"memory": {"retention": retention}}


def remember(live: LiveDaemon, content: str, **fields: Any) -> str:
    return live.remember(content, **fields)["id"]


def age(live: LiveDaemon, memory_id: str, days: float = 40) -> None:
    """The memory happened, was stored and last changed `days` ago."""
    stamp = ago(days)
    assert live.write("UPDATE memories SET occurred_at = ?, created_at = ?, updated_at = ?"
                      " WHERE id = ?", stamp, stamp, stamp, memory_id) == 1


def sweep(live: LiveDaemon) -> dict[str, Any]:
    resp = live.http.post("/api/repair/retention-sweep")
    assert resp.status_code == 200, resp.text
    return resp.json()["result"]


def memory(live: LiveDaemon, memory_id: str) -> dict[str, Any]:
    resp = live.http.get(f"/api/memory/{memory_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()


def deleted(live: LiveDaemon, memory_id: str) -> bool:
    return bool(memory(live, memory_id)["is_deleted"])


def listed(live: LiveDaemon, **params: Any) -> set[str]:
    resp = live.http.get("/api/memories", params={"type": "event", **params})
    assert resp.status_code == 200, resp.text
    return {m["id"] for m in resp.json()["memories"]}


def test_only_old_unused_medium_or_low_events_expire(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home", config()) as live:
        medium = remember(live, "The nightly backup of the orders table ran", type="event",
                          importance=0.5)
        low = remember(live, "A cache warm-up finished on host eight", type="event",
                       importance=0.2)
        accessed = remember(live, "The billing job was restarted by hand", type="event",
                            importance=0.5)
        pinned = remember(live, "The first customer signed the contract", type="event",
                          importance=0.5, pinned=True)
        high = remember(live, "Production moved to the new data centre", type="event")
        young = remember(live, "A deploy of the search service went out", type="event",
                         importance=0.5)
        fact = remember(live, "The orders table lives in the billing schema", type="fact",
                        importance=0.5)
        for mid in (medium, low, accessed, pinned, high, fact):
            age(live, mid)
        live.write("UPDATE memories SET access_count = 1, last_accessed = ? WHERE id = ?",
                   ago(35), accessed)

        assert sweep(live)["expired_events"] == 2
        assert {m for m in (medium, low, accessed, pinned, high, young, fact)
                if deleted(live, m)} == {medium, low}
        assert memory(live, high)["importance"] == 0.8  # an explicit save's default: high
        assert memory(live, pinned)["importance"] == 0.5  # kept by its pin alone
        got = memory(live, medium)
        assert got["delete_reason"] == REASON and got["updated_by"] == "retention"
        # gone from recall and list like any deleted memory; listed with the deleted ones
        hits = live.recall("nightly backup of the orders table")["results"]
        assert medium not in {h["id"] for h in hits}
        assert medium not in listed(live)
        assert {medium, low} <= listed(live, include_deleted="true")
        # a second sweep finds nothing more to do
        assert sweep(live)["expired_events"] == 0


def test_an_expired_event_is_in_history_and_archive_and_comes_back(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home", config()) as live:
        event = remember(live, "The staging cluster was rebuilt from scratch", type="event",
                         importance=0.5)
        live.flush()
        age(live, event)
        seq = live.query("SELECT seq FROM memories WHERE id = ?", event)[0][0]
        index = live.service.core.index
        assert index is not None and seq in index
        assert sweep(live)["expired_events"] == 1
        assert seq not in index  # out of the live vector index at the commit

        events = live.http.get(f"/api/memory/{event}/history").json()["events"]
        assert [e["event"] for e in events] == ["created", "deleted"]
        assert events[-1]["changed_by"] == "retention" and events[-1]["reason"] == REASON
        versions = live.http.get(f"/api/memory/{event}/archive").json()["versions"]
        assert len(versions) == 1
        copy = versions[0]
        assert copy["content"] == "The staging cluster was rebuilt from scratch"
        assert copy["reason"] == REASON and copy["archived_by"] == "retention"
        assert copy["row"]["is_deleted"] == 0 and copy["row"]["type"] == "event"

        # archive, not trash: long past the tombstone window no sweep purges it ...
        live.write("UPDATE memories SET deleted_at = ? WHERE id = ?", ago(400), event)
        report = sweep(live)
        assert report["tombstones"] == 0 and report["embeddings"] == 0
        storage = live.http.get("/api/diagnostics").json()["storage"]
        assert storage["archived_events"] == 1 and storage["tombstones"] == 0
        # ... and recover brings it back whenever asked
        resp = live.http.post(f"/api/memory/{event}/recover", json={"reason": "needed it"})
        assert resp.status_code == 200, resp.text
        assert not deleted(live, event)
        assert seq in index  # its stored vector, back in the index
        assert [e["event"] for e in live.http.get(f"/api/memory/{event}/history").json()[
            "events"]] == ["created", "deleted", "recovered"]
        # recovered today: it has its days again before the next expiry
        assert sweep(live)["expired_events"] == 0 and not deleted(live, event)


def test_an_ordinary_tombstone_is_still_purged_beside_archived_events(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home", config()) as live:
        event = remember(live, "The old office router was replaced", type="event",
                         importance=0.4)
        other = remember(live, "A note someone deleted by hand", type="event",
                         importance=0.4)
        age(live, event)
        resp = live.http.request("DELETE", f"/api/memory/{other}", json={"reason": "wrong"})
        assert resp.status_code == 200, resp.text
        assert sweep(live)["expired_events"] == 1
        live.write("UPDATE memories SET deleted_at = ?", ago(60))
        report = sweep(live)
        assert report["tombstones"] == 1
        assert live.query("SELECT id FROM memories") == [(event,)]
        resp = live.http.post(f"/api/memory/{event}/recover", json={"reason": "back"})
        assert resp.status_code == 200, resp.text


def test_a_user_deleted_memory_with_the_same_reason_is_an_ordinary_tombstone(
        tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home", config(tombstoneDays=7)) as live:
        event = remember(live, "The lab printer jammed again", type="event", importance=0.4)
        resp = live.http.request("DELETE", f"/api/memory/{event}", json={"reason": REASON})
        assert resp.status_code == 200, resp.text
        live.write("UPDATE memories SET deleted_at = ?", ago(8))
        resp = live.http.post(f"/api/memory/{event}/recover", json={"reason": "back"})
        assert resp.status_code == 409 and resp.json()["error"] == "retention_expired"
        assert sweep(live)["tombstones"] == 1


def test_the_ttl_and_the_bar_are_settings_and_zero_turns_expiry_off(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "off", config(eventTtlDays=0)) as live:
        event = remember(live, "The VPN certificate was renewed", type="event",
                         importance=0.1)
        age(live, event, days=4000)
        assert sweep(live)["expired_events"] == 0 and not deleted(live, event)
    custom = config(eventTtlDays=7, eventTtlMaxImportance=0.8)
    with run_daemon(tmp_path / "custom", custom) as live:
        week = remember(live, "The team offsite was booked", type="event")  # 0.8
        day = remember(live, "The team lunch was moved", type="event")
        critical = remember(live, "The outage post-mortem was published", type="event",
                            importance=0.9)
        for mid in (week, critical):
            age(live, mid, days=8)
        age(live, day, days=6)
        report = sweep(live)
        assert report["expired_events"] == 1
        assert memory(live, week)["delete_reason"] == "expired: unused event older than 7 days"
        assert not deleted(live, day) and not deleted(live, critical)


def test_each_sweep_expires_at_most_batch_limit_events(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home", config(batchLimit=2)) as live:
        ids = [remember(live, f"Heartbeat number {i} was received", type="event",
                        importance=0.3) for i in range(3)]
        for mid in ids:
            age(live, mid)
        assert sweep(live)["expired_events"] == 2
        assert sweep(live)["expired_events"] == 1
        assert all(deleted(live, mid) for mid in ids)


def test_sparse_expansions_of_purged_memories_are_swept(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home", config()) as live:
        kept = remember(live, "A memory whose expansion stays")
        seq = live.query("SELECT seq FROM memories WHERE id = ?", kept)[0][0]
        for s in (seq, seq + 1000):  # its own, and one of a memory purged while sparse was off
            live.write("INSERT INTO sparse_terms (seq, field, model, text_hash, terms, weights)"
                       " VALUES (?, 'content', 'm', 'h', ?, ?)", s, b"\0\0\0\0", b"\0\0\0\0")
        assert sweep(live)["orphan_sparse_terms"] == 1
        assert [r[0] for r in live.query("SELECT seq FROM sparse_terms")] == [seq]


@pytest.mark.parametrize(("retention", "key", "value", "allowed"), [
    ({"eventTtlDays": -1}, "memory.retention.eventTtlDays", "-1", "0–3650"),
    ({"eventTtlDays": 3651}, "memory.retention.eventTtlDays", "3651", "0–3650"),
    ({"eventTtlDays": "monthly"}, "memory.retention.eventTtlDays", "'monthly'", "0–3650"),
    ({"eventTtlMaxImportance": 1.5}, "memory.retention.eventTtlMaxImportance", "1.5",
     "0.0–1.0"),
])
def test_bad_values_are_refused_with_the_key_and_the_range(tmp_path: Path, retention, key,
                                                            value, allowed) -> None:
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config(**retention)))
    with pytest.raises(ConfigError) as err:
        load_config(Paths(tmp_path))
    message = str(err.value)
    assert key in message and value in message and allowed in message


def test_defaults() -> None:
    retention = load_config(None).memory.retention
    assert retention.event_ttl_days == 30 and retention.event_ttl_max_importance == 0.6
