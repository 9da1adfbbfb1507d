"""The job runtime: leases, completion, failure to dead, deferral without burning attempts,
the stale-lease reaper, backoff, and a worker loop started and stopped with real threads."""

from __future__ import annotations

import random
import threading
import time

import pytest

from mnemonist.pipeline.worker import JobWorker, ProviderUnavailable, backoff_delay
from mnemonist.store import jobs
from mnemonist.store.db import Database
from mnemonist.store.migrations import migrate


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "jobs.db")
    migrate(database)
    yield database
    database.close()


def enqueue(db, memory_id: str, job_type: str = "extract", max_attempts: int = 3) -> str:
    with db.write_tx() as conn:
        job_id = jobs.enqueue(conn, job_type, memory_id=memory_id, max_attempts=max_attempts)
    assert job_id
    return job_id


def status(db, job_id: str) -> tuple[str, int]:
    row = db.reader().execute(
        "SELECT status, attempts FROM memory_jobs WHERE id = ?", (job_id,)).fetchone()
    return row[0], row[1]


def test_enqueue_is_deduplicated_while_pending_or_leased(db):
    first = enqueue(db, "m1")
    with db.write_tx() as conn:
        assert jobs.enqueue(conn, "extract", memory_id="m1") is None
        assert jobs.enqueue(conn, "other", memory_id="m1") is not None
        leased = jobs.lease(conn, "extract")
    assert leased is not None and leased.id == first
    with db.write_tx() as conn:
        assert jobs.enqueue(conn, "extract", memory_id="m1") is None  # leased still counts
        jobs.complete(conn, first, {"ok": True})
        assert jobs.enqueue(conn, "extract", memory_id="m1") is not None


def test_lease_takes_oldest_and_no_job_twice(db):
    a, b = enqueue(db, "a"), enqueue(db, "b")
    with db.write_tx() as conn:
        one = jobs.lease(conn, "extract")
        two = jobs.lease(conn, "extract")
        three = jobs.lease(conn, "extract")
    assert (one.id, two.id, three) == (a, b, None)
    assert one.attempts == 1 and status(db, a) == ("leased", 1)


def test_failures_retry_then_go_dead(db):
    job_id = enqueue(db, "m", max_attempts=2)
    for expected in ("pending", "dead"):
        with db.write_tx() as conn:
            job = jobs.lease(conn, "extract")
            assert job is not None
            assert jobs.fail(conn, job.id, "boom", retry_in_s=0) == expected
    assert status(db, job_id) == ("dead", 2)


def test_retry_waits_for_run_after(db):
    enqueue(db, "m")
    with db.write_tx() as conn:
        job = jobs.lease(conn, "extract")
        jobs.fail(conn, job.id, "boom", retry_in_s=60)
        assert jobs.lease(conn, "extract") is None


def test_defer_does_not_burn_an_attempt(db):
    job_id = enqueue(db, "m")
    with db.write_tx() as conn:
        job = jobs.lease(conn, "extract")
        jobs.defer(conn, job.id, "llm down", retry_in_s=0)
    assert status(db, job_id) == ("pending", 0)


def test_reaper_returns_stale_leases(db):
    job_id = enqueue(db, "m")
    with db.write_tx() as conn:
        jobs.lease(conn, "extract")
        conn.execute("UPDATE memory_jobs SET leased_at = '2000-01-01T00:00:00.000Z'")
        assert jobs.reap_stale(conn, lease_timeout_ms=10_000) == 1
    assert status(db, job_id) == ("pending", 1)


def test_a_reaper_given_a_job_type_leaves_other_kinds_alone(db):
    job_id = enqueue(db, "m")
    with db.write_tx() as conn:
        jobs.lease(conn, "extract")
        conn.execute("UPDATE memory_jobs SET leased_at = '2000-01-01T00:00:00.000Z'")
        assert jobs.reap_stale(conn, lease_timeout_ms=10_000, job_type="summary") == 0
    assert status(db, job_id) == ("leased", 1)
    with db.write_tx() as conn:
        assert jobs.reap_stale(conn, lease_timeout_ms=10_000, job_type="extract") == 1
    assert status(db, job_id) == ("pending", 1)


def test_requeue_dead(db):
    job_id = enqueue(db, "m", max_attempts=1)
    with db.write_tx() as conn:
        jobs.fail(conn, jobs.lease(conn, "extract").id, "x", 0)
        assert jobs.requeue_dead(conn) == 1
    assert status(db, job_id) == ("pending", 0)


def test_backoff_grows_and_caps():
    rng = random.Random(1)
    delays = [backoff_delay(n, rng) for n in range(8)]
    assert 1.0 <= delays[0] <= 1.5 and 2.0 <= delays[1] <= 2.5
    assert all(30.0 <= d <= 30.5 for d in delays[5:])


def test_worker_loop_processes_defers_and_fails(db):
    done: list[str] = []
    up = threading.Event()

    def handler(job):
        if job.memory_id == "needs-llm" and not up.is_set():
            raise ProviderUnavailable("llm unavailable")
        if job.memory_id == "broken":
            raise ValueError("bad input")
        done.append(job.memory_id)
        return {"handled": job.memory_id}

    worker = JobWorker(db, "extract", handler, poll_s=0.05)
    ok, waiting = enqueue(db, "ok"), enqueue(db, "needs-llm")
    broken = enqueue(db, "broken", max_attempts=1)
    worker.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (status(db, ok)[0] != "completed"
                                               or status(db, broken)[0] != "dead"):
            time.sleep(0.05)
        assert status(db, ok)[0] == "completed", status(db, ok)
        assert status(db, broken) == ("dead", 1), (status(db, broken), worker.stats)
        assert status(db, waiting) == ("pending", 0)  # deferred: no attempt burned
        assert worker.stats.deferred >= 1 and worker.stats.dead == 1
        up.set()
        with db.write_tx() as conn:
            conn.execute("UPDATE memory_jobs SET run_after = NULL WHERE id = ?", (waiting,))
        worker.wake()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and status(db, waiting)[0] != "completed":
            time.sleep(0.05)
            worker.wake()
        assert status(db, waiting) == ("completed", 1)
    finally:
        worker.stop()
    assert done == ["ok", "needs-llm"] and not worker.stats.running
    result = db.reader().execute("SELECT result FROM memory_jobs WHERE id = ?", (ok,)).fetchone()
    assert result[0] == '{"handled": "ok"}'


def test_a_store_that_fails_does_not_end_the_worker_loop(db, monkeypatch):
    """A tick whose store fails (read-only, full, away) is retried after a backoff: the
    worker's thread lives on and takes the job once the store answers again."""
    job_id = enqueue(db, "m1")
    done = threading.Event()
    worker = JobWorker(db, "extract", lambda job: done.set() or {"ok": True}, poll_s=0.05)
    real_tick = worker.tick
    calls = {"n": 0}

    def flaky() -> float:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("attempt to write a readonly database")
        return real_tick()

    monkeypatch.setattr(worker, "tick", flaky)
    monkeypatch.setattr("mnemonist.pipeline.worker.backoff_delay", lambda failures: 0.05)
    worker.start()
    try:
        assert done.wait(30)
        assert worker.stats.last_error and "readonly" in worker.stats.last_error
    finally:
        worker.stop()
    assert status(db, job_id)[0] == "completed"
