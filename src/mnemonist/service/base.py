"""State shared by the service's parts: the database, configuration, providers and indexes."""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from mnemonist.model.config import Config
from mnemonist.model.requests import Caller
from mnemonist.pipeline.access import AccessRecorder
from mnemonist.pipeline.embedder import BackgroundEmbedder
from mnemonist.pipeline.sparse_worker import SparseExpander
from mnemonist.pipeline.sparse_worker import build as build_sparse
from mnemonist.providers.embedding.base import EmbeddingError, EmbeddingProvider
from mnemonist.search.filters import visible_ids
from mnemonist.search.hybrid import HybridSearch
from mnemonist.search.keyword_mirror_keeper import KeywordMirrorKeeper
from mnemonist.search.pg_vector_mirror import MirroredVectorIndex
from mnemonist.search.relevance import shipped_relevance_model
from mnemonist.search.vector_index import AUTO_INT8_FROM, ExactVectors, VectorIndex
from mnemonist.service.errors import Conflict, NotFound, NotOnPostgres
from mnemonist.service.home_ranker import HomeRanker
from mnemonist.service.query_embedding import QueryEmbedder
from mnemonist.store import embedding_work, embeddings, hints, memories
from mnemonist.store.backend import is_postgres
from mnemonist.store.context import is_line
from mnemonist.store.db import Database

if TYPE_CHECKING:
    from mnemonist.store.postgres.notify import ChangeListener

log = logging.getLogger(__name__)

#: the shortest id prefix that names a memory (`recall` and `list` print 8 characters)
MIN_ID_PREFIX = 4
#: an id prefix: hex digits and the dashes of a UUID
_PREFIX = re.compile(r"[0-9a-fA-F-]+")
#: ambiguous ids named in the 409's message
AMBIGUOUS_SHOWN = 5


