"""The one door: every read and write of every face (HTTP, CLI, MCP, Python) goes through
`MemoryService`.

The service is a few collaborators composed here, each a class of one concern, sharing one
state (`core`: the database, configuration, embedding provider, indexes and searcher). A face
calls `service.<part>.<operation>`: `service.memories.remember(...)`,
`service.reads.recall(...)`. A part that needs another is given it here, by name, so that
this constructor is the whole map of who calls whom."""

from __future__ import annotations

import time

from mnemonist.model.config import Config
from mnemonist.providers.embedding.base import EmbeddingProvider
from mnemonist.service.base import ServiceCore
from mnemonist.service.documents import Documents
from mnemonist.service.errors import BadRequest, Conflict, NotFound, ServiceError, Unavailable
from mnemonist.service.files import Files
from mnemonist.service.graph_feedback import Feedback
from mnemonist.service.hooks import Hooks
from mnemonist.service.parts import Carry, Curation, Graph, Memories
from mnemonist.service.pipeline_ops import Pipeline
from mnemonist.service.reads import Reads
from mnemonist.service.session_turns import Sessions
from mnemonist.service.status import Health
from mnemonist.store.db import Database


class MemoryService:
    """remember / recall / modify / forget / recover and everything around them, by part:

    - `memories`: remember (and its write gate), modify, patch, delete, recover, forget
    - `reads`: recall, get, list, history, chain, neighbours, keyword search, embeddings
    - `files`: workspace memory files (roots, syncs; recall syncs them first)
    - `documents`: documents and their chunks
    - `sessions`: session transcripts as turns, checkpoints
    - `hooks`: the harness hooks (session start, prompt, compaction, session end)
    - `feedback`: ratings, what sessions used, the learned ranker
    - `graph`: entities, neighbourhoods, expansion, impact, relations, diagnostics
    - `pipeline`: the background pipeline's status and runtimes, the gates
    - `curation`: consolidation, the duplicate queue, principles
    - `carry`: export, backups, bundle import, bulk import
    - `health`: /api/health and /api/status
    """

    def __init__(self, db: Database, config: Config,
                 provider: EmbeddingProvider | None) -> None:
        self.core = core = ServiceCore(db, config, provider)
        self.memories = Memories(core)
        self.feedback = Feedback(core)
        self.files = Files(core)
        self.reads = Reads(core, self.feedback, self.files)
        self.documents = Documents(core, self.memories)
        self.sessions = Sessions(core, self.memories)
        self.hooks = Hooks(core, self.sessions, self.files, self.feedback)
        self.pipeline = Pipeline(core)
        self.curation = Curation(core, self.pipeline)
        self.graph = Graph(core, self.curation)
        self.carry = Carry(core, self.memories)
        self.health = Health(core, self.pipeline, self.sessions, self.files)

    def start(self) -> None:
        """The core's workers (embedder, sparse expander, mirrors), then the checkpoint
        queue."""
        self.core.start()
        self.sessions.start()

    def stop(self) -> None:
        self.sessions.stop()
        self.core.stop()

    def flush(self, timeout: float = 120.0) -> bool:
        """Wait for queued session reads, background embedding, pending access counts and the
        hints worker (tests, benchmarks); False when `timeout` passed first."""
        started = time.monotonic()

        def left() -> float:
            return max(0.0, timeout - (time.monotonic() - started))

        ok = self.sessions.wait_sessions(timeout)
        ok = self.core.flush(left()) and ok
        return self.pipeline.wait_hints(left()) and ok


__all__ = [
    "BadRequest",
    "Conflict",
    "MemoryService",
    "NotFound",
    "ServiceError",
    "Unavailable",
]
