"""The prose reading of bulk imports, in the background.

A remember links everything its text names inside its own transaction: names, noun phrases,
relations, aliases (`store/entity_links.py`). A bulk import links the names of each chunk in
its transaction and queues one `prose_link` job for the chunk: tagging a sentence costs about
as much as writing the memory, and an import of a million memories must not run at half its
speed for it. This worker reads each memory of the job (outside the write lock), then links
what it found in small transactions, so a remember waiting for the lock waits for one small
batch, not for a thousand memories; and it reads only while no request is in flight (the
request gate background embedding uses). A memory deleted or changed since the import is skipped
(a modify links its new text in full). The graph of an import is complete when the job is:
`/api/status` shows the worker, `memory_jobs` its backlog.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from mnemonist.model.config import Config
from mnemonist.pipeline.worker import JobWorker
from mnemonist.providers.embedding.request_gate import REQUESTS
from mnemonist.store import entity_links
from mnemonist.store.db import Database
from mnemonist.store.jobs import Job
from mnemonist.text.prose_graph import read

JOB_TYPE = entity_links.PROSE_JOB
#: memories read and linked per step: a remember arriving meanwhile waits for at most one
#: step (a few ms: reading 5 memories, one small transaction), never for a whole chunk
BATCH = 5


class ProseLinkHandler:
    def __init__(self, db: Database) -> None:
        self.db = db

    def handle(self, job: Job) -> dict[str, Any]:
        items = [(str(m), str(d)) for m, d in job.payload.get("memories", [])]
        result = {"memories": len(items), "linked": 0, "skipped": 0, "links": 0}
        for start in range(0, len(items), BATCH):
            # background work: it waits while any request is in flight (an import's next
            # chunk, a remember, a recall) and takes the CPU in the gaps, as embedding does
            REQUESTS.take_when_clear(lambda: False, lambda: None)
            batch = items[start:start + BATCH]
            texts = self._texts(batch)
            for text in texts.values():
                read(text[:entity_links.MAX_SCAN_CHARS])  # outside the lock (cached)
            with self.db.write_tx() as conn:
                for memory_id, digest in batch:
                    content = texts.get(memory_id)
                    if content is None or entity_links.content_digest(content) != digest:
                        result["skipped"] += 1
                        continue
                    result["links"] += entity_links.link_prose(conn, memory_id, content)
                    result["linked"] += 1
        return result

    def _texts(self, batch: list[tuple[str, str]]) -> dict[str, str]:
        """The live memories' texts (a deleted one is not read: its links went or stay as
        they are)."""
        return entity_links.live_contents(self.db.reader(), [m for m, _ in batch])


def not_running_reason(config: Config) -> str | None:
    graph = config.memory.pipeline_v2.graph
    if not (graph.enabled and graph.inline_linker):
        return "the inline linker is off (graph.enabled, graph.inlineLinker)"
    return None


class ProseLinkRuntime:
    """The prose_link worker, as the daemon starts and stops it."""

    def __init__(self, db: Database, config: Config) -> None:
        self.config = config
        self.handler = ProseLinkHandler(db)
        self.worker = JobWorker(db, JOB_TYPE, self.handler.handle, poll_s=1.0,
                                lease_timeout_ms=config.memory.pipeline_v2.worker
                                .lease_timeout_ms)

    def start(self) -> None:
        if not_running_reason(self.config) is None:
            self.worker.start()

    def stop(self) -> None:
        self.worker.stop()

    def wake(self) -> None:
        self.worker.wake()

    def status(self) -> dict[str, Any]:
        worker = asdict(self.worker.stats)
        if not worker["running"]:
            worker["waiting_reason"] = not_running_reason(self.config) or "worker not started"
        return {"worker": worker, "at": time.time()}
