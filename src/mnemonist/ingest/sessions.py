"""The session worker: `session_ingest` jobs read a session transcript's new lines into turn
memories (`Sessions.ingest_session`, service/session_turns.py). It needs no LLM and no
network, so it always runs; embedding the new turns follows in the background embedder like
any other write."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from mnemonist.model.config import Config
from mnemonist.pipeline.worker import JobWorker, WorkerStats
from mnemonist.store import session_turns
from mnemonist.store.db import Database
from mnemonist.store.jobs import Job
from mnemonist.store.session_turns import JOB_TYPE


class SessionIngester(Protocol):
    """What the worker needs of the service: its `sessions` part."""

    def ingest_session(self, payload: dict[str, Any]) -> Mapping[str, Any]: ...


class SessionWorker:
    def __init__(self, sessions: SessionIngester, db: Database, config: Config) -> None:
        self.sessions = sessions
        self.db = db
        pipeline = config.memory.pipeline_v2
        self.worker = JobWorker(db, JOB_TYPE, self.handle, poll_s=2.0,
                                lease_timeout_ms=pipeline.worker.lease_timeout_ms)

    @property
    def stats(self) -> WorkerStats:
        return self.worker.stats

    def handle(self, job: Job) -> dict[str, Any]:
        result = self.sessions.ingest_session(job.payload)
        if "body" in job.payload:  # the text is in the transcript now: don't keep two copies
            with self.db.write_tx() as conn:
                session_turns.drop_body(conn, job.id)
        return dict(result)

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        self.worker.stop()

    def wake(self) -> None:
        self.worker.wake()

    def tick(self) -> float:
        return self.worker.tick()
