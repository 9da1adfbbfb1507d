"""Recall puts the newest statement of the query's subject first (search/newest_first.py):
pure, over hand-made hits, and end to end through a real daemon with the consolidation engine
kept out of the way (so that the older statement is still there to be outranked)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from conftest import run_daemon
from mnemonist.model.memory import Memory
from mnemonist.search.newest_first import asks_about_the_past, newest_first, subject_group

pytestmark = pytest.mark.both_stores


@dataclass
class FakeHit:
    memory: Memory
    relevance: float | None
    #: the legs' fused score; the relevance's value unless given
    fused: float = -1.0

    def __post_init__(self) -> None:
        if self.fused < 0:
            self.fused = self.relevance or 0.0


def mem(seq: int, content: str, when: str, *, who: str | None = None, pinned: bool = False,
        source_type: str | None = None) -> Memory:
    return Memory(
        seq=seq, id=f"m{seq}", content=content, normalized_content=content.lower(),
        content_hash="", type="fact", importance=0.5, tags=[], pinned=pinned, who=who,
        why=None, project="ops", source_type=source_type, source_id=None,
        idempotency_key=None, version=1, is_deleted=False, deleted_at=None,
        delete_reason=None, last_accessed=None, access_count=0, embedding_model=None,
        occurred_at=when, created_at=when, updated_at=when)


def hits(*rows: tuple[Memory, float | None]) -> list[FakeHit]:
    return [FakeHit(m, r) for m, r in rows]


OLD = mem(1, "The orders cluster runs in region ca-central-1.", "2025-01-10T09:00:00.000Z")
NEW = mem(2, "We migrated the orders cluster over to eu-north-1.", "2025-03-10T09:00:00.000Z")
OTHER = mem(3, "The analytics cluster runs in region eu-west-1.", "2025-06-10T09:00:00.000Z")
QUESTION = "which region is the orders cluster in now?"


def test_a_replacement_the_ranker_finds_unlikely_still_goes_first():
    """The learned ranker's relevance is sharp: the old statement reads like the question
    (0.94), the replacement worded as news gets 0.04. What makes it part of the subject is
    how well it matches by the legs (fused), not that probability."""
    ranked = [FakeHit(OLD, 0.94, fused=0.8), FakeHit(NEW, 0.04, fused=0.35),
              FakeHit(OTHER, 0.03, fused=0.5)]
    assert newest_first(QUESTION, ranked, 0.1) == [1, 0, 2]
    assert [h.memory.id for h in ranked] == ["m2", "m1", "m3"]
    assert [h.relevance for h in ranked] == [0.94, 0.04, 0.03]
    # far below the best match by the legs, it stays where it is
    ranked = [FakeHit(OLD, 0.94, fused=0.8), FakeHit(NEW, 0.04, fused=0.05)]
    assert newest_first(QUESTION, ranked, 0.1) == [0, 1]


def test_the_newest_statement_of_the_subject_takes_the_best_place():
    ranked = hits((OLD, 0.6), (NEW, 0.1), (OTHER, 0.07))
    order = newest_first(QUESTION, ranked, 0.1)
    assert [h.memory.id for h in ranked] == ["m2", "m1", "m3"]
    assert order == [1, 0, 2]
    # each place keeps its relevance: the newest statement is now the likely answer
    assert [h.relevance for h in ranked] == [0.6, 0.1, 0.07]


def test_what_keeps_its_order():
    # a hit that matches the query below the share of the best one's fused score is not
    # part of the group
    ranked = hits((OLD, 0.6), (NEW, 0.05))
    assert newest_first(QUESTION, ranked, 0.1) == [0, 1]
    # another subject, however new, never moves
    ranked = hits((OLD, 0.6), (OTHER, 0.3))
    assert subject_group(QUESTION, ranked, 0.1) == []
    # a question about the past
    assert asks_about_the_past("which region was the orders cluster in before?")
    ranked = hits((OLD, 0.6), (NEW, 0.1))
    assert newest_first("which region was the orders cluster in before?", ranked, 0.1) == [0, 1]
    # facts told in one sitting (within an hour) are several facts, not a replacement
    same_hour = mem(4, "The orders cluster runs on spot instances.", "2025-01-10T09:20:00.000Z")
    ranked = hits((OLD, 0.6), (same_hour, 0.2))
    assert newest_first(QUESTION, ranked, 0.1) == [0, 1]
    # the same words from someone else are not a newer value of what the best hit's speaker said
    ana = mem(5, "I finally booked the train to Lisbon", "2025-01-10T09:00:00.000Z", who="Ana")
    ben = mem(6, "I finally booked the train to Lisbon", "2025-05-10T09:00:00.000Z", who="Ben")
    assert newest_first("did Ana book the train to Lisbon", hits((ana, 0.7), (ben, 0.6)),
                        0.1) == [0, 1]
    # a pinned memory and a conversation turn keep their places; 0 turns it off
    pinned = mem(7, OLD.content, OLD.occurred_at, pinned=True)
    assert newest_first(QUESTION, hits((pinned, 0.6), (NEW, 0.1)), 0.1) == [0, 1]
    turn = mem(8, NEW.content, NEW.occurred_at, source_type="conversation")
    assert newest_first(QUESTION, hits((OLD, 0.6), (turn, 0.1)), 0.1) == [0, 1]
    assert newest_first(QUESTION, hits((OLD, 0.6), (NEW, 0.1)), 0.0) == [0, 1]
    # a lookup of a word or two
    assert newest_first("orders cluster", hits((OLD, 0.6), (NEW, 0.1)), 0.1) == [0, 1]


def test_recall_answers_with_the_current_value(daemon_store, tmp_path):
    config = {"memory": {"consolidation": {"enabled": False}}}
    with run_daemon(tmp_path / "home", config) as live:
        old = live.remember(OLD.content, project="ops", occurred_at="2025-01-10")
        new = live.remember("The orders cluster was moved; its nodes now sit in eu-north-1.",
                            project="ops", occurred_at="2025-03-10")
        for i in range(6):
            live.remember(f"Filler note {i} about the coffee machine", project="ops")
        live.flush()
        now = [r["id"] for r in live.recall(QUESTION, project="ops")["results"]]
        assert now.index(new["id"]) < now.index(old["id"])
        before = [r["id"] for r in live.recall(
            "which region was the orders cluster in originally?", project="ops")["results"]]
        assert before.index(old["id"]) < before.index(new["id"])
        live.service.core.config.search.newest_first_share = 0.0  # a runtime setting: off
        off = [r["id"] for r in live.recall(QUESTION, project="ops")["results"]]
        assert off.index(old["id"]) < off.index(new["id"])


def test_the_prompt_hook_hands_over_the_current_value_only(daemon_store, tmp_path):
    config = {"memory": {"consolidation": {"enabled": False}}}
    with run_daemon(tmp_path / "home", config) as live:
        old = live.remember(OLD.content, project="ops", occurred_at="2025-01-10")
        new = live.remember("The orders cluster was moved; its nodes now sit in eu-north-1.",
                            project="ops", occurred_at="2025-03-10")
        for i in range(6):
            live.remember(f"Filler note {i} about the coffee machine", project="ops")
        live.flush()
        answer = live.http.post("/api/hooks/user-prompt-submit", json={
            "session_id": "s-region", "prompt": QUESTION, "project": "ops"}).json()
        assert new["id"] in answer["memories"] and old["id"] not in answer["memories"]
        assert "eu-north-1" in answer["context"] and "(replaces, from 2025-01-10" in answer[
            "context"]
        # a question about the past is answered with what was true then, too
        past = live.http.post("/api/hooks/user-prompt-submit", json={
            "session_id": "s-region-past", "project": "ops",
            "prompt": "which region was the orders cluster in originally?"}).json()
        assert old["id"] in past["memories"]
