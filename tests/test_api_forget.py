"""POST /api/memory/forget (preview / execute, tokens, selectors, pinned, hard delete),
GET /api/memories pagination and filters, GET /api/embeddings export."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import LiveDaemon, current_store, run_daemon

pytestmark = pytest.mark.both_stores

THRESHOLD = 2


@pytest.fixture(scope="module")
def live(daemon_store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    """This module's one daemon, with a low confirmation threshold."""
    home: Path = tmp_path_factory.mktemp("forget-home")
    with run_daemon(home, {"memory": {"forget_confirm_threshold": THRESHOLD}}) as d:
        yield d


def forget(live: LiveDaemon, **body: Any):
    return live.http.post("/api/memory/forget", json=body)


def snapshot(live: LiveDaemon) -> tuple[Any, ...]:
    return (
        live.query("SELECT id, is_deleted, version FROM memories ORDER BY id"),
        live.query("SELECT COUNT(*) FROM memory_history")[0][0],
    )


def seed(live: LiveDaemon, project: str, *contents: str, **fields: Any) -> list[str]:
    return [live.remember(c, project=project, **fields)["id"] for c in contents]


def is_deleted(live: LiveDaemon, mid: str) -> bool:
    return live.http.get(f"/api/memory/{mid}").json()["is_deleted"]


def test_preview_lists_candidates_and_writes_nothing(live: LiveDaemon) -> None:
    ids = seed(live, "prev", "Preview memory one", "Preview memory two", "Preview memory three")
    before = snapshot(live)
    resp = forget(live, project="prev")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["mode"] == "preview" and body["count"] == 3
    assert {c["id"] for c in body["candidates"]} == set(ids)
    assert body["confirmToken"] and body["requiresConfirm"] is True
    assert snapshot(live) == before


def test_execute_needs_a_reason(live: LiveDaemon) -> None:
    (mid,) = seed(live, "noreason", "A memory nobody explains deleting")
    before = snapshot(live)
    for reason in (None, "", "   "):
        body = {"ids": [mid], "mode": "execute"} | (
            {"reason": reason} if reason is not None else {}
        )
        resp = forget(live, **body)
        assert resp.status_code == 400, resp.text
        assert "reason" in resp.json()["message"]
    assert snapshot(live) == before


def test_confirm_token_above_threshold(live: LiveDaemon) -> None:
    ids = seed(live, "tok", "Token memory alpha", "Token memory beta", "Token memory gamma")
    before = snapshot(live)
    resp = forget(live, project="tok", mode="execute", reason="cleanup")
    assert resp.status_code == 400 and resp.json()["error"] == "confirm_token_required"
    other = forget(live, ids=ids[:2]).json()["confirmToken"]  # a different candidate set
    resp = forget(live, project="tok", mode="execute", reason="cleanup", confirm_token=other)
    assert resp.status_code == 409 and resp.json()["error"] == "confirm_token_invalid"
    resp = forget(live, project="tok", mode="execute", reason="cleanup", confirm_token="garbage")
    assert resp.status_code == 409
    assert snapshot(live) == before
    token = forget(live, project="tok").json()["confirmToken"]
    resp = forget(live, project="tok", mode="execute", reason="cleanup", confirm_token=token)
    assert resp.status_code == 200, resp.text
    assert resp.json()["deleted"] == 3 and set(resp.json()["ids"]) == set(ids)
    assert all(is_deleted(live, m) for m in ids)


def test_token_is_stale_once_the_candidates_change(live: LiveDaemon) -> None:
    seed(live, "stale", "Stale memory one", "Stale memory two", "Stale memory three")
    token = forget(live, project="stale").json()["confirmToken"]
    (extra,) = seed(live, "stale", "Stale memory four")
    resp = forget(live, project="stale", mode="execute", reason="x", confirm_token=token)
    assert resp.status_code == 409
    assert not is_deleted(live, extra)


def test_a_given_token_is_checked_even_below_the_threshold(live: LiveDaemon) -> None:
    a, b = seed(live, "small", "Small batch one", "Small batch two")
    token = forget(live, project="small").json()["confirmToken"]  # previewed {a, b}
    assert forget(live, ids=[b], mode="execute", reason="x").status_code == 200
    (c,) = seed(live, "small", "Small batch three, never previewed")
    resp = forget(live, project="small", mode="execute", reason="x", confirm_token=token)
    assert resp.status_code == 409, resp.text  # the set is now {a, c}: not what was previewed
    assert not is_deleted(live, a) and not is_deleted(live, c)
    # below the threshold no token is needed at all
    resp = forget(live, project="small", mode="execute", reason="x")
    assert resp.status_code == 200 and set(resp.json()["ids"]) == {a, c}


