"""Recall's query embedding on a thread of its own (`search/overlap.py`), and recall's answer
the same with and without it."""

from __future__ import annotations

import threading

import pytest

from mnemonist.daemon import open_memory
from mnemonist.guards import write_tx as txguard
from mnemonist.model.requests import RecallRequest, RememberRequest
from mnemonist.search import hybrid, overlap


def test_started_runs_on_another_thread_and_answers():
    caller = threading.get_ident()
    where: list[int] = []

    def work() -> int:
        where.append(threading.get_ident())
        return 42

    wait = overlap.started(work)
    assert wait() == 42 and where and where[0] != caller


def test_started_raises_what_the_work_raised():
    def fails() -> None:
        raise ValueError("no vector")

    wait = overlap.started(fails)
    with pytest.raises(ValueError, match="no vector"):
        wait()
    assert overlap.started(lambda: 7)() == 7  # the worker is free again


def test_a_busy_worker_leaves_the_work_to_the_caller():
    release = threading.Event()
    first = overlap.started(release.wait)  # holds the worker
    caller = threading.get_ident()
    where: list[int] = []
    second = overlap.started(lambda: where.append(threading.get_ident()) or "inline")
    assert where == []  # not run yet: it runs when its answer is asked for
    assert second() == "inline" and where == [caller]
    release.set()
    assert first() is True


def test_inside_a_write_transaction_the_work_stays_in_the_caller():
    """A provider refuses to run inside a write transaction (txguard): it must see the
    caller's transaction, not a worker thread's clean state."""
    txguard.enter()
    try:
        wait = overlap.started(lambda: txguard.in_write_tx())
        assert wait() is True
    finally:
        txguard.leave()


def test_recall_answers_the_same_with_the_embedding_beside_the_keyword_leg(
        tmp_path, monkeypatch):
    facts = ["The payments service deploys on Tuesdays after the standup",
             "Ana owns the checkout API and its PostgreSQL schema",
             "The staging cluster runs in region eu-north-1",
             "We moved the nightly backup job to 02:00 UTC",
             "Redis caches the product catalogue for ten minutes",
             "The mobile app reads feature flags from LaunchDarkly"]
    queries = ["when do payments deploy?", "who owns checkout?", "where is staging?",
               "backup schedule", "what caches the catalogue", "feature flags mobile"]
    with open_memory(tmp_path) as d:
        monkeypatch.setattr(d.service.core.access, "record", lambda *a, **k: None)  # no recall
        # counts: the second round must see the store the first one saw
        for text in facts:
            d.service.memories.remember(RememberRequest(content=text, project="shop"))
        d.service.flush()

        def answers() -> list:
            out = []
            for q in queries:
                with d.service.core._query_cache_lock:
                    d.service.core._query_cache.clear()
                r = d.service.reads.recall(RecallRequest(query=q, project="shop", limit=5))
                assert r["method"] == "hybrid"  # the vector side ran
                out.append([(x["id"], x["score"], x["relevance"]) for x in r["results"]])
            return out

        beside = answers()
        assert any(beside)
        monkeypatch.setattr(hybrid, "started", lambda fn: fn)  # one thread, in order
        assert answers() == beside
