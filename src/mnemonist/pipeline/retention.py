"""The retention worker: the ordered purge of what is past its keeping window, after the
expiry of unused events (an event is a record of its day: nobody used it for the TTL, it goes
to the archive; store.expiry).

Order matters, later steps depend on earlier ones: unused events expire into the archive (they
are never purged: store.expiry), then graph links, embeddings, then the tombstones themselves
with their hints (past the tombstone window), the learned-sparse expansions of purged memories,
then old history, completed jobs and dead jobs. Each step is its own short write transaction
capped at `batchLimit` rows; what is left over waits for the next sweep.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from mnemonist.model.config import RetentionConfig
from mnemonist.model.memory import format_ts, utcnow
from mnemonist.store import entity_links, expiry, hints, purge
from mnemonist.store import retention as store
from mnemonist.store.db import Database

log = logging.getLogger(__name__)


def _cutoff(days: int, now: datetime) -> str:
    return format_ts(now - timedelta(days=days))


@dataclass
class SweepReport:
    expired_events: int = 0
    graph_links: int = 0
    orphan_entities: int = 0
    embeddings: int = 0
    orphan_vectors: int = 0
    tombstones: int = 0
    hints: int = 0
    orphan_sparse_terms: int = 0
    history: int = 0
    completed_jobs: int = 0
    dead_jobs: int = 0
    training_pairs: int = 0
    at: str = field(default_factory=utcnow)


class RetentionWorker:
    def __init__(self, db: Database, config: RetentionConfig,
                 unindex: Callable[[int], None] | None = None) -> None:
        """`unindex(seq)` drops a memory from the daemon's in-memory indexes (the service's);
        without it an expired event leaves them at the next `reembed` repair."""
        self.db = db
        self.cfg = config
        self.unindex = unindex
        self.last: SweepReport | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _expired_tombstones(self, conn, cutoff: str) -> list[tuple[int, str, str]]:
        return store.expired_tombstones(conn, cutoff, self.cfg.batch_limit)

    def sweep(self, now: datetime | None = None) -> SweepReport:
        now = now or datetime.now(UTC)
        cfg = self.cfg
        report = SweepReport()
        tomb_cut = _cutoff(cfg.tombstone_days, now)

        # 0. unused events expire into the archive: read without the write lock, each checked
        #    again and retired in one short write transaction
        if cfg.event_ttl_days > 0:
            report.expired_events = self._expire_events(_cutoff(cfg.event_ttl_days, now))

        # 1. graph links of expired tombstones; entities left with no mention go too (not
        #    one a person or agent stated a relation of: it stands without memories)
        with self.db.write_tx() as conn:
            if store.has_table(conn, "memory_entity_mentions"):
                for _seq, memory_id, _hash in self._expired_tombstones(conn, tomb_cut):
                    report.graph_links += entity_links.unlink_all(conn, memory_id)
                orphans = store.orphan_entities(conn, cfg.batch_limit)
                for ent in orphans:
                    if store.has_table(conn, "relations"):
                        store.delete_relations_of(conn, ent)
                    store.delete_entity(conn, ent)
                report.orphan_entities = len(orphans)

        # 2. embeddings only those tombstones used (a live memory may share the content hash)
        with self.db.write_tx() as conn:
            for _seq, _id, content_hash in self._expired_tombstones(conn, tomb_cut):
                # live rows, then the others (each probe by its own index: hash_in_use)
                report.embeddings += store.delete_tombstone_embeddings(conn, content_hash,
                                                                       tomb_cut)

        # 2b. vectors nothing points to any more (context texts that changed or went away)
        with self.db.write_tx() as conn:
            report.orphan_vectors = store.delete_orphan_vectors(conn, cfg.batch_limit)

        # 3. the tombstones and their hints, purged: their text leaves history, archive, the
        # indexes and (compacted, checkpointed) the file, as a purge by hand does (store.purge)
        with self.db.write_tx() as conn:
            expired = self._expired_tombstones(conn, tomb_cut)
            report.hints = hints.delete_for(conn, [t[1] for t in expired])
            stamp = utcnow()
            for _seq, memory_id, _hash in expired:
                # none left after step 1, normally; a link written since goes with the memory
                report.graph_links += entity_links.unlink_all(conn, memory_id)
                purge.purge_memory(
                    conn, memory_id, by="retention", at=stamp,
                    reason=f"tombstone older than {cfg.tombstone_days} days",
                )
            report.tombstones = len(expired)
            if expired:
                purge.compact(conn)
        if report.tombstones:
            self.db.checkpoint(2000)

        # 3b. learned-sparse expansions of memories no longer there: the sparse worker drops
        #     them while the sparse leg is on; switched off, nothing else would
        with self.db.write_tx() as conn:
            if store.has_table(conn, "sparse_terms"):
                report.orphan_sparse_terms = store.delete_orphan_sparse_terms(
                    conn, cfg.batch_limit)

        steps: tuple[tuple[str, Callable[[sqlite3.Connection, str, int], int], int], ...] = (
            ("history", store.delete_history_before, cfg.history_days),
            ("completed_jobs", store.delete_completed_jobs_before, cfg.completed_job_days),
            ("dead_jobs", store.delete_dead_jobs_before, cfg.dead_job_days),
        )
        with self.db.write_tx() as conn:
            if store.has_table(conn, "predictor_pairs"):
                steps += (("training_pairs", store.delete_training_pairs_before,
                           cfg.training_pair_days),)
        for name, delete, days in steps:  # 4, 5, 6, 7
            with self.db.write_tx() as conn:
                count = delete(conn, _cutoff(days, now), cfg.batch_limit)
            setattr(report, name, count)
        self.last = report
        return report

    def _expire_events(self, cutoff: str) -> int:
        cfg = self.cfg
        ids = expiry.candidates(self.db.reader(), cutoff, cfg.event_ttl_max_importance,
                                cfg.batch_limit)
        if not ids:
            return 0
        with self.db.write_tx() as conn:
            seqs = expiry.expire(conn, ids, cutoff=cutoff,
                                 max_importance=cfg.event_ttl_max_importance,
                                 days=cfg.event_ttl_days, at=utcnow())
            unindex = self.unindex
            if seqs and unindex is not None:

                def drop() -> None:
                    for seq in seqs:
                        unindex(seq)
                self.db.on_commit(drop)
        return len(seqs)

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run, name="mnemonist-retention", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        self.db.loops.run_every("retention", lambda: self.cfg.interval_ms / 1000.0, self.sweep,
                                self._stop)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
