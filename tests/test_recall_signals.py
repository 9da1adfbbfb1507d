"""The recall signals added for quality (docs/benchmarks.md): named authors left out of the
query the vector leg embeds, the two-word phrase bonus, and the candidates of a named time —
each on by default, each off by its setting, over a real daemon and the real model."""

from __future__ import annotations

import pytest

from conftest import run_daemon
from mnemonist.search.authors import KnownAuthors
from mnemonist.store.db import Database
from mnemonist.store.migrations import migrate

pytestmark = pytest.mark.both_stores


@pytest.fixture
def embedded(live, monkeypatch):
    """The texts the vector leg embeds, recorded at the service's query embedder."""
    seen: list[str] = []
    searcher = live.service.core.searcher
    original = searcher.embed_query

    def record(text: str):
        seen.append(text)
        return original(text)

    monkeypatch.setattr(searcher, "embed_query", record)
    return seen


def test_the_vector_leg_embeds_the_query_without_a_named_author(live, embedded, monkeypatch):
    live.remember("Melanie: I painted a sunset over the lake", who="Melanie", project="art")
    live.remember("Caroline: the pottery class was fun", who="Caroline", project="art")
    live.flush()
    out = live.recall("What has Melanie's family painted?", project="art")
    assert embedded[-1] == "What has family painted?"
    assert out["results"][0]["who"] == "Melanie"  # the keyword leg and the lift keep the name
    live.recall("What has Oliver painted?", project="art")  # Oliver wrote nothing: kept
    assert embedded[-1] == "What has Oliver painted?"
    monkeypatch.setattr(live.service.core.config.search, "who_strip", False)
    live.recall("What has Melanie painted?", project="art")
    assert embedded[-1] == "What has Melanie painted?"


def test_a_query_that_is_only_a_name_is_embedded_whole(live, embedded):
    live.remember("Dmitri: deployed the cache", who="Dmitri", project="names")
    live.flush()
    live.recall("Dmitri?", project="names")
    assert embedded[-1] == "Dmitri?"


def test_an_author_with_two_words_is_named_only_by_both(tmp_path):
    db = Database(tmp_path / "m.db")
    migrate(db)
    with db.write_tx() as conn:
        for seq, who in [(1, "Maria Lopez"), (2, "Ben")]:
            conn.execute(
                "INSERT INTO memories (id, seq, content, normalized_content, content_hash, who,"
                " type, importance, created_at, updated_at, occurred_at)"
                " VALUES (?, ?, 'x', 'x', ?, ?, 'fact', 0.5, '2024', '2024', '2024')",
                (f"m{seq}", seq, f"h{seq}", who),
            )
    authors = KnownAuthors()
    conn = db.reader()
    assert authors.strip(conn, "what did Maria say to Ben?") == "what did Maria say to?"
    assert authors.strip(conn, "what did Maria Lopez say?") == "what did say?"
    with db.write_tx() as w:  # a new author is seen by the next query (read past the last seq)
        w.execute(
            "INSERT INTO memories (id, seq, content, normalized_content, content_hash, who,"
            " type, importance, created_at, updated_at, occurred_at)"
            " VALUES ('m3', 3, 'y', 'y', 'h3', 'Ada', 'fact', 0.5, '2024', '2024', '2024')"
        )
    assert authors.strip(conn, "did Ada call?") == "did call?"
    db.close()


def test_a_phrase_of_the_query_lifts_the_memory_that_holds_it(live, monkeypatch):
    phrase = live.remember("Joined the support group on Monday", project="phr")["id"]
    # more of the query's words, more often, but never the two side by side
    scattered = live.remember("The group gave support to new parents, and support to the"
                              " group of new parents", project="phr")["id"]
    live.remember("Parents evening moved to Thursday", project="phr")
    live.flush()

    def keyword_scores() -> dict[str, float]:
        out = live.recall("which support group for new parents?", project="phr",
                          min_score=0.0)
        return {r["id"]: r["score"] for r in out["results"]}

    with_phrase = keyword_scores()
    monkeypatch.setattr(live.service.core.config.search, "phrase_weight", 0.0)
    without = keyword_scores()
    assert with_phrase[phrase] > without[phrase]  # "support group" is a phrase of the query
    # the bonus goes to the memory holding the phrase (the other one moves only through the
    # per-query normalisation, and less)
    assert (with_phrase[phrase] - without[phrase]) > (with_phrase[scattered] - without[scattered])


def test_a_named_time_brings_its_memories_into_the_candidates(tmp_path):
    # top_k 1: each leg proposes one memory, as on a store far larger than its top_k
    with run_daemon(tmp_path, {"search": {"top_k": 1}}) as live:
        for day in range(1, 7):
            live.remember(f"Long discussion about the budget spreadsheet, round {day}",
                          project="t", occurred_at=f"2025-04-0{day}T10:00:00Z")
        target = live.remember("Lunch with Rosa at the harbour, ordered the fish",
                               project="t", occurred_at="2025-05-08T12:00:00Z")["id"]
        live.flush()
        out = live.recall("What did we discuss on 8 May 2025?", project="t", min_score=0.0)
        assert out["time_window"] is not None
        assert target in [r["id"] for r in out["results"]]
        live.service.core.config.search.time_candidates = 0.0
        out = live.recall("What did we discuss on 8 May 2025?", project="t", min_score=0.0)
        assert target not in [r["id"] for r in out["results"]]


def test_an_author_named_by_modify_is_known_to_the_next_query(live, embedded):
    made = live.remember("Quarterly numbers look fine", project="mod")["id"]
    live.flush()
    live.recall("What did Ingrid say about the numbers?", project="mod")
    assert embedded[-1] == "What did Ingrid say about the numbers?"  # nobody is Ingrid yet
    resp = live.http.patch(f"/api/memory/{made}", json={"who": "Ingrid", "reason": "attribution"})
    assert resp.status_code == 200, resp.text
    live.recall("What did Ingrid say about the numbers?", project="mod")
    assert embedded[-1] == "What did say about the numbers?"
