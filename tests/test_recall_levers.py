"""The LLM-free recall levers beside the two legs: session expansion, dense Rocchio feedback
and keyword term expansion (off by default), on a real daemon with the real model."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from conftest import search_settings
from mnemonist.search.feedback import expansion_terms, rocchio
from mnemonist.search.fusion import Fused
from mnemonist.search.session_expansion import spread_sessions

TRIP = ["Ana: we should plan the Lisbon trip for May",
        "Ben: I booked the flights yesterday",
        "Ana: great, which hotel did you pick?",
        "Ben: the one near the river, with a balcony",
        "Ana: perfect, I will pack my camera"]
WORK = ["Ana: the quarterly report is due on Friday",
        "Ben: I will finish the sales charts tonight",
        "Ana: send them to the finance team"]


@pytest.fixture(scope="module")
def sessions(live):
    ids = {}
    for source, lines in (("trip", TRIP), ("work", WORK)):
        for i, line in enumerate(lines):
            ids[line] = live.remember(line, project="levers", source_id=f"levers/{source}",
                                      occurred_at=f"2024-05-0{i + 1}T10:00:00Z")["id"]
    live.flush()
    return ids


def recalled(live, query):
    out = live.recall(query, project="levers", limit=20, min_score=0.0)
    return [r["id"] for r in out["results"]]


def test_session_expansion_brings_in_the_best_sessions_other_turns(live, sessions):
    far = sessions[TRIP[3]]  # shares no word with the query, outside its context window
    with search_settings(live, top_k=1, time_candidates=0.0):
        assert far not in recalled(live, "Lisbon trip plans")
        with search_settings(live, session_weight=1.0, session_top=1):
            got = recalled(live, "Lisbon trip plans")
    assert far in got
    assert set(got) >= {sessions[line] for line in TRIP}
    assert not set(got) & {sessions[line] for line in WORK}  # only the best session joins


def test_session_expansion_off_changes_nothing(live, sessions):
    with search_settings(live, session_weight=0.0, session_top=5):
        plain = recalled(live, "quarterly report")
    with search_settings(live, session_top=3):
        assert recalled(live, "quarterly report") == plain


def test_rocchio_moves_the_query_towards_the_feedback_and_stays_unit(live, sessions):
    service = live.service
    conn = service.core.db.reader()
    seqs = [conn.execute("SELECT seq FROM memories WHERE id = ?", (sessions[line],))
            .fetchone()[0] for line in WORK]
    q = service.core.embed_query("Lisbon trip plans")
    moved = rocchio(service.core.index, q, seqs, 1.0)
    assert moved is not None
    assert abs(float(np.linalg.norm(moved)) - 1.0) < 1e-5
    centre = np.mean([service.core.index.vector(s) for s in seqs], axis=0)
    assert float(moved @ centre) > float(q @ centre)
    assert rocchio(service.core.index, q, [], 1.0) is None


def test_expansion_terms_come_from_the_best_candidates_and_skip_the_query(live, sessions):
    conn = live.service.core.db.reader()
    seq = {line: conn.execute("SELECT seq FROM memories WHERE id = ?", (sessions[line],))
           .fetchone()[0] for line in TRIP}
    fused = [Fused(seq[TRIP[0]], 0.9, "hybrid", 1.0, 0.5),
             Fused(seq[TRIP[1]], 0.5, "vector", None, 0.4),
             Fused(seq[TRIP[4]], 0.4, "vector", None, 0.3)]
    terms = expansion_terms(conn, "Lisbon trip", fused, 3, 10)
    assert "lisbon" not in terms and "trip" not in terms
    assert "plan" in terms  # the best candidate's words
    assert "ana" in terms  # in two candidates
    assert "flights" not in terms  # once, in a weaker candidate
    assert expansion_terms(conn, "Lisbon trip", fused, 3, 0) == []



def test_session_cap_holds_back_a_sessions_extra_memories_until_the_head_is_full():
    def hit(name, source):
        return SimpleNamespace(name=name, memory=SimpleNamespace(source_id=source, project="p"))

    ranked = [hit("a1", "a"), hit("a2", "a"), hit("a3", "a"), hit("n1", None),
              hit("b1", "b"), hit("a4", "a"), hit("c1", "c")]
    names = [h.name for h in spread_sessions(ranked, 2, head=4)]
    assert names == ["a1", "a2", "n1", "b1", "a3", "a4", "c1"]
    assert [h.name for h in spread_sessions(ranked, 0, head=4)] == [h.name for h in ranked]
    assert [h.name for h in spread_sessions(ranked, 1, head=10)] == \
        ["a1", "n1", "b1", "c1", "a2", "a3", "a4"]
