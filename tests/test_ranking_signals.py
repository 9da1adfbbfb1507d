"""Ranking signals over time (docs/ranking.md): confidence decay by type and the access boost
that counts explicit recalls only — the formulas, and their direction in a real recall over
the real model. Identical texts in separate projects make every other signal equal, so only
the signal under test can order them."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from mnemonist.model.config import MemoryConfig
from mnemonist.model.memory import Memory, format_ts
from mnemonist.search.signals import access_boost, decays, effective_importance

pytestmark = pytest.mark.both_stores

NOW = datetime(2026, 6, 1, tzinfo=UTC)
TEXT = "the nightly backup job writes its archive to the cold storage bucket"


def memory(type_: str, *, days_old: float, pinned: bool = False,
           importance: float = 0.8) -> Memory:
    at = format_ts(NOW - timedelta(days=days_old))
    return Memory(
        seq=1, id="m1", content="x", normalized_content="x", content_hash="h", type=type_,
        importance=importance, tags=[], pinned=pinned, who=None, why=None, project=None,
        source_type=None, source_id=None, idempotency_key=None, version=1, is_deleted=False,
        deleted_at=None, delete_reason=None, last_accessed=None, access_count=0,
        embedding_model=None, occurred_at=at, created_at=at, updated_at=at,
    )


def test_only_statuses_decay_by_default():
    cfg = MemoryConfig()
    assert decays(memory("status", days_old=1), cfg)
    for kind in ("fact", "decision", "event", "rule", "preference"):
        assert not decays(memory(kind, days_old=1), cfg)


def test_the_decaying_types_decay_decisions_events_and_pinned_memories_do_not():
    cfg = MemoryConfig(decay_rate=0.98, decay_types=["fact", "status"])
    for kind in ("fact", "status"):
        assert effective_importance(memory(kind, days_old=30), cfg, NOW) == pytest.approx(
            0.8 * 0.98**30)
    for kind in ("decision", "event", "rule"):
        assert effective_importance(memory(kind, days_old=30), cfg, NOW) == 0.8
    assert effective_importance(memory("fact", days_old=300, pinned=True), cfg, NOW) == 1.0
    # the last access, not the creation, is the anchor
    used = replace(memory("status", days_old=300), last_accessed=format_ts(NOW))
    assert effective_importance(used, cfg, NOW) == pytest.approx(0.8)


def test_decay_by_type_off_decays_every_unpinned_memory_but_decisions():
    cfg = MemoryConfig(decay_rate=0.98, decay_by_type=False)
    for kind in ("event", "fact", "rule", "preference"):
        assert decays(memory(kind, days_old=1), cfg), kind
        assert effective_importance(memory(kind, days_old=30), cfg, NOW) == pytest.approx(
            0.8 * 0.98**30)
    assert not decays(memory("fact", days_old=1, pinned=True), cfg)
    assert not decays(memory("decision", days_old=1), cfg)  # decision auto-protection
    assert effective_importance(memory("decision", days_old=30), cfg, NOW) == 0.8


def test_decay_types_must_be_known_types():
    with pytest.raises(ValueError, match="unknown memory type"):
        MemoryConfig(decay_types=["fact", "gossip"])


def test_the_access_boost_grows_with_recalls_and_stops_at_its_cap():
    assert access_boost(0, 0.3, 2.0) == 1.0
    assert access_boost(1, 0.3, 2.0) == pytest.approx(1.3)
    assert access_boost(3, 0.3, 2.0) == pytest.approx(1.6)
    assert access_boost(1000, 0.3, 2.0) == 2.0
    assert access_boost(1000, 0.0, 2.0) == 1.0  # weight 0: off


def _scores(live, query: str, projects: list[str]) -> dict[str, float]:
    out = {}
    for project in projects:
        got = live.recall(query, project=project, min_score=0.0, limit=1)["results"]
        out[project] = got[0]["score"]
    return out


def _backdate(live, memory_ids: list[str], days: int) -> None:
    at = format_ts(datetime.now(UTC) - timedelta(days=days))
    marks = ",".join("?" * len(memory_ids))
    live.service.core.access.flush()  # no recall counted earlier may land after the backdating
    with live.service.core.db.write_tx() as w:
        w.execute(f"UPDATE memories SET created_at = ?, last_accessed = NULL,"
                  f" recall_count = 0 WHERE id IN ({marks})", [at, *memory_ids])


def test_an_old_unused_status_ranks_below_a_fresh_one_an_old_decision_does_not(live,
                                                                             monkeypatch):
    old_fact = live.remember(TEXT, project="sig-old-fact", type="status", importance=0.8)["id"]
    live.remember(TEXT, project="sig-new-fact", type="status", importance=0.8)
    old_decision = live.remember(TEXT, project="sig-old-decision", type="decision",
                                 importance=0.8)["id"]
    live.flush()
    _backdate(live, [old_fact, old_decision], days=60)
    projects = ["sig-old-fact", "sig-new-fact", "sig-old-decision"]
    scores = _scores(live, TEXT, projects)
    assert scores["sig-old-fact"] < scores["sig-new-fact"]
    assert scores["sig-old-decision"] == pytest.approx(scores["sig-new-fact"], abs=1e-5)
    monkeypatch.setattr(live.service.core.config.memory, "decay_by_type", False)
    _backdate(live, [old_fact, old_decision], days=60)  # the recalls above refreshed them
    scores = _scores(live, TEXT, projects)
    # a decision still does not decay, so the new status (which is not aged) and the old
    # decision stay level while the old status has sunk further
    assert scores["sig-old-fact"] < scores["sig-new-fact"]
    assert scores["sig-old-decision"] == pytest.approx(scores["sig-new-fact"], abs=1e-5)


def test_only_explicit_recalls_feed_the_access_boost_and_it_stops_at_the_cap(live,
                                                                           monkeypatch):
    ids = {p: live.remember(TEXT, project=p, type="decision", importance=0.8)["id"]
           for p in ("sig-recalled", "sig-injected", "sig-untouched")}
    live.flush()
    service = live.service
    for _ in range(3):
        live.recall(TEXT, project="sig-recalled", min_score=0.0)
        service.hooks._touch([ids["sig-injected"]])  # the path hooks take when they inject
    service.core.access.flush()
    rows = {r["id"]: r for r in (live.http.get(f"/api/memory/{i}").json()
                                 for i in ids.values())}
    assert rows[ids["sig-recalled"]]["recall_count"] == 3
    assert rows[ids["sig-injected"]]["recall_count"] == 0
    assert rows[ids["sig-injected"]]["access_count"] == 3  # injections still count as use

    projects = list(ids)
    base = _scores(live, TEXT, projects)  # boost off by default: all equal
    assert base["sig-recalled"] == pytest.approx(base["sig-untouched"], abs=1e-5)
    monkeypatch.setattr(service.core.config.memory, "access_boost_weight", 0.3)
    monkeypatch.setattr(service.core.config.memory, "access_boost_cap", 2.0)
    service.core.access.flush()
    _reset = {"sig-recalled": 3, "sig-injected": 0, "sig-untouched": 0}
    with service.core.db.write_tx() as w:  # the scoring recalls above counted too: back to 3/0/0
        for project, n in _reset.items():
            w.execute("UPDATE memories SET recall_count = ? WHERE id = ?", (n, ids[project]))
    boosted = _scores(live, TEXT, projects)
    assert boosted["sig-recalled"] / boosted["sig-untouched"] == pytest.approx(
        1 + 0.3 * math.log2(4), rel=1e-4)
    assert boosted["sig-injected"] == pytest.approx(boosted["sig-untouched"], abs=1e-5)

    monkeypatch.setattr(service.core.config.memory, "access_boost_cap", 1.2)
    service.core.access.flush()
    with service.core.db.write_tx() as w:
        w.execute("UPDATE memories SET recall_count = 50 WHERE id = ?", (ids["sig-recalled"],))
        w.execute("UPDATE memories SET recall_count = 0 WHERE id = ?", (ids["sig-untouched"],))
    capped = _scores(live, TEXT, projects)
    assert capped["sig-recalled"] / capped["sig-untouched"] == pytest.approx(1.2, rel=1e-4)


def test_an_mcp_search_counts_as_an_explicit_recall(live):
    import anyio
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from mcp_flow import call

    made = live.remember(TEXT, project="sig-mcp", type="fact")["id"]
    live.flush()

    async def main() -> None:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            streamable_http_client(f"{live.url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            found = await call(session, "memory_search", {"query": TEXT, "project": "sig-mcp"})
            assert [r["id"] for r in found["results"]] == [made]

    anyio.run(main)
    live.service.core.access.flush()
    row = live.http.get(f"/api/memory/{made}").json()
    assert row["recall_count"] == 1 and row["access_count"] == 1
