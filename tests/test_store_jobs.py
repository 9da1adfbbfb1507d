"""The job queue under several workers on two daemons' connections to one store: every job is
leased exactly once (SQLite: one writer at a time; PostgreSQL: FOR UPDATE SKIP LOCKED)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemonist.store import jobs
from mnemonist.store.db import Database
from mnemonist.store.migrations import migrate


@pytest.fixture(params=["sqlite", "postgresql"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path
               ) -> Iterator[Callable[[], Any]]:
    """Opens one more connection set (one more "daemon") on the same store."""
    opened: list[Any] = []
    if request.param == "sqlite":
        def make() -> Any:
            db = Database(tmp_path / "memories.db")
            opened.append(db)
            return db
    else:
        from mnemonist.store.postgres.database import PostgresDatabase

        url = request.getfixturevalue("postgres_url")

        def make() -> Any:
            db = PostgresDatabase(url)
            opened.append(db)
            return db
    try:
        yield make
    finally:
        for db in opened:
            db.close()


def test_every_job_is_leased_exactly_once_across_two_daemons(open_store) -> None:
    first, second = open_store(), open_store()
    migrate(first)
    migrate(second)  # the second daemon finds the schema done
    with first.write_tx() as conn:
        made = {jobs.enqueue(conn, "embed", memory_id=f"m{i}", check_existing=False)
                for i in range(120)}
    taken: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(db: Any) -> None:
        try:
            while True:
                with db.write_tx() as conn:
                    job = jobs.lease(conn, "embed")
                if job is None:
                    return
                with lock:
                    taken.append(job.id)
                with db.write_tx() as conn:
                    jobs.complete(conn, job.id, {"ok": True})
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(db,))
               for db in (first, second, first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert len(taken) == len(set(taken)) == 120
    assert set(taken) == made
    rows = first.reader().execute(
        "SELECT status, attempts, COUNT(*) FROM memory_jobs GROUP BY status, attempts").fetchall()
    assert [tuple(r) for r in rows] == [("completed", 1, 120)]


def test_a_leased_job_is_not_leased_again_by_the_other_daemon(open_store) -> None:
    first, second = open_store(), open_store()
    migrate(first)
    with first.write_tx() as conn:
        jobs.enqueue(conn, "embed", memory_id="only")
    with first.write_tx() as conn:
        job = jobs.lease(conn, "embed")
    assert job is not None and job.attempts == 1
    with second.write_tx() as conn:
        assert jobs.lease(conn, "embed") is None


def test_two_daemons_enqueueing_one_target_at_once_queue_one_job(open_store) -> None:
    dbs = [open_store(), open_store()]
    migrate(dbs[0])
    made: list[str | None] = []
    barrier = threading.Barrier(8)

    def enqueue(db: Any) -> None:
        barrier.wait()
        for _ in range(5):
            with db.write_tx() as conn:
                made.append(jobs.enqueue(conn, "extract", memory_id="shared"))

    threads = [threading.Thread(target=enqueue, args=(dbs[n % 2],)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert len(made) == 40 and len([m for m in made if m is not None]) == 1
    count = dbs[1].reader().execute(
        "SELECT COUNT(*) FROM memory_jobs WHERE memory_id = 'shared'").fetchone()[0]
    assert count == 1
