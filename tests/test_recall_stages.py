"""Recall's stage clock (search/stages.py): where `bench scale` sees a recall's time go.

Real daemon, real SQLite file and the real embedding model; no timing is asserted beyond what
must hold on any machine (every stage recorded, none negative, together no longer than the
recall)."""

from __future__ import annotations

import threading
import time

import pytest

from mnemonist.daemon import open_memory
from mnemonist.model.requests import RecallRequest, RememberRequest
from mnemonist.search.stages import STAGES, StageClock, lap_of


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    with open_memory(tmp_path_factory.mktemp("stages")) as daemon:
        svc = daemon.service
        for text in ("The orders cluster runs in region eu-north-1.",
                     "Deploys go out on Tuesdays after the standup.",
                     "Ana prefers tabs over spaces in the billing service."):
            svc.memories.remember(RememberRequest(content=text))
        assert svc.flush(120)
        yield svc


def test_every_stage_of_a_recall_is_timed(service) -> None:
    searcher = service.core.searcher
    clock = searcher.stages = StageClock()
    try:
        started = time.perf_counter()
        answer = service.reads.recall(RecallRequest(query="which region is orders in?"))
        took = time.perf_counter() - started
        laps = clock.take()
    finally:
        searcher.stages = None
    assert answer["method"] == "hybrid" and answer["count"] >= 1
    assert list(laps) == list(STAGES)
    assert all(seconds >= 0 for seconds in laps.values())
    assert laps["keyword"] > 0 and laps["ranking_rows"] > 0
    assert sum(laps.values()) <= took
    assert clock.take() == {}  # handed over once


def test_no_clock_records_nothing_and_recall_is_the_same(service) -> None:
    searcher = service.core.searcher
    request = RecallRequest(query="when do deploys go out?")
    plain = service.reads.recall(request)
    clock = searcher.stages = StageClock()
    try:
        timed = service.reads.recall(request)
    finally:
        searcher.stages = None
    # the same memories, the same one first (the access boost of the first recall may reorder
    # close ones behind it)
    assert {r["id"] for r in timed["results"]} == {r["id"] for r in plain["results"]}
    assert timed["results"][0]["id"] == plain["results"][0]["id"]
    assert "Tuesdays" in timed["results"][0]["content"]
    assert clock.take()  # the clocked recall was recorded
    service.reads.recall(request)
    assert clock.take() == {}  # the clock was taken off: nothing more


def test_each_thread_keeps_its_own_recall() -> None:
    clock = StageClock()
    seen: dict[str, dict[str, float]] = {}

    def recall(name: str) -> None:
        lap = clock.begin()
        lap(name)
        seen[name] = clock.take()

    threads = [threading.Thread(target=recall, args=(n,)) for n in ("keyword", "fusion")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(seen["keyword"]) == {"keyword"} and set(seen["fusion"]) == {"fusion"}
    assert clock.take() == {}  # this thread ran no recall
    lap_of(None)("keyword")  # no clock: a mark that does nothing
    assert clock.take() == {}
