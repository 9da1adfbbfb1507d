"""Desire paths (`graph/co_use.py`): entities that the memories sessions used name together,
more often than chance and in several sessions, get a learned `co-use` edge; a name every
session uses gets none; each end holds a bounded number; scopes never mix; and the edge
carries the graph boost from one entity's question to the other's memories. Real daemon,
real store files (both stores), keyword-only; sessions end through the service's own
session-end pass, with ratings given in the session."""

from __future__ import annotations

from typing import Any

import pytest

from mnemonist.graph.boost import graph_boost
from mnemonist.graph.co_use import npmi
from mnemonist.model.graph import FeedbackRequest
from mnemonist.model.requests import RecallFilters
from pipeline_helpers import manual_daemon, remember

pytestmark = pytest.mark.both_stores


def _config(**co_use: Any) -> dict[str, Any]:
    return {"embedding": {"provider": "none"},
            "memory": {"pipelineV2": {"graph": {"coUse": {"enabled": True, **co_use}}}}}


def _session(d: Any, key: str, *memory_ids: str, user_id: str | None = None
             ) -> dict[str, Any]:
    """A session that rated these memories helpful (as `user_id`), then ended."""
    for mid in memory_ids:
        d.service.feedback.memory_feedback(mid, FeedbackRequest(
            helpful=True, query="what do the workers do?", session_key=key, user_id=user_id))
    out = d.service.feedback.session_feedback(key)
    assert out is not None
    return out


def _learned(d: Any) -> dict[frozenset[str], dict[str, Any]]:
    rows = d.db.reader().execute(
        "SELECT a.name AS a, b.name AS b, r.relation_type, r.confidence, r.mentions,"
        " r.strength, r.note FROM relations r JOIN entities a ON a.id = r.source_entity_id"
        " JOIN entities b ON b.id = r.target_entity_id WHERE r.reason = 'co-use'")
    return {frozenset((r["a"], r["b"])): dict(r) for r in rows}


def test_npmi_is_zero_at_chance_and_one_when_always_together() -> None:
    assert npmi(2, 4, 2, 4) == pytest.approx(0.0)  # one of them is in every session
    assert npmi(3, 3, 3, 3) == 1.0
    assert npmi(2, 2, 2, 5) == pytest.approx(1.0)
    assert 0 < npmi(2, 3, 2, 5) < 1
    assert npmi(0, 3, 2, 5) == -1.0


def test_a_pair_used_together_in_two_sessions_gets_an_edge_and_a_hub_none(tmp_path) -> None:
    with manual_daemon(tmp_path, _config()) as d:
        billing = remember(d, "Our BillingWorker sends failed invoices to "
                              "the Platform.", project="ops")
        ledger = remember(d, "Our LedgerService reconciles payouts nightly, on the Platform.",
                          project="ops")
        search = remember(d, "Our SearchIndexer rebuilds at midnight, on the Platform.",
                          project="ops")
        mail = remember(d, "Our MailRelay sends receipts, on the Platform.", project="ops")
        _session(d, "s1", search)
        _session(d, "s2", mail)
        first = _session(d, "s3", billing, ledger)
        assert first["desire_paths"]["pairs"] == 3  # BillingWorker, LedgerService, Platform
        assert first["desire_paths"]["edges_created"] == 0  # one session is not a path
        assert _learned(d) == {}
        second = _session(d, "s4", billing, ledger)
        assert second["desire_paths"]["edges_created"] == 1
        learned = _learned(d)
        # Platform was used in every session: with BillingWorker it is chance (NPMI 0)
        assert list(learned) == [frozenset({"BillingWorker", "LedgerService"})]
        edge = learned[frozenset({"BillingWorker", "LedgerService"})]
        assert edge["relation_type"] == "related_to"
        assert edge["confidence"] == 0.5
        assert edge["mentions"] == 2
        assert edge["strength"] == pytest.approx(1.0)  # 2 of 4 sessions, always together
        assert "2 sessions" in edge["note"]
        # a session that ends again teaches nothing twice
        assert d.service.feedback.session_feedback("s4") is None


def test_the_learned_edge_carries_the_graph_boost(tmp_path) -> None:
    with manual_daemon(tmp_path, _config()) as d:
        billing = remember(d, "Our BillingWorker runs every hour.",
                           project="ops")
        ledger = remember(d, "Our LedgerService reconciles payouts nightly.", project="ops")
        remember(d, "Our SearchIndexer rebuilds at midnight.", project="ops")
        filters = RecallFilters(project="ops")

        def boosted() -> dict[str, float]:
            conn = d.db.reader()
            return graph_boost(conn, "what does the BillingWorker do?", filters,
                               timeout_ms=5000).weights

        before = boosted()
        assert before.get(billing) == 1.0 and ledger not in before
        _session(d, "s1", billing, ledger)
        _session(d, "s2", billing, ledger)
        after = boosted()
        assert after.get(billing) == 1.0
        assert after.get(ledger) == 0.5  # one hop out: the hop weight


def test_an_entity_holds_at_most_max_edges(tmp_path) -> None:
    with manual_daemon(tmp_path, _config(max_edges=1, min_npmi=0.05)) as d:
        a = remember(d, "Our BillingWorker runs every hour.", project="ops")
        b = remember(d, "Our LedgerService reconciles payouts.", project="ops")
        c = remember(d, "Our MailRelay sends receipts.", project="ops")
        for key in ("s1", "s2"):
            _session(d, key, a, b)
        assert len(_learned(d)) == 1
        for key in ("s3", "s4"):  # LedgerService–MailRelay: weaker than the edge it holds
            out = _session(d, key, b, c)
        assert out["desire_paths"]["edges_created"] == 0
        assert list(_learned(d)) == [frozenset({"BillingWorker", "LedgerService"})]


def test_sessions_never_pair_entities_of_two_scopes(tmp_path) -> None:
    with manual_daemon(tmp_path, _config()) as d:
        ops = remember(d, "Our BillingWorker runs every hour.", project="ops")
        web = remember(d, "Our LedgerService reconciles payouts.", project="web")
        private = remember(d, "Our MailRelay sends receipts.", project="ops", user_id="alice")
        for key in ("s1", "s2", "s3"):
            out = _session(d, key, ops, web, private, user_id="alice")
        assert out["desire_paths"]["pairs"] == 0
        assert _learned(d) == {}


def test_off_by_default_nothing_is_counted(tmp_path) -> None:
    with manual_daemon(tmp_path, {"embedding": {"provider": "none"}}) as d:
        a = remember(d, "Our BillingWorker runs every hour.", project="ops")
        b = remember(d, "Our LedgerService reconciles payouts.", project="ops")
        for key in ("s1", "s2", "s3"):
            assert _session(d, key, a, b)["desire_paths"] is None
        assert _learned(d) == {}
        assert d.db.reader().execute("SELECT COUNT(*) FROM entity_co_use").fetchone()[0] == 0