def test_forget_by_ids(live: LiveDaemon) -> None:
    a, b, c = seed(live, "byids", "Ids memory one", "Ids memory two", "Ids memory three")
    resp = forget(live, ids=[a, c], mode="execute", reason="by id")
    assert resp.status_code == 200, resp.text
    assert sorted(resp.json()["ids"]) == sorted([a, c])
    assert is_deleted(live, a) and is_deleted(live, c) and not is_deleted(live, b)
    evs = live.http.get(f"/api/memory/{a}/history").json()["events"]
    assert evs[-1]["event"] == "deleted" and evs[-1]["reason"] == "by id"


def test_forget_by_query(live: LiveDaemon) -> None:
    snorkel = seed(
        live, "q", "The snorkel gear is kept in locker three", "Our snorkel trip is booked for July"
    )
    (tax,) = seed(live, "q", "Quarterly VAT returns are filed by the accountant")
    live.flush()
    preview = forget(live, query="snorkel", project="q").json()
    cand = {c["id"] for c in preview["candidates"]}
    assert set(snorkel) <= cand and tax not in cand
    resp = forget(
        live,
        query="snorkel",
        project="q",
        mode="execute",
        reason="trip over",
        confirm_token=preview["confirmToken"],
    )
    assert resp.status_code == 200, resp.text
    assert set(resp.json()["ids"]) == cand
    assert all(is_deleted(live, m) for m in snorkel) and not is_deleted(live, tax)


def test_forget_by_filters(live: LiveDaemon) -> None:
    (keep,) = seed(live, "filt", "Filters memory about a fact")
    (issue,) = seed(live, "filt", "Filters memory: the login page is broken")
    (elsewhere,) = seed(live, "filt-other", "Another login problem, other project", type="issue")
    resp = forget(live, project="filt", type="issue", mode="execute", reason="fixed")
    assert resp.status_code == 200, resp.text
    assert resp.json()["ids"] == [issue]
    assert is_deleted(live, issue)
    assert not is_deleted(live, keep) and not is_deleted(live, elsewhere)


def test_no_selector_is_400(live: LiveDaemon) -> None:
    before = snapshot(live)
    for body in ({}, {"mode": "execute", "reason": "all"}, {"query": "   "}, {"ids": []}):
        resp = forget(live, **body)
        assert resp.status_code == 400, body
        assert resp.json()["error"] == "no_selector"
    assert snapshot(live) == before


def test_pinned_memories_need_include_pinned(live: LiveDaemon) -> None:
    (plain,) = seed(live, "pin", "Pinned test plain memory")
    (pinned,) = seed(live, "pin", "critical: pinned test important memory")
    preview = forget(live, project="pin").json()
    assert [c["id"] for c in preview["candidates"]] == [plain]
    resp = forget(live, project="pin", mode="execute", reason="x")
    assert resp.json()["ids"] == [plain] and not is_deleted(live, pinned)
    resp = forget(live, project="pin", include_pinned=True, mode="execute", reason="x")
    assert resp.status_code == 200 and resp.json()["ids"] == [pinned]
    assert is_deleted(live, pinned)


def test_force_hard_deletes(live: LiveDaemon) -> None:
    (mid,) = seed(live, "hard", "Hard delete me completely")
    live.flush()
    content_hash = live.http.get(f"/api/memory/{mid}").json()["content_hash"]
    resp = forget(live, ids=[mid], mode="execute", reason="gdpr", force=True)
    assert resp.status_code == 200 and resp.json()["hard"] is True
    assert live.http.get(f"/api/memory/{mid}").status_code == 404
    assert live.query("SELECT COUNT(*) FROM memories WHERE id = ?", mid)[0][0] == 0
    if current_store() == "sqlite":  # PostgreSQL's tsvector is a column of the row itself
        fts = "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'completely'"
        assert live.query(fts)[0][0] == 0
    assert live.query("SELECT COUNT(*) FROM embeddings WHERE content_hash = ?",
                      content_hash)[0][0] == 0
    evs = live.http.get(f"/api/memory/{mid}/history").json()["events"]
    assert [e["event"] for e in evs] == ["created", "purged"]  # a tombstone, no text
    assert evs[-1]["metadata"]["hard"] is True and evs[-1]["reason"] == "gdpr"
    assert all(e["old_content"] is None and e["new_content"] is None for e in evs)
    assert all(r["id"] != mid for r in live.recall("hard delete completely")["results"])


