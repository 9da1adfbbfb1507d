"""The background SPLADE expander: one thread, like the embedder, never inside the write lock.

Each cycle it (1) drops the expansions of deleted, superseded and purged memories, and takes
out of the index at once any memory whose text changed since it was expanded (so recall never
scores a memory by words it no longer holds); (2) encodes a batch of memories whose expansion
is missing or stale (`store/sparse.py`: model or text hash differ), the memory texts first,
then the context texts; (3) writes them in one short transaction, each row only if its text is
still current, and adds them to the in-memory index after the commit. Encoding happens
outside any transaction; a write meanwhile simply makes the batch's row stale again.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from mnemonist.guards.background import lower_thread_priority
from mnemonist.model.config import SparseConfig
from mnemonist.model.memory import utcnow
from mnemonist.providers.sparse.cache import CachedEncoder
from mnemonist.providers.sparse.model_files import default_dir, verify
from mnemonist.providers.sparse.splade import SpladeEncoder
from mnemonist.search.sparse_index import Doc, SparseIndex
from mnemonist.search.sparse_leg import Encoder, SparseLeg
from mnemonist.store import sparse
from mnemonist.store.db import Database

log = logging.getLogger(__name__)


@dataclass
class SparseStats:
    running: bool = False
    processed: int = 0
    removed: int = 0
    failed: int = 0
    last_cycle_at: str | None = None
    last_error: str | None = None


class SparseExpander:
    def __init__(self, db: Database, encoder: Encoder, indexes: dict[str, SparseIndex], *,
                 batch_size: int = 16, interval_s: float = 0.5) -> None:
        self.db = db
        self.encoder = encoder
        self.indexes = indexes  # the fields to expand, each with its index
        self.batch_size = batch_size
        self.interval_s = interval_s
        self.stats = SparseStats()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._busy = False
        self.leg: SparseLeg | None = None  # its session vectors are refreshed here

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self.stats.running = True
        self._thread = threading.Thread(target=self._run, name="mnemonist-sparse", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None
        self.stats.running = False

    def notify(self) -> None:
        self._wake.set()

    def pending(self) -> int:
        """Memories (per field) still waiting for an expansion, up to one batch per field."""
        conn = self.db.reader()
        model = self.encoder.model_id
        return sum(len(sparse.missing(conn, f, model, self.batch_size)) for f in self.indexes)

    def wait_idle(self, timeout: float = 600.0) -> bool:
        """Until nothing is missing or in flight (tests, benchmarks, `flush`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._busy and self.pending() == 0 and not self._orphans() and (
                    self.leg is None or self.leg.sessions is None or not self.leg.sessions.waiting):
                return True
            self._wake.set()
            time.sleep(0.05)
        return False

    def _orphans(self) -> bool:
        return bool(sparse.orphans(self.db.reader(), 1))

    def _run(self) -> None:
        lower_thread_priority()  # yield the CPU to requests (guards/background.py)
        while not self._stop.is_set():
            self._busy = True
            try:
                more = self.cycle()
            except Exception as exc:  # a bug must not kill the thread: report, retry later
                log.exception("sparse expansion failed")
                self.stats.failed += 1
                self.stats.last_error = f"{type(exc).__name__}: {exc}"
                more = False
                self._stop.wait(5.0)
            finally:
                self._busy = False
            if not more:
                self._wake.wait(self.interval_s)
                self._wake.clear()

    def cycle(self) -> bool:
        """One round of clean-up and one batch; True when more work is waiting."""
        self._clean()
        conn = self.db.reader()
        model = self.encoder.model_id
        sessions_left = False
        if self.leg is not None and self.leg.sessions is not None:
            # sessions whose turns changed, recomputed here, off the recall path
            sessions_left = self.leg.sessions.refresh(conn)
        for field, index in self.indexes.items():
            rows = sparse.missing(conn, field, model, self.batch_size)
            if rows:
                self._expand(field, index, rows)
                self.stats.last_cycle_at = utcnow()
                self.stats.last_error = None
                return True
        return sessions_left

    def _clean(self) -> None:
        conn = self.db.reader()
        model = self.encoder.model_id
        for field, index in self.indexes.items():
            for seq in sparse.stale(conn, field, model):
                index.remove(seq)  # its words changed: out of recall until re-expanded
        gone = sparse.orphans(conn)
        if not gone:
            return
        with self.db.write_tx() as wconn:
            sparse.delete(wconn, gone)
            indexes = self.indexes

            def unindex() -> None:
                for seq, field in gone:
                    if field in indexes:
                        indexes[field].remove(seq)
            self.db.on_commit(unindex)
        self.stats.removed += len(gone)

    def _expand(self, field: str, index: SparseIndex, rows: list[tuple[int, str, str]]) -> None:
        vectors = self.encoder.encode([text for _, text, _ in rows])
        model = self.encoder.model_id
        added: list[Doc] = []
        with self.db.write_tx() as conn:
            for (seq, _, text_hash), vec in zip(rows, vectors, strict=True):
                ok, project = sparse.write(conn, field, model, seq, text_hash, vec.terms,
                                           vec.weights)
                if ok:
                    added.append((seq, project, vec.terms, vec.weights))
            if added:
                self.db.on_commit(lambda: index.add_many(added))
        self.stats.processed += len(added)


def load_indexes(db: Database, model: str, fields: tuple[str, ...],
                 vocab_size: int) -> dict[str, SparseIndex]:
    """The in-memory indexes, rebuilt from the current rows of `sparse_terms`."""
    conn = db.reader()
    out: dict[str, SparseIndex] = {}
    for field in fields:
        index = SparseIndex(vocab_size)
        index.add_many(sparse.current(conn, field, model))  # compacts when large enough
        out[field] = index
    return out


def build(db: Database, cfg: SparseConfig) -> tuple[SparseLeg, SparseExpander]:
    """The recall leg and its background expander for `sparse.*` (model files verified now:
    a missing or altered model is an error at start, not a silent absence)."""
    folder = Path(cfg.model_dir).expanduser() if cfg.model_dir else default_dir()
    verify(folder)
    splade = SpladeEncoder(folder, max_tokens=cfg.max_tokens)
    encoder: Encoder = splade
    if cfg.cache_dir:
        encoder = CachedEncoder(splade, Path(cfg.cache_dir).expanduser())
    fields = ("content", "context") if cfg.fields == "both" else (cfg.fields,)
    indexes = load_indexes(db, splade.model_id, fields, splade.vocab_size)
    expander = SparseExpander(db, encoder, indexes, batch_size=cfg.batch_size)
    leg = SparseLeg(encoder, indexes)
    expander.leg = leg
    return leg, expander
