"""The background embedder and embedding tracker in one worker thread.

`remember` commits the row first and then calls `notify(seq)`; this worker embeds in batches
outside any transaction, writes the vectors in one short transaction and adds them to the
vector index on commit. Independently, it sweeps for memories whose embedding is missing, was
made by another model (a model switch) or is stale, so a provider outage only delays vectors:
the memories stay keyword-searchable meanwhile and are embedded when the provider is back.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mnemonist.guards.background import lower_thread_priority
from mnemonist.model.memory import utcnow
from mnemonist.providers.embedding.base import (
    EmbeddingError,
    EmbeddingProvider,
    request_timeout,
)
from mnemonist.providers.embedding.local_onnx import release_freed_memory
from mnemonist.search.vector_index import VectorIndex
from mnemonist.store import embedding_work, embeddings
from mnemonist.store.db import Database, StorageFault

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 60.0
#: notifications held at most. A bulk import outruns embedding by far (a million memories
#: queued held about 36 MB of ints); past this the embedder stops queueing and, once the queue
#: is drained, walks the store in seq order from the first memory it did not queue
MAX_QUEUED = 10_000


@dataclass
class EmbedderStats:
    running: bool = False
    processed: int = 0
    context_processed: int = 0
    failed: int = 0
    skipped_cycles: int = 0
    last_cycle_at: str | None = None
    last_error: str | None = None
    provider_ok: bool = True
    queue_depth: int = 0
    extra: dict[str, int] = field(default_factory=dict)


def _lower_priority() -> None:
    """Embedding yields the CPU to request threads: on 2 cores, remember's p95 halved
    (7.7 → 4.0 ms) with the embedder niced; it catches up when requests are idle."""
    lower_thread_priority()


class BackgroundEmbedder:
    def __init__(
        self,
        db: Database,
        provider: EmbeddingProvider,
        get_index: Callable[[int], VectorIndex],
        *,
        batch_size: int = 32,
        sweep_interval_s: float = 5.0,
        sweep_batch: int = 64,
        get_context_index: Callable[[int], VectorIndex] | None = None,
    ) -> None:
        """With `get_context_index`, each memory's context text (store.context) gets a vector
        too, in a second index, once every memory itself is embedded."""
        self.db = db
        self.provider = provider
        self.get_index = get_index
        self.get_context_index = get_context_index
        self.batch_size = batch_size
        self.sweep_interval_s = sweep_interval_s
        self.sweep_batch = sweep_batch
        self.stats = EmbedderStats()
        self._queue: queue.Queue[int] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._backoff = 0.0
        self._busy = False
        #: the lowest seq a full queue turned away (None: nothing turned away)
        self._catch_up_from: int | None = None
        self._catch_up_lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self.stats.running = True
        self._thread = threading.Thread(target=self._run, name="mnemonist-embedder", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._queue.put(-1)
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None
        self.stats.running = False

    def notify(self, seq: int) -> None:
        if self._queue.qsize() >= MAX_QUEUED:
            with self._catch_up_lock:
                if self._catch_up_from is None or seq < self._catch_up_from:
                    self._catch_up_from = seq
            return
        self._queue.put(seq)

    def discard_queued(self) -> int:
        """Drop the queued notifications (for a caller that wrote those vectors itself, e.g.
        `bench scale --generated-vectors`); the sweep still finds anything left missing."""
        dropped = 0
        with self._catch_up_lock:
            self._catch_up_from = None
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return dropped
            dropped += 1

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until nothing is queued, in flight or missing (tests, benchmarks, `flush`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (self._queue.empty() and not self._busy and not self._any_missing()
                    and not (self.get_context_index and self._missing_context(1))):
                return True
            time.sleep(0.05)
        return False

    def _any_missing(self) -> bool:
        model = self.provider.model_id
        return embedding_work.any_unembedded(self.db.reader(), model)

    # -- the loop ----------------------------------------------------------------------
    def _run(self) -> None:
        """The loop; a round that raises (the database away, say) waits a growing backoff
        and the sweep then finds whatever it left unembedded: the thread never ends before
        `stop()`."""
        _lower_priority()
        next_sweep = 0.0
        more_context = False
        loops = self.db.loops
        while not self._stop.is_set():
            try:
                next_sweep, more_context = self._round(next_sweep, more_context)
            except Exception as exc:
                self.stats.last_error = f"{type(exc).__name__}: {exc}"
                next_sweep, more_context = 0.0, False
                self._stop.wait(loops.failed("embedder", exc))
            else:
                loops.succeeded("embedder")

    def _round(self, next_sweep: float, more_context: bool) -> tuple[float, bool]:
        """Embed one batch (of memories, else of context rows); the next sweep's time and
        whether context rows are waiting."""
        timeout = 0.05 if more_context else max(0.05, next_sweep - time.monotonic())
        batch = self._take(timeout)
        if self._stop.is_set():
            return next_sweep, more_context
        caught_up_from = None
        if not batch and self._catch_up_from is not None:
            caught_up_from, batch = self._catch_up(self.batch_size)
        if not batch and time.monotonic() >= next_sweep:
            batch = self._missing(self.sweep_batch)
            next_sweep = time.monotonic() + self.sweep_interval_s
        context_rows: list[tuple[int, str, str]] = []
        if not batch and self.get_context_index is not None:
            # context vectors only when memories are all embedded: they never delay those
            context_rows = self._missing_context(self.batch_size)
        more_context = bool(context_rows)
        if not batch and not context_rows:
            return next_sweep, more_context
        self._busy = True
        try:
            ok = self.process(batch) if batch else self.process_context(context_rows)
        except StorageFault:  # the store refused or is away: the loop's backoff (`_run`)
            raise
        except Exception as exc:  # a bug must not kill the thread: report and retry later
            log.exception("embedding batch failed")
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            ok = False
        finally:
            self._busy = False
        self.stats.queue_depth = self._queue.qsize()
        if ok and self.stats.queue_depth == 0:
            release_freed_memory()  # a burst is over: give its buffers back to the OS
        if not ok:
            if caught_up_from is not None:  # walk that stretch again after the backoff
                self._turned_away(caught_up_from)
            self._backoff = min(MAX_BACKOFF_S, max(1.0, self._backoff * 2))
            self._stop.wait(self._backoff)
            next_sweep = 0.0
        else:
            self._backoff = 0.0
        return next_sweep, more_context

    def _take(self, timeout: float) -> list[int]:
        try:
            first = self._queue.get(timeout=timeout)
        except queue.Empty:
            return []
        batch = [first] if first >= 0 else []
        while len(batch) < self.batch_size:
            try:
                seq = self._queue.get_nowait()
            except queue.Empty:
                break
            if seq >= 0:
                batch.append(seq)
        return batch

    def _turned_away(self, seq: int) -> None:
        with self._catch_up_lock:
            if self._catch_up_from is None or seq < self._catch_up_from:
                self._catch_up_from = seq

    def _catch_up(self, limit: int) -> tuple[int | None, list[int]]:
        """The next memories without a vector from the first one a full queue turned away,
        in seq order (the primary key: no scan from the start, whatever the store's size), and
        where that walk began. The walk ends at the first short page."""
        with self._catch_up_lock:
            start = self._catch_up_from
        if start is None:
            return None, []
        model = self.provider.model_id
        seqs = embedding_work.unembedded_from(self.db.reader(), model, start, limit)
        with self._catch_up_lock:
            if self._catch_up_from == start:  # else one turned away meanwhile, lower: keep it
                self._catch_up_from = seqs[-1] + 1 if len(seqs) == limit else None
        return start, seqs

    def _missing(self, limit: int) -> list[int]:
        model = self.provider.model_id
        return embedding_work.unembedded_newest_first(self.db.reader(), model, limit)

    def process(self, seqs: list[int]) -> bool:
        """Embed these memories (those still live). False when the provider failed."""
        model = self.provider.model_id
        conn = self.db.reader()
        rows = embedding_work.to_embed(conn, seqs)
        todo: dict[str, str] = {}
        for row in rows:
            if row["emodel"] != model:
                todo.setdefault(row["content_hash"], row["content"])
        vectors: dict[str, np.ndarray] = {}
        if todo:
            hashes = list(todo)
            try:
                matrix = self.provider.embed([todo[h] for h in hashes])
            except EmbeddingError as exc:
                self.stats.failed += len(hashes)
                self.stats.last_error = str(exc)
                self.stats.provider_ok = False
                self.stats.skipped_cycles += 1
                log.warning("embedding failed, will retry: %s", exc)
                return False
            vectors = dict(zip(hashes, matrix, strict=True))
        self.stats.provider_ok = True
        self.stats.last_error = None
        self._write([r["seq"] for r in rows], vectors, model)
        self.stats.processed += len(vectors)
        self.stats.last_cycle_at = utcnow()
        return True

    def embed_now(self, seqs: list[int], budget_s: float, chunk: int = 8) -> int:
        """Embed these memories from a request's own thread (recall: the few in its scope
        still waiting for their vector), `chunk` at a time while `budget_s` lasts; how many
        were handled. As in the background loop, the provider runs outside any transaction
        and each chunk's vectors are written in one short transaction, then indexed on
        commit. A memory the background thread embeds meanwhile is only written twice."""
        deadline = time.monotonic() + budget_s
        done = 0
        for start in range(0, len(seqs), chunk):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            part = seqs[start : start + chunk]
            with request_timeout(self.provider, left):
                if not self.process(part):
                    break
            done += len(part)
        return done

    def _write(self, seqs: list[int], vectors: dict[str, np.ndarray], model: str) -> None:
        with self.db.write_tx() as conn:
            for content_hash, vec in vectors.items():
                if embedding_work.hash_used(conn, content_hash):  # not purged
                    embeddings.upsert(conn, content_hash, model, vec)
            live = embedding_work.embedded_rows(conn, seqs, model)
            embedding_work.mark_embedded_many(conn, model, [r["seq"] for r in live])
            items = [  # a superseded memory keeps its vector but stays out of the index
                (r["seq"], r["project"], embeddings.from_blob(r["vector"], r["dimensions"]))
                for r in live if r["superseded_at"] is None
            ]
            if items:
                self.db.on_commit(lambda: self.get_index(len(items[0][2])).add_many(items))

    # -- context vectors -------------------------------------------------------------------
    def _missing_context(self, limit: int) -> list[tuple[int, str, str]]:
        """(seq, text, text_hash) of live memories whose context text has no vector yet."""
        return embedding_work.unembedded_context(self.db.reader(), self.provider.model_id,
                                                 limit)

    def process_context(self, rows: list[tuple[int, str, str]]) -> bool:
        model = self.provider.model_id
        todo = {h: text for _seq, text, h in rows}
        try:
            matrix = self.provider.embed(list(todo.values()))
        except EmbeddingError as exc:
            self.stats.failed += len(todo)
            self.stats.last_error = str(exc)
            self.stats.provider_ok = False
            return False
        vectors = dict(zip(todo, matrix, strict=True))
        get_context_index = self.get_context_index
        assert get_context_index is not None
        with self.db.write_tx() as conn:
            for h, vec in vectors.items():
                if embedding_work.context_text_used(conn, h):  # still someone's context
                    embeddings.upsert(conn, h, model, vec)
            # the text may have changed since it was read: use the current
            live = embedding_work.current_context_vectors(conn, [r[0] for r in rows], model)
            items = [(r["seq"], r["project"], embeddings.from_blob(r["vector"], r["dimensions"]))
                     for r in live]
            if items:
                self.db.on_commit(lambda: get_context_index(len(items[0][2])).add_many(items))
        self.stats.provider_ok = True
        self.stats.context_processed += len(vectors)
        return True