def test_force_purges_a_soft_deleted_memory(live: LiveDaemon) -> None:
    (mid,) = seed(live, "purge", "Soft deleted first, purged after")
    resp = live.http.request("DELETE", f"/api/memory/{mid}", json={"reason": "first"})
    assert resp.status_code == 200
    resp = forget(live, ids=[mid], mode="execute", reason="purge now", force=True)
    assert resp.status_code == 200, resp.text
    assert resp.json()["ids"] == [mid]
    assert live.http.get(f"/api/memory/{mid}").status_code == 404
    # without force a tombstone is not a candidate again
    (other,) = seed(live, "purge", "Soft deleted and left alone")
    live.http.request("DELETE", f"/api/memory/{other}", json={"reason": "first"})
    resp = forget(live, ids=[other], mode="execute", reason="again")
    assert resp.json()["deleted"] == 0
    evs = live.http.get(f"/api/memory/{other}/history").json()["events"]
    assert [e["event"] for e in evs] == ["created", "deleted"]


def test_list_pagination_and_filters(live: LiveDaemon) -> None:
    ids = seed(live, "page", *[f"Paging memory number {i}" for i in range(7)])
    seed(live, "page", "Paging preference: Zoe prefers tea", who="zoe", tags=["drinks"])
    r1 = live.http.get("/api/memories", params={"project": "page", "limit": 3}).json()
    assert r1["total"] == 8 and r1["limit"] == 3 and r1["offset"] == 0
    assert len(r1["memories"]) == 3 and r1["has_more"] is True
    r3 = live.http.get("/api/memories", params={"project": "page", "limit": 3, "offset": 6})
    assert len(r3.json()["memories"]) == 2 and r3.json()["has_more"] is False
    seen: list[str] = []
    for offset in (0, 3, 6):
        page = live.http.get(
            "/api/memories", params={"project": "page", "limit": 3, "offset": offset}
        ).json()
        seen += [m["id"] for m in page["memories"]]
    assert len(seen) == 8 and len(set(seen)) == 8 and set(ids) <= set(seen)
    for params in ({"type": "preference"}, {"who": "zoe"}, {"tags": "drinks"}):
        out = live.http.get("/api/memories", params={"project": "page", **params}).json()
        assert out["total"] == 1 and out["memories"][0]["who"] == "zoe"
    assert forget(live, ids=ids[:1], mode="execute", reason="x").status_code == 200
    after = live.http.get("/api/memories", params={"project": "page"}).json()
    assert after["total"] == 7 and ids[0] not in {m["id"] for m in after["memories"]}
    with_deleted = live.http.get(
        "/api/memories", params={"project": "page", "include_deleted": "true"}
    ).json()
    assert with_deleted["total"] == 8
    assert live.http.get("/api/memories", params={"limit": 0}).status_code == 400


def test_embeddings_export(live: LiveDaemon) -> None:
    ids = seed(live, "emb", "Export memory one", "Export memory two")
    live.flush()
    out = live.http.get("/api/embeddings", params={"limit": 10000}).json()
    rows = {e["id"]: e for e in out["embeddings"]}
    assert set(ids) <= set(rows)
    assert out["total"] == len(out["embeddings"])
    for mid in ids:
        assert rows[mid]["dimensions"] == 384 and len(rows[mid]["vector"]) == 384
        assert abs(sum(x * x for x in rows[mid]["vector"]) - 1.0) < 1e-3
    forget(live, ids=ids[:1], mode="execute", reason="x")
    out2 = live.http.get("/api/embeddings", params={"limit": 10000}).json()
    assert ids[0] not in {e["id"] for e in out2["embeddings"]}
    assert out2["total"] == out["total"] - 1
    page = live.http.get("/api/embeddings", params={"limit": 1, "vectors": "false"}).json()
    assert len(page["embeddings"]) == 1 and "vector" not in page["embeddings"][0]
    assert page["total"] == out2["total"]
    assert live.http.get("/api/embeddings", params={"limit": 0}).status_code == 400
