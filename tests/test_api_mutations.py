"""PATCH / DELETE / recover / history of single memories and the batch modify endpoint."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import LiveDaemon, run_daemon

pytestmark = pytest.mark.both_stores


def patch(live: LiveDaemon, mid: str, **body: Any):
    return live.http.patch(f"/api/memory/{mid}", json=body)


def delete(live: LiveDaemon, mid: str, **body: Any):
    return live.http.request("DELETE", f"/api/memory/{mid}", json=body)


def recover(live: LiveDaemon, mid: str, **body: Any):
    return live.http.post(f"/api/memory/{mid}/recover", json=body)


def get(live: LiveDaemon, mid: str) -> dict[str, Any]:
    resp = live.http.get(f"/api/memory/{mid}")
    assert resp.status_code == 200, resp.text
    return resp.json()


def events(live: LiveDaemon, mid: str) -> list[dict[str, Any]]:
    resp = live.http.get(f"/api/memory/{mid}/history")
    assert resp.status_code == 200, resp.text
    return resp.json()["events"]


def keyword_ids(live: LiveDaemon, q: str) -> list[str]:
    return [r["id"] for r in live.http.get("/memory/search", params={"q": q}).json()["results"]]


# -- PATCH ----------------------------------------------------------------------------------


def test_patch_requires_reason(live: LiveDaemon) -> None:
    mid = live.remember("The shared calendar is called Team Ops")["id"]
    resp = patch(live, mid, importance=0.2)
    assert resp.status_code == 400
    assert resp.json()["error"] == "invalid_request" and "reason" in resp.json()["message"]
    assert get(live, mid)["importance"] == pytest.approx(0.8) and get(live, mid)["version"] == 1


def test_patch_version_conflict_changes_nothing(live: LiveDaemon) -> None:
    mid = live.remember("The VPN gateway lives in Frankfurt")["id"]
    resp = patch(live, mid, content="The VPN gateway lives in Dublin", reason="moved", if_version=7)
    assert resp.status_code == 409, resp.text
    body = resp.json()
    assert body["error"] == "version_conflict" and body["currentVersion"] == 1
    m = get(live, mid)
    assert m["content"] == "The VPN gateway lives in Frankfurt" and m["version"] == 1
    assert [e["event"] for e in events(live, mid)] == ["created"]


def test_patch_content_bumps_version_and_reembeds(live: LiveDaemon) -> None:
    mid = live.remember("The standup starts at nine fifteen")["id"]
    live.flush()
    resp = patch(
        live, mid, content="The standup starts at ten thirty", reason="new time", ifVersion=1
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "updated" and body["currentVersion"] == 1
    assert body["newVersion"] == 2 and body["contentChanged"] is True
    assert body["embedded"] is True
    m = get(live, mid)
    assert m["content"] == "The standup starts at ten thirty" and m["version"] == 2
    assert m["embedding_model"]
    assert mid in keyword_ids(live, "thirty")
    assert mid not in keyword_ids(live, "fifteen")
    hit = next(r for r in live.recall("standup ten thirty")["results"] if r["id"] == mid)
    assert hit["source"] == "hybrid"
    # the new vector is the one searched: meaning alone finds the new content
    # (every candidate, whatever its relevance: the store holds other tests' memories too)
    vec = live.recall("daily team sync meeting time", min_score=0.0, min_relevance=0, limit=50)
    assert any(r["id"] == mid and r["scores"]["vector"] is not None for r in vec["results"])
    status = live.http.get("/api/status").json()
    assert status["embeddings"]["missing"] == 0


def test_patch_to_duplicate_content_conflicts(live: LiveDaemon) -> None:
    keep = live.remember("Payroll runs on the 25th")["id"]
    mid = live.remember("Payroll runs on the 26th")["id"]
    resp = patch(live, mid, content="payroll runs on the 25th.", reason="typo")
    assert resp.status_code == 409, resp.text
    assert resp.json()["error"] == "duplicate_content"
    assert resp.json()["duplicateMemoryId"] == keep
    assert get(live, mid)["content"] == "Payroll runs on the 26th"


def test_patch_history_has_old_and_new_content(live: LiveDaemon) -> None:
    mid = live.remember("The wiki lives on Confluence")["id"]
    assert (
        patch(
            live, mid, content="The wiki lives on Notion", reason="migrated", tags=["docs"]
        ).status_code
        == 200
    )
    evs = events(live, mid)
    assert [e["event"] for e in evs] == ["created", "modified"]
    mod = evs[1]
    assert mod["old_content"] == "The wiki lives on Confluence"
    assert mod["new_content"] == "The wiki lives on Notion"
    assert mod["reason"] == "migrated"
    assert get(live, mid)["tags"] == ["docs"]


def test_patch_scrubs_credentials(live: LiveDaemon) -> None:
    secret = "ghp_Zq8sT2uV4wX6yZ8aB0cD2eF4gH6iJ8kL0mN9"
    mid = live.remember("The deploy bot token lives in the vault")["id"]
    resp = patch(live, mid, content=f"The deploy bot token is {secret}", reason="inline")
    assert resp.status_code == 200, resp.text
    assert secret not in get(live, mid)["content"] and "[REDACTED:" in get(live, mid)["content"]
    assert all(secret not in (e["new_content"] or "") for e in events(live, mid))


def test_patch_project_moves_the_vector_too(live: LiveDaemon) -> None:
    mid = live.remember("Our mascot is a purple hippo named Gus", project="zoo-old")["id"]
    live.flush()
    assert patch(live, mid, project="zoo-new", reason="renamed").status_code == 200
    query = "what animal represents the team"
    new = live.recall(query, project="zoo-new", min_score=0.0)
    old = live.recall(query, project="zoo-old", min_score=0.0)
    assert [r["id"] for r in new["results"]] == [mid]
    assert new["results"][0]["source"] == "vector"
    assert old["results"] == []


def test_reason_must_not_be_blank(live: LiveDaemon) -> None:
    mid = live.remember("The kitchen fridge is cleaned on Fridays")["id"]
    assert patch(live, mid, importance=0.1, reason="   ").status_code == 400
    resp = live.http.post(
        "/api/memory/modify", json={"reason": " ", "patches": [{"id": mid, "importance": 0.1}]}
    )
    assert resp.status_code == 400
    assert delete(live, mid, reason="  ").status_code == 400
    m = get(live, mid)
    assert m["version"] == 1 and m["is_deleted"] is False
    assert delete(live, mid, reason="real").status_code == 200
    assert recover(live, mid, reason="\t").status_code == 400
    assert get(live, mid)["is_deleted"] is True


def test_patch_unknown_id_is_404(live: LiveDaemon) -> None:
    resp = patch(live, "no-such-id", importance=0.1, reason="x")
    assert resp.status_code == 404 and resp.json()["error"] == "not_found"


# -- batch modify ---------------------------------------------------------------------------


def test_batch_modify_per_patch_results(live: LiveDaemon) -> None:
    a = live.remember("The lobby door code is 1234")["id"]
    b = live.remember("Bike storage is in the basement")["id"]
    resp = live.http.post(
        "/api/memory/modify",
        json={
            "reason": "cleanup",
            "patches": [
                {"id": a, "content": "The lobby door code is 9876", "if_version": 1},
                {"id": "missing-id", "importance": 0.3},
                {"id": b, "importance": 0.4, "if_version": 5, "reason": "own reason"},
            ],
        },
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["total"] == 3 and body["updated"] == 1
    ra, rmissing, rb = body["results"]
    assert ra["status"] == "updated" and ra["currentVersion"] == 1 and ra["newVersion"] == 2
    assert ra["contentChanged"] is True and ra["embedded"] is True
    assert ra["duplicateMemoryId"] is None
    assert rmissing["status"] == "not_found" and rmissing["id"] == "missing-id"
    assert rb["status"] == "version_conflict" and rb["currentVersion"] == 1
    assert rb["newVersion"] is None
    assert get(live, b)["importance"] == pytest.approx(0.8)
    evs = events(live, a)
    assert evs[-1]["event"] == "modified" and evs[-1]["reason"] == "cleanup"


def test_batch_modify_reports_duplicates(live: LiveDaemon) -> None:
    keep = live.remember("Recycling goes out on Tuesdays")["id"]
    mid = live.remember("Recycling goes out on Wednesdays")["id"]
    out = live.http.post(
        "/api/memory/modify",
        json={
            "patches": [{"id": mid, "content": "recycling goes out on tuesdays", "reason": "fix"}],
        },
    ).json()
    (r,) = out["results"]
    assert r["status"] == "duplicate_content" and r["duplicateMemoryId"] == keep
    assert r["contentChanged"] is False and out["updated"] == 0


def test_batch_modify_needs_a_reason(live: LiveDaemon) -> None:
    mid = live.remember("Visitors sign in at reception")["id"]
    resp = live.http.post("/api/memory/modify", json={"patches": [{"id": mid, "pinned": True}]})
    assert resp.status_code == 400 and "reason" in resp.json()["message"]
    assert get(live, mid)["pinned"] is False


def test_batch_modify_over_limit_changes_nothing(live: LiveDaemon) -> None:
    mid = live.remember("The fire drill is in October")["id"]
    limit = live.daemon.config.memory.modify_batch_limit
    patches = [{"id": mid, "importance": 0.1}] + [
        {"id": f"x{i}", "importance": 0.2} for i in range(limit)
    ]
    resp = live.http.post("/api/memory/modify", json={"reason": "bulk", "patches": patches})
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"] == "invalid_request" and "patches" in resp.json()["message"]
    assert get(live, mid)["importance"] == pytest.approx(0.8)
    assert get(live, mid)["version"] == 1


# -- DELETE ---------------------------------------------------------------------------------


def test_delete_requires_reason(live: LiveDaemon) -> None:
    mid = live.remember("Parking permits renew in January")["id"]
    resp = live.http.delete(f"/api/memory/{mid}")
    assert resp.status_code == 400 and "reason" in resp.json()["message"]
    assert get(live, mid)["is_deleted"] is False


def test_delete_pinned_needs_force(live: LiveDaemon) -> None:
    mid = live.remember("critical: the prod database is never dropped")["id"]
    resp = delete(live, mid, reason="cleanup")
    assert resp.status_code == 409 and resp.json()["error"] == "pinned"
    assert get(live, mid)["is_deleted"] is False
    resp = live.http.delete(f"/api/memory/{mid}", params={"reason": "cleanup", "force": "true"})
    assert resp.status_code == 200, resp.text
    assert get(live, mid)["is_deleted"] is True


def test_delete_if_version_and_soft_delete(live: LiveDaemon) -> None:
    mid = live.remember("The plant in room 4 needs water on Fridays")["id"]
    resp = delete(live, mid, reason="stale", if_version=3)
    assert resp.status_code == 409 and resp.json()["error"] == "version_conflict"
    assert get(live, mid)["is_deleted"] is False
    resp = delete(live, mid, reason="stale", if_version=1)
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"id": mid, "status": "deleted", "current_version": 1, "new_version": 2,
                           "currentVersion": 1, "newVersion": 2}  # the deprecated twins
    m = get(live, mid)
    assert m["is_deleted"] is True and m["deleted_at"] and m["version"] == 2
    assert m["delete_reason"] == "stale"
    again = delete(live, mid, reason="again")
    assert again.status_code == 409
    assert delete(live, "nope", reason="x").status_code == 404


# -- recover --------------------------------------------------------------------------------


def test_recover_errors_and_success(live: LiveDaemon) -> None:
    mid = live.remember("The team mascot is a cardboard owl")["id"]
    resp = recover(live, mid, reason="x")
    assert resp.status_code == 409 and resp.json()["error"] == "not_deleted"
    assert delete(live, mid, reason="tidy").status_code == 200
    resp = recover(live, mid, reason="x", if_version=1)
    assert resp.status_code == 409 and resp.json()["error"] == "version_conflict"
    assert get(live, mid)["is_deleted"] is True
    assert recover(live, mid).status_code == 400  # reason required
    resp = recover(live, mid, reason="was right", if_version=2)
    assert resp.status_code == 200, resp.text
    assert resp.json()["currentVersion"] == 2 and resp.json()["newVersion"] == 3
    m = get(live, mid)
    assert m["is_deleted"] is False and m["deleted_at"] is None and m["version"] == 3
    assert recover(live, "nope", reason="x").status_code == 404


def test_recover_refused_when_the_content_was_saved_again(live: LiveDaemon) -> None:
    mid = live.remember("The sandbox account resets every night")["id"]
    assert delete(live, mid, reason="dup test").status_code == 200
    again = live.remember("The sandbox account resets every night")
    assert again["created"] is True and again["id"] != mid
    resp = recover(live, mid, reason="undo")
    assert resp.status_code == 409 and resp.json()["error"] == "duplicate_content"
    assert resp.json()["duplicateMemoryId"] == again["id"]
    assert get(live, mid)["is_deleted"] is True


def test_recover_after_retention_window_is_refused(live: LiveDaemon) -> None:
    mid = live.remember("The old build server was called hopper")["id"]
    assert delete(live, mid, reason="decommissioned").status_code == 200
    long_ago = (datetime.now(UTC) - timedelta(days=40)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    live.write("UPDATE memories SET deleted_at = ? WHERE id = ?", long_ago, mid)
    resp = recover(live, mid, reason="need it")
    assert resp.status_code == 409 and resp.json()["error"] == "retention_expired"
    assert get(live, mid)["is_deleted"] is True


def test_recover_is_refused_while_mutations_are_frozen(tmp_path: Path) -> None:
    with run_daemon(tmp_path, {"memory": {"pipelineV2": {"mutationsFrozen": True}}}) as frozen:
        mid = frozen.remember("Frozen daemons still accept raw writes")["id"]
        assert delete(frozen, mid, reason="test").status_code == 200
        resp = recover(frozen, mid, reason="test")
        assert resp.status_code == 503, resp.text
        assert resp.json()["error"] == "mutations_frozen"
        assert "mutationsFrozen" in resp.json()["message"]
        assert get(frozen, mid)["is_deleted"] is True


# -- history --------------------------------------------------------------------------------


def test_history_lists_every_event_in_order(live: LiveDaemon) -> None:
    mid = live.remember("Release notes are written by the PM")["id"]
    assert (
        patch(
            live, mid, content="Release notes are written by engineering", reason="process change"
        ).status_code
        == 200
    )
    assert delete(live, mid, reason="obsolete").status_code == 200
    assert recover(live, mid, reason="still true").status_code == 200
    evs = events(live, mid)
    assert [e["event"] for e in evs] == ["created", "modified", "deleted", "recovered"]
    assert [e["reason"] for e in evs[1:]] == ["process change", "obsolete", "still true"]
    stamps = [e["created_at"] for e in evs]
    assert stamps == sorted(stamps)
    assert evs[2]["old_content"] == "Release notes are written by engineering"


def test_unknown_ids_are_404(live: LiveDaemon) -> None:
    for resp in (
        live.http.get("/api/memory/does-not-exist"),
        live.http.get("/api/memory/does-not-exist/history"),
    ):
        assert resp.status_code == 404
        assert resp.json()["error"] == "not_found" and "does-not-exist" in resp.json()["message"]
