"""On PostgreSQL, the vector leg from memory: each daemon keeps its own in-process copy of the
vectors (search/vector_index.py, as on SQLite), in step with every daemon's commits.

Why: pgvector answers from the database, a round trip away, with an exact scan of every
candidate row below 20,000 vectors (25–43 ms a recall at 10,000 on a two-core machine) and
an approximate HNSW walk above. The in-process index scans 10,000 vectors in about a
millisecond, exactly, and at 100,000 chooses candidates from int8 codes and scores them from
the stored vectors, as SQLite's does. `search.postgres_vectors` "database" keeps pgvector
(nothing held in memory, for a store too large to hold in every daemon).

How it stays in step: triggers (store/postgres/notify.py, `VECTOR_CHANNEL`) name the memories
whose vectors a commit may have changed: memories written, deleted, superseded, moved to
another project or purged, and those an embedding was stored for (their content or their
context text). The change listener hands the seqs here; this mirror's thread reads their
live vectors again (`store.embeddings.live_vectors_of`) and adds, replaces or removes them.
The daemon's own writes also reach the index right after their commit (as on SQLite), so a
memory is searchable at once, and every seq the daemon touches is read again afterwards too:
whatever order the commits, the explicit calls and the notifications arrive in, the last
thing that happens to a seq is a read that follows its last commit, so the copy converges.

Building: each time the listener (re)connects (`gap`: at start, and after a lost connection,
when notifications may have been missed) the thread reads every live vector into a new index
and swaps it in; the seqs notified while it read are read again after. Until the first build
is done, and whenever one fails, the database answers (pgvector).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable
from typing import Any

import numpy as np

from mnemonist.search.vector_index import VectorIndex
from mnemonist.store.loop_health import LoopHealth

log = logging.getLogger(__name__)

#: seq -> (project, vector) of those seqs that are live and have a vector now
ReadLive = Callable[[list[int]], dict[int, tuple[str | None, np.ndarray]]]
#: seqs read again at a time
APPLY_BATCH = 2_000


class MirroredVectorIndex:
    """The surface of `VectorIndex`, answered by the in-process copy once it is built and by
    `database` (a `PgVectorIndex`) before."""

    def __init__(self, database: Any, build: Callable[[], VectorIndex], read_live: ReadLive,
                 *, name: str, health: LoopHealth | None = None) -> None:
        """`build()` returns a new index holding every live vector (read from the store now);
        `read_live(seqs)` the live vectors of those seqs."""
        self.database = database
        self.dimensions: int = database.dimensions
        self._build = build
        self._read_live = read_live
        self.name = name
        self._health = health
        self.memory: VectorIndex | None = None
        self.state = "waiting"  # waiting (for the listener) | building | ready (built once)
        self.builds = 0
        self.built_in_s: float | None = None
        self.applied = 0  # seqs read again and applied
        self._dirty: set[int] = set()
        self._rebuild = False
        self._busy = False  # a build or a batch of seqs in hand
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what the listener and the service tell it ------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=f"pg-{self.name}",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def gap(self) -> None:
        """Notifications may have been missed (the listener's first connection, or one that
        replaced a lost one): build again from the store."""
        with self._cond:
            self._rebuild = True
            self._dirty.clear()  # the build reads them all, after this moment
            self._cond.notify_all()

    def changed(self, seqs: Iterable[int]) -> None:
        """Read these memories' vectors again (a commit may have changed them)."""
        with self._cond:
            self._dirty.update(int(s) for s in seqs)
            self._cond.notify_all()

    def wait_ready(self, timeout: float) -> bool:
        """Block until the copy is built and nothing notified is left to apply."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                if (self.memory is not None and not self._dirty and not self._rebuild
                        and not self._busy):
                    return True
            time.sleep(0.02)
        return False

    # -- the thread --------------------------------------------------------------------------
    def _run(self) -> None:
        wait = 0.0
        while not self._stop.wait(wait):
            wait = 0.0
            with self._cond:
                while not (self._rebuild or self._dirty) and not self._stop.is_set():
                    self._cond.wait(1.0)
                if self._stop.is_set():
                    return
                rebuild = self._rebuild
                self._rebuild = False
                seqs: list[int] = []
                if not rebuild:
                    seqs = sorted(self._dirty)[:APPLY_BATCH]
                    self._dirty.difference_update(seqs)
                self._busy = True
            try:
                if rebuild:
                    self._build_now()
                else:
                    self._apply(seqs)
            except Exception as exc:
                with self._cond:  # nothing is lost: the same work comes round again
                    if rebuild:
                        self._rebuild = True
                    else:
                        self._dirty.update(seqs)
                wait = self._health.failed(f"vector mirror ({self.name})", exc) \
                    if self._health is not None else 1.0
                if self._health is None:
                    log.exception("vector mirror (%s) failed; retrying", self.name)
            else:
                if self._health is not None:
                    self._health.succeeded(f"vector mirror ({self.name})")
            finally:
                with self._cond:
                    self._busy = False

    def _build_now(self) -> None:
        self.state = "building"
        started = time.perf_counter()
        fresh = self._build()
        with self._cond:
            self.memory = fresh
            self.builds += 1
            self.state = "ready"
        self.built_in_s = round(time.perf_counter() - started, 2)
        log.info("vector mirror (%s): %d vectors in %.1f s", self.name, len(fresh),
                 self.built_in_s)

    def _apply(self, seqs: list[int]) -> None:
        memory = self.memory
        if memory is None or not seqs:
            return
        live = self._read_live(seqs)
        for seq in seqs:
            found = live.get(seq)
            if found is None:
                memory.remove(seq)
            else:
                memory.add(seq, found[1], found[0])
        self.applied += len(seqs)

    # -- the daemon's own writes: applied now, read again after ----------------------------
    def add(self, seq: int, vector: np.ndarray, project: str | None = None) -> None:
        memory = self.memory
        if memory is not None:
            memory.add(seq, vector, project)
        self.changed([seq])

    def add_many(self, items: Iterable[tuple[int, str | None, np.ndarray]]) -> None:
        items = list(items)
        memory = self.memory
        if memory is not None:
            memory.add_many(items)
        self.changed(seq for seq, _, _ in items)

    def remove(self, seq: int) -> bool:
        memory = self.memory
        removed = memory.remove(seq) if memory is not None else False
        self.changed([seq])
        return removed

    def set_project(self, seq: int, project: str | None) -> None:
        memory = self.memory
        if memory is not None:
            memory.set_project(seq, project)
        self.changed([seq])

    def reserve(self, capacity: int) -> None:
        """Nothing: a build sizes its own index."""

    # -- reads ---------------------------------------------------------------------------
    def _answering(self) -> Any:
        memory = self.memory
        return memory if memory is not None else self.database

    @property
    def precision(self) -> str:
        memory = self.memory
        return memory.precision if memory is not None else self.database.precision

    @property
    def nbytes(self) -> int:
        memory = self.memory
        return memory.nbytes if memory is not None else 0

    def __len__(self) -> int:
        return len(self._answering())

    def __contains__(self, seq: int) -> bool:
        return seq in self._answering()

    def vector(self, seq: int) -> np.ndarray | None:
        return self._answering().vector(seq)

    def scores(self, query: np.ndarray, seqs: Iterable[int]) -> dict[int, float]:
        return self._answering().scores(query, seqs)

    def first_pass(self, query: np.ndarray, k: int, **filters: Any) -> list[tuple[int, float]]:
        memory = self.memory
        if memory is not None:
            return memory.first_pass(query, k, **filters)
        return self.database.search(query, k, **filters)

    def search_and_score(
        self, query: np.ndarray, k: int, also: Collection[int], *,
        first: list[tuple[int, float]] | None = None, **filters: Any
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        memory = self.memory
        if memory is not None:
            return memory.search_and_score(query, k, also, first=first, **filters)
        top = first if first is not None else self.database.search(query, k, **filters)
        return top, self.database.scores(query, also)

    def search(self, query: np.ndarray, k: int, **filters: Any) -> list[tuple[int, float]]:
        return self._answering().search(query, k, **filters)

    def status(self) -> dict[str, Any]:
        """For /api/status: where the vector leg answers from."""
        with self._cond:
            pending = len(self._dirty)
        return {"state": self.state, "builds": self.builds, "built_in_s": self.built_in_s,
                "pending": pending, "vectors": len(self.memory) if self.memory else None}