class ServiceCore:
    """The state every part of the service shares, and what they all need of it: ids,
    vectors and the background workers that keep the indexes (started and stopped with the
    service)."""

    _hints_wake: Callable[[], None] | None = None
    #: the PostgreSQL change listener (None on SQLite, and before start)
    changes: ChangeListener | None = None
    _following = False  # the change listener runs: in-memory vector copies may be built

    def __init__(
        self,
        db: Database,
        config: Config,
        provider: EmbeddingProvider | None,
    ) -> None:
        self.db = db
        self.config = config
        self.provider = provider
        self.started_at = time.time()
        self.index: VectorIndex | None = None
        self.context_index: VectorIndex | None = None  # vectors of context texts
        self._index_lock = threading.Lock()
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_lock = threading.Lock()
        #: recall's query vectors: bounded, and skipped while the provider is known down
        self.query_embedder = QueryEmbedder(provider, config.embedding) if provider else None
        self.access = AccessRecorder(db, config.memory.access_flush_ms / 1000.0)
        self.embedder: BackgroundEmbedder | None = None
        if provider is not None:
            self.embedder = BackgroundEmbedder(
                db,
                provider,
                self.get_index,
                batch_size=config.embedding.batch_size,
                sweep_interval_s=config.memory.pipeline_v2.embedding_tracker.poll_ms / 1000.0,
                get_context_index=self.get_context_index if self.context_vectors() else None,
            )
            self._load_index()
        self.searcher = HybridSearch(
            self.index, self.embed_query, config.search, config.memory
        )
        self.searcher.context_index = self.context_index
        self.sparse: SparseExpander | None = None
        if config.sparse.enabled:  # learned sparse leg (docs/sparse.md)
            self.searcher.sparse, self.sparse = build_sparse(db, config.sparse)
        self.searcher.turn_weight = lambda: self.config.sessions.recall_weight
        self.searcher.predictor = lambda: self.config.predictor
        #: the ranker in use: the shipped one, or with this home's trees (search/adaptation.py)
        self.ranker = HomeRanker(db, lambda: self.config.predictor, shipped_relevance_model)
        self.searcher.relevance_model = self.ranker.model
        self.searcher.feedback_paths = self.ranker.paths

    # -- memory ids -----------------------------------------------------------------------
    def resolve_id(self, ref: str, conn: sqlite3.Connection | None = None,
                   caller: Caller | None = None) -> str:
        """The id of the memory (live or deleted) that `ref` names: an exact id, else a unique
        prefix of at least MIN_ID_PREFIX hex characters. An ambiguous prefix is a 409
        `ambiguous_id`; a ref that names nothing comes back unchanged (the caller's 404).

        Every read or change by id passes here: a memory `caller` may not see (another
        agent's or user's private one) is a 404 `not_found`, exactly as a missing one."""
        conn = conn or self.db.reader()
        if memories.get(conn, ref) is not None:
            if not visible_ids(conn, [ref], caller):
                raise NotFound(f"no memory {ref}")
            return ref
        if len(ref) < MIN_ID_PREFIX or not _PREFIX.fullmatch(ref):
            return ref
        found, count = memories.ids_with_prefix(conn, ref.lower(), AMBIGUOUS_SHOWN)
        if count and (count > len(found) or visible_ids(conn, found, caller) != set(found)):
            found, count = self._visible_with_prefix(conn, ref.lower(), caller)
        if count == 1:
            return found[0]
        if count > 1:
            shown = ", ".join(found) + (", ..." if count > len(found) else "")
            raise Conflict(f"prefix {ref} matches {count} memories: {shown}; give more of the"
                           " id", code="ambiguous_id", prefix=ref, matches=found)
        return ref

    @staticmethod
    def _visible_with_prefix(conn: sqlite3.Connection, prefix: str,
                             caller: Caller | None) -> tuple[list[str], int]:
        """ids_with_prefix among the memories `caller` may see (the rare slow case)."""
        ids, _ = memories.ids_with_prefix(conn, prefix, limit=10_000)
        seen = visible_ids(conn, ids, caller)
        mine = [i for i in ids if i in seen]
        return mine[:AMBIGUOUS_SHOWN], len(mine)

    def resolve_ids(self, refs: list[str], conn: sqlite3.Connection | None = None,
                    caller: Caller | None = None, *, missing_ok: bool = False) -> list[str]:
        """`missing_ok`: a memory the caller may not see comes back unchanged, as a ref
        naming nothing does (a selection that simply does not find it)."""
        conn = conn or self.db.reader()
        out = []
        for ref in refs:
            try:
                out.append(self.resolve_id(ref, conn, caller))
            except NotFound:
                if not missing_ok:
                    raise
                out.append(ref)
        return out

    # -- hints jobs ----------------------------------------------------------------------
    def set_hints_waker(self, wake: Callable[[], None] | None) -> None:
        """Called after a commit that enqueued hints jobs, so the worker polls at once."""
        self._hints_wake = wake

    def enqueue_hints(self, conn: sqlite3.Connection, memory_id: str, why: str | None, *,
                      fresh: bool = False) -> str | None:
        """A prospective_index job for a memory people may ask about (not one the pipeline
        derived), in the caller's transaction; nothing when hints are off."""
        pipeline = self.config.memory.pipeline_v2
        if not pipeline.hints.enabled or not is_line(why):
            return None
        job = hints.enqueue(conn, memory_id, max_attempts=pipeline.worker.max_retries,
                            fresh=fresh)
        if job is not None and self._hints_wake is not None:
            self.db.on_commit(self._hints_wake)
        return job

    def require_sqlite(self, what: str, instead: str = "") -> None:
        """Refuse, before anything starts, what only the SQLite store does (a 501)."""
        if is_postgres(self.db):
            raise NotOnPostgres(f"{what} is not available on the PostgreSQL store"
                                + (f"; {instead}" if instead else " yet"))

    # -- vectors -------------------------------------------------------------------------
    def _new_index(self, dimensions: int, kind: str) -> VectorIndex:
        """In-process on SQLite; on PostgreSQL the database is the index (pgvector), so that
        every daemon sees every other's vectors."""
        if is_postgres(self.db):
            return self._new_pg_index(dimensions, kind)  # type: ignore[return-value]
        return self._fresh_index(dimensions, kind)

    def _fresh_index(self, dimensions: int, kind: str) -> VectorIndex:
        return VectorIndex(dimensions, exact=self._exact_source(dimensions,
                                                                 context=kind == "context"),
                           int8_from=self._int8_from())

    def _new_pg_index(self, dimensions: int, kind: str) -> object:
        """pgvector, or (`search.postgres_vectors` "memory") an in-memory copy that the
        database answers for until a started daemon has built it (search/pg_vector_mirror.py)."""
        from mnemonist.store.postgres.vectors import PgVectorIndex

        assert self.provider is not None
        model = self.provider.model_id
        database = PgVectorIndex(self.db, dimensions, model, kind)
        if self.config.search.postgres_vectors == "database":
            return database
        context = kind == "context"
        db = self.db

        def build() -> VectorIndex:
            index = self._fresh_index(dimensions, kind)
            conn = db.reader()
            if context:
                index.add_many(embeddings.context_vectors(conn, model, dimensions))
            else:
                index.reserve(embeddings.count_live(conn, model))
                index.add_many(embeddings.live_vectors(conn, model, dimensions))
            return index

        def read_live(seqs: list[int]) -> dict[int, tuple[str | None, np.ndarray]]:
            return embeddings.live_vectors_of(db.reader(), seqs, model, dimensions,
                                              context=context)

        mirror = MirroredVectorIndex(database, build, read_live, name=f"{kind} vectors",
                                     health=self.db.loops)
        if self._following:  # made after the listener connected: build it now
            mirror.start()
            mirror.gap()
        return mirror

    def _mirrors(self) -> list[MirroredVectorIndex]:
        # on PostgreSQL a MirroredVectorIndex stands in for a VectorIndex (the same surface)
        indexes: tuple[object, ...] = (self.index, self.context_index)
        return [i for i in indexes if isinstance(i, MirroredVectorIndex)]

    def get_index(self, dimensions: int) -> VectorIndex:
        with self._index_lock:
            if self.index is None:
                self.index = self._new_index(dimensions, "content")
                if hasattr(self, "searcher"):
                    self.searcher.index = self.index
            elif self.index.dimensions != dimensions:
                raise EmbeddingError(
                    f"embedding has {dimensions} dimensions but the index holds "
                    f"{self.index.dimensions}; set embedding.dimensions or change the model"
                )
            return self.index

    def _int8_from(self) -> int:
        """How many vectors the index holds before it turns to int8 codes: with few, the
        float32 scan is cheaper than reading the candidates' exact vectors back."""
        return AUTO_INT8_FROM if self.config.search.vector_precision == "auto" else 0

    def _exact_source(self, dimensions: int, *, context: bool = False) -> ExactVectors | None:
        """Where an int8 index reads the exact vectors of its candidates (this thread's
        reader connection); None for a float32 index, which holds them itself."""
        if self.config.search.vector_precision == "float32" or self.provider is None:
            return None
        model = self.provider.model_id
        db = self.db

        def exact(seqs: list[int]) -> dict[int, np.ndarray]:
            return embeddings.vectors_by_seq(db.reader(), seqs, model, dimensions,
                                             context=context)

        return exact

    def context_vectors(self) -> bool:
        search = self.config.search
        return search.context_window > 0 and search.context_vector_weight > 0

    def get_context_index(self, dimensions: int) -> VectorIndex:
        with self._index_lock:
            if self.context_index is None:
                self.context_index = self._new_index(dimensions, "context")
                if hasattr(self, "searcher"):
                    self.searcher.context_index = self.context_index
            return self.context_index

    def unindex(self, seq: int) -> None:
        """Drop a memory from the in-memory indexes (call from db.on_commit)."""
        for index in (self.index, self.context_index):
            if index is not None:
                index.remove(seq)
        if self.sparse is not None:
            for sparse_index in self.sparse.indexes.values():
                sparse_index.remove(seq)

    def reproject(self, seq: int, project: str | None) -> None:
        for index in (self.index, self.context_index):
            if index is not None:
                index.set_project(seq, project)
        if self.sparse is not None:
            for sparse_index in self.sparse.indexes.values():
                sparse_index.set_project(seq, project)

    def _load_index(self) -> None:
        """Rebuild the in-memory index from the vectors of the configured model."""
        assert self.provider is not None
        model = self.provider.model_id
        dims = self.provider.dimensions
        conn = self.db.reader()
        if dims is None:
            dims = embedding_work.dimensions_of(conn, model)
        if dims is None:
            return  # created on the first embedding
        index = self.get_index(dims)
        if is_postgres(self.db):  # pgvector: the database is the index, nothing to load
            if self.context_vectors():
                self.get_context_index(dims)
            return
        index.reserve(len(index) + embeddings.count_live(conn, model))
        index.add_many(embeddings.live_vectors(conn, model, dims))
        log.info("vector index: %d vectors of %s (%d dims)", len(index), model, dims)
        if self.context_vectors():
            self.get_context_index(dims).add_many(embeddings.context_vectors(conn, model, dims))

    def embed_query(self, text: str) -> np.ndarray | None:
        if self.provider is None:
            return None
        key = " ".join(text.split())
        with self._query_cache_lock:
            hit = self._query_cache.get(key)
            if hit is not None:
                self._query_cache.move_to_end(key)
                return hit
        assert self.query_embedder is not None
        vec = self.query_embedder.embed(key)  # None: failed, or the provider is known down
        if vec is None:
            return None
        if self.index is not None and vec.shape[0] != self.index.dimensions:
            return None
        with self._query_cache_lock:
            self._query_cache[key] = vec
            if len(self._query_cache) > 512:
                self._query_cache.popitem(last=False)
        return vec

    def try_embed(self, text: str) -> np.ndarray | None:
        """Embed a memory's content now (outside any transaction); None on failure, and at
        once while the provider is known down (a request waits no longer than a recall's
        query): the background embedder embeds it later."""
        if self.query_embedder is None:
            return None
        return self.query_embedder.embed(text, what="a memory")

    # -- lifecycle -----------------------------------------------------------------------
    def _follow_other_daemons(self) -> None:
        """On PostgreSQL: apply what other daemons change to what this one keeps in memory
        (the known authors), as their transactions commit (store/postgres/notify.py)."""
        from mnemonist.store.postgres.notify import ChangeListener

        authors = self.searcher.authors
        searcher = self.searcher

        def on_change(change: dict[str, Any]) -> None:
            if change.get("kind") == "who" and isinstance(change.get("who"), str):
                authors.add(change["who"])

        def on_context(seqs: list[int], pid: int) -> None:
            keeper = searcher.keyword_mirror
            if keeper is not None and pid != self.db.writer_pid:  # type: ignore[attr-defined]
                keeper.changed_elsewhere(seqs)  # this daemon's own came with its commits
            if isinstance(self.context_index, MirroredVectorIndex):
                self.context_index.changed(seqs)  # a changed text: its vector changes

        def on_vectors(seqs: list[int]) -> None:
            for mirror in self._mirrors():
                mirror.changed(seqs)

        def on_gap() -> None:
            authors.reload(self.db.reader())
            if searcher.keyword_mirror is not None:
                searcher.keyword_mirror.gap()
            for mirror in self._mirrors():
                mirror.start()
                mirror.gap()

        self._following = True
        self.changes = ChangeListener(self.db.url, on_change,  # type: ignore[attr-defined]
                                      on_gap, on_context, on_vectors).start()

    def start(self) -> None:
        mode = self.config.search.keyword_mirror
        if mode != "off" and self.searcher.keyword_mirror is None:
            self.searcher.keyword_mirror = KeywordMirrorKeeper(self.db, mode)
            self.searcher.keyword_mirror.start()
        if is_postgres(self.db) and self.changes is None:
            self._follow_other_daemons()
        self.access.start()
        if self.embedder is not None:
            self.embedder.start()
        if self.sparse is not None:
            self.sparse.start()

    def stop(self) -> None:
        if self.changes is not None:
            self.changes.stop()
            self.changes = None
        self._following = False
        for mirror in self._mirrors():
            mirror.stop()
        if self.sparse is not None:
            self.sparse.stop()
        if self.embedder is not None:
            self.embedder.stop()
        if self.searcher.keyword_mirror is not None:
            self.searcher.keyword_mirror.stop()
            self.searcher.keyword_mirror = None
        self.access.stop()

    def flush(self, timeout: float = 120.0) -> bool:
        """Wait for background embedding and write pending access counts (tests, bench)."""
        ok = self.embedder.wait_idle(timeout) if self.embedder is not None else True
        if self.sparse is not None:
            ok = self.sparse.wait_idle(timeout) and ok
        if self.searcher.keyword_mirror is not None:
            ok = self.searcher.keyword_mirror.wait_ready(timeout) and ok
        if self._following:
            for mirror in self._mirrors():
                ok = mirror.wait_ready(timeout) and ok
        self.access.flush()
        return ok
