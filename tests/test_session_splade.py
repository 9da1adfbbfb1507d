"""Session expansion by SPLADE (`search.session_signal: splade | both`): every session's
turns pooled into one sparse vector kept in step with the store, sessions found by it even
when no first-round candidate came from them, and the settings refused by name. A real daemon
with the real SPLADE model and a real SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import LiveDaemon, run_daemon, search_settings
from mnemonist.model.requests import RecallFilters
from mnemonist.search import session_splade
from mnemonist.search.fusion import Fused
from mnemonist.search.session_expansion import SessionExpansion, expand_sessions
from mnemonist.search.session_splade import Pool, QuerySessions, SessionVectors, pooled
from mnemonist.settings import ConfigError, Paths, load_config

CONFIG = {"sparse": {"enabled": True, "fields": "content"}, "search": {"min_score": 0.0}}

PETS = ["Ana: Rex threw up twice last night",
        "Ben: poor thing, is he still eating his food?",
        "Ana: no, we are seeing the veterinarian at five"]
WORK = ["Ana: the quarterly report is due on Friday",
        "Ben: I will finish the sales charts tonight",
        "Ana: send them to the finance team"]
GARDEN = ["Ana: the tomatoes finally turned red",
          "Ben: we should water the basil more often",
          "Ana: and put up a net against the birds"]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    with run_daemon(tmp_path_factory.mktemp("session-splade"), CONFIG) as d:
        yield d


@pytest.fixture(scope="module")
def turns(live: LiveDaemon) -> dict[str, str]:
    ids = {}
    for name, lines in (("pets", PETS), ("work", WORK), ("garden", GARDEN)):
        for i, line in enumerate(lines):
            ids[line] = live.remember(line, project="sv", source_id=f"sv/{name}",
                                      occurred_at=f"2024-05-0{i + 1}T10:00:00Z")["id"]
    live.flush()
    return ids


def seq(live: LiveDaemon, memory_id: str) -> int:
    return live.service.core.db.reader().execute(
        "SELECT seq FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]


def view(live: LiveDaemon, query: str, project: str | None = "sv",
         pool: Pool = "sum") -> QuerySessions:
    leg = live.service.core.searcher.sparse
    assert leg is not None
    out = leg.session_view(live.service.core.db.reader(), query,
                           RecallFilters(project=project) if project else None, pool)
    assert out is not None
    return out


def test_pooling_is_normalised_and_sum_or_max():
    a = (np.array([1, 2], np.int32), np.array([1.0, 2.0], np.float32))
    b = (np.array([2, 3], np.int32), np.array([3.0, 4.0], np.float32))
    terms, weights = pooled([a, b], "sum")
    assert terms.tolist() == [1, 2, 3]
    assert np.allclose(weights, np.array([1, 5, 4]) / np.sqrt(42))
    terms, weights = pooled([a, b], "max")
    assert np.allclose(weights, np.array([1, 3, 4]) / np.sqrt(26))
    assert pooled([], "sum")[0].size == 0


def test_a_session_is_found_by_what_its_turns_mean_together(live, turns):
    for pool in ("sum", "max"):
        found = view(live, "sick dog at the vet", pool=pool).find(3)
        assert found[0][0] == ("sv", "sv/pets"), pool
        assert found[0][1] > found[1][1] > 0
    scores = view(live, "gardening vegetables").scores([("sv", "sv/garden"), ("sv", "sv/work"),
                                                       ("sv", "nowhere")])
    assert scores[("sv", "sv/garden")] > scores[("sv", "sv/work")]
    assert scores[("sv", "nowhere")] == 0.0
    assert view(live, "sick dog at the vet", project="elsewhere").find(3) == []


def test_session_vectors_follow_deletes_and_leave_documents_out(live, turns, monkeypatch):
    ids = [live.remember(line, project="gone", source_id="gone/pets")["id"] for line in PETS]
    live.flush()
    assert [k for k, _ in view(live, "sick dog", project="gone").find(2)] == [("gone",
                                                                               "gone/pets")]
    for mid in ids[:2]:
        resp = live.http.request("DELETE", f"/api/memory/{mid}", json={"reason": "t"})
        assert resp.status_code == 200, resp.text
    live.flush()
    sessions = live.service.core.searcher.sparse.sessions
    assert sessions is not None and sessions.waiting == 0
    # one turn left: the session's vector is that turn's expansion alone
    left = live.service.core.sparse.indexes["content"].doc(seq(live, ids[2]))
    key_id = sessions._ids[("gone", "gone/pets")]
    assert sessions.index.doc(key_id)[0].tolist() == sorted(left[0].tolist())
    resp = live.http.request("DELETE", f"/api/memory/{ids[2]}", json={"reason": "t"})
    assert resp.status_code == 200, resp.text
    live.flush()
    assert view(live, "sick dog", project="gone").find(2) == []
    # a source longer than MAX_TURNS is a document: no session vector
    monkeypatch.setattr(session_splade, "MAX_TURNS", 2)
    fresh = SessionVectors(live.service.core.sparse.indexes["content"])
    while fresh.refresh(live.service.core.db.reader()):
        pass
    query = live.service.core.searcher.sparse.encode_query("sick dog")
    assert fresh.find(query.terms, query.weights, 5, "sv") == []  # every session has 3 turns
    monkeypatch.setattr(session_splade, "MAX_TURNS", 3)
    fresh = SessionVectors(live.service.core.sparse.indexes["content"])
    while fresh.refresh(live.service.core.db.reader()):
        pass
    assert fresh.find(query.terms, query.weights, 1, "sv")[0][0] == ("sv", "sv/pets")


class Other:
    """Another session signal, fixed: what expand_sessions asks of the SPLADE view."""

    def __init__(self, ranked: list[tuple[tuple[str, str], float]]) -> None:
        self.ranked = ranked

    def find(self, k: int) -> list[tuple[tuple[str, str], float]]:
        return self.ranked[:k]

    def scores(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
        return {k: dict(self.ranked).get(k, 0.0) for k in keys}


def test_a_session_no_candidate_came_from_joins_with_its_turns(live, turns):
    service = live.service
    conn = service.core.db.reader()
    qvec = service.core.embed_query("sick dog at the vet")
    index = service.core.index
    work = seq(live, turns[WORK[0]])
    pets = {seq(live, turns[line]) for line in PETS}

    def run(signal: str, find: int) -> dict[int, Fused]:
        fused = [Fused(work, 0.5, "keyword", 0.5, 0.1)]
        other = Other([(("sv", "sv/pets"), 2.0), (("sv", "sv/work"), 0.5)])
        params = SessionExpansion(0.5, 0, "max", signal, 0.5, find)
        out = expand_sessions(conn, fused, {work: 0.5}, lambda s: index.scores(qvec, s), 0.7,
                              None, params, other)
        return {f.seq: f for f in out}

    assert set(run("splade", 0)) == {work}  # the other signal ranks; nothing joins
    got = run("splade", 1)
    assert set(got) == {work} | pets
    assert all(got[s].source == "session" for s in pets)
    for s in pets:  # fused as fusion would (no keyword score), lifted by relevance 1
        assert got[s].score == pytest.approx(0.7 * max(got[s].vector, 0.0) * 1.5)
    assert got[work].score == pytest.approx(0.5 * (1 + 0.5 * 0.25))  # splade 0.5 / 2.0
    both = run("both", 1)
    # fused relevance of work is 1 (the only pooled score worth counting), splade 0.25
    assert both[work].score == pytest.approx(0.5 * (1 + 0.5 * (0.5 * 1.0 + 0.5 * 0.25)),
                                             rel=0.2)
    assert set(run("fused", 3)) == {work}  # `fused` never asks the other signal


def test_recall_brings_in_the_session_found_by_splade(live, turns):
    pets = {turns[line] for line in PETS}

    def recalled() -> set[str]:
        out = live.recall("my dog is sick", project="sv", limit=20, min_score=0.0,
                          min_relevance=0)  # every candidate: what is found is under test
        return {r["id"] for r in out["results"]}

    with search_settings(live, top_k=1, time_candidates=0.0, session_weight=0.5):
        plain = recalled()
        with search_settings(live, session_signal="splade", session_find=0):
            assert recalled() == plain
        with search_settings(live, session_signal="splade", session_find=1):
            found = recalled()
        with search_settings(live, session_signal="both", session_find=1):
            both = recalled()
    assert not pets <= plain  # top_k 1: the first round holds at most two turns
    assert pets <= found
    assert pets <= both


@pytest.mark.parametrize(("yaml", "name"), [
    ("search:\n  session_signal: tfidf\n", "session_signal"),
    ("search:\n  session_find: 50\n", "session_find"),
    ("search:\n  session_splade_share: 1.5\n", "session_splade_share"),
    ("search:\n  session_splade_pool: mean\n", "session_splade_pool"),
])
def test_bad_session_settings_are_refused_by_name(tmp_path: Path, yaml: str, name: str):
    home = tmp_path / "home"
    home.mkdir()
    (home / "agent.yaml").write_text(yaml)
    with pytest.raises(ConfigError, match=name):
        load_config(Paths(home))


def test_a_splade_session_signal_without_the_leg_shows_as_degraded(tmp_path: Path):
    with run_daemon(tmp_path / "home", {"search": {"session_signal": "splade",
                                                   "session_find": 2}}) as d:
        assert "sparse_leg_unavailable" in d.http.get("/health").json()["degraded"]
        d.remember("recall still works", project="p", source_id="p/s")
        d.flush()
        assert d.recall("recall works", project="p")["results"]


def test_a_turn_that_lands_later_moves_its_sessions_vector(live, turns):
    live.remember(GARDEN[0], project="grow", source_id="grow/s")
    live.flush()
    before = view(live, "sick dog at the vet", project="grow").scores([("grow", "grow/s")])
    live.remember(PETS[2], project="grow", source_id="grow/s")
    live.flush()  # the expander recomputes the session once the new turn is expanded
    after = view(live, "sick dog at the vet", project="grow").scores([("grow", "grow/s")])
    assert after[("grow", "grow/s")] > before[("grow", "grow/s")] + 0.1


def test_a_purged_turn_leaves_its_sessions_vector(live, turns):
    """A purge removes the row, so the table no longer names the memory's session: the
    session it was pooled into is recomputed all the same, without it."""
    ids = [live.remember(line, project="purged", source_id="purged/mixed")["id"]
           for line in (PETS[0], GARDEN[0])]
    live.flush()
    found = view(live, "red tomatoes", project="purged").find(1)  # makes the vectors
    assert found[0][0] == ("purged", "purged/mixed")
    sessions = live.service.core.searcher.sparse.sessions
    key_id = sessions._ids[("purged", "purged/mixed")]
    both = set(sessions.index.doc(key_id)[0].tolist())
    kept = live.service.core.sparse.indexes["content"].doc(seq(live, ids[1]))
    resp = live.http.post("/api/memory/forget", json={
        "ids": [ids[0]], "mode": "execute", "reason": "purge", "force": True})
    assert resp.status_code == 200 and resp.json()["hard"] is True, resp.text
    live.flush()
    assert sessions.waiting == 0
    left = set(sessions.index.doc(key_id)[0].tolist())
    assert left == set(kept[0].tolist()) and left < both
