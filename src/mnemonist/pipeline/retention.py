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
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from mnemonist.model.config import RetentionConfig
from mnemonist.model.memory import format_ts, utcnow
from mnemonist.store import entity_links, expiry, hints, purge
from mnemonist.store.db import Database
from mnemonist.store.memories import LIVE, hash_in_use

log = logging.getLogger(__name__)


def _cutoff(days: int, now: datetime) -> str:
    return format_ts(now - timedelta(days=days))


def _has_table(conn, name: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone() is not None


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
        return [
            (r[0], r[1], r[2])
            for r in conn.execute(
                "SELECT seq, id, content_hash FROM memories WHERE is_deleted = 1"
                f" AND deleted_at < ? AND NOT {expiry.ARCHIVED} ORDER BY deleted_at LIMIT ?",
                (cutoff, self.cfg.batch_limit),
            )
        ]

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
            if _has_table(conn, "memory_entity_mentions"):
                for _seq, memory_id, _hash in self._expired_tombstones(conn, tomb_cut):
                    report.graph_links += entity_links.unlink_all(conn, memory_id)
                orphans = [r[0] for r in conn.execute(
                    "SELECT id FROM entities e WHERE mentions <= 0 AND NOT EXISTS (SELECT 1"
                    " FROM relations r WHERE r.reason = 'user-stated' AND e.id IN"
                    " (r.source_entity_id, r.target_entity_id)) LIMIT ?", (cfg.batch_limit,)
                )]
                for ent in orphans:
                    if _has_table(conn, "relations"):
                        conn.execute(
                            "DELETE FROM relations WHERE source_entity_id = ?"
                            " OR target_entity_id = ?", (ent, ent),
                        )
                    conn.execute("DELETE FROM entities WHERE id = ?", (ent,))
                report.orphan_entities = len(orphans)

        # 2. embeddings only those tombstones used (a live memory may share the content hash)
        with self.db.write_tx() as conn:
            for _seq, _id, content_hash in self._expired_tombstones(conn, tomb_cut):
                # live rows, then the others (each probe by its own index: hash_in_use)
                report.embeddings += conn.execute(
                    "DELETE FROM embeddings WHERE content_hash = ? AND NOT EXISTS"
                    f" (SELECT 1 FROM memories WHERE content_hash = ? AND {LIVE})"
                    " AND NOT EXISTS (SELECT 1 FROM memories WHERE content_hash = ?"
                    f" AND NOT ({LIVE}) AND (is_deleted = 0 OR deleted_at >= ?"
                    f" OR {expiry.ARCHIVED}))",
                    (content_hash, content_hash, content_hash, tomb_cut),
                ).rowcount

        # 2b. vectors nothing points to any more (context texts that changed or went away)
        with self.db.write_tx() as conn:
            report.orphan_vectors = conn.execute(
                "DELETE FROM embeddings WHERE content_hash IN (SELECT e.content_hash FROM"
                f" embeddings e WHERE NOT {hash_in_use('e.content_hash')} AND NOT EXISTS"
                " (SELECT 1 FROM memory_context c WHERE c.text_hash = e.content_hash) LIMIT ?)",
                (cfg.batch_limit,),
            ).rowcount

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
            if _has_table(conn, "sparse_terms"):
                report.orphan_sparse_terms = conn.execute(
                    "DELETE FROM sparse_terms WHERE seq IN (SELECT s.seq FROM sparse_terms s"
                    " WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.seq = s.seq) LIMIT ?)",
                    (cfg.batch_limit,),
                ).rowcount

        steps: tuple[tuple[str, str, int], ...] = (
            ("history", "DELETE FROM memory_history WHERE rowid IN (SELECT rowid FROM"
             " memory_history WHERE created_at < ? LIMIT ?)", cfg.history_days),
            ("completed_jobs", "DELETE FROM memory_jobs WHERE id IN (SELECT id FROM memory_jobs"
             " WHERE status = 'completed' AND completed_at < ? LIMIT ?)", cfg.completed_job_days),
            ("dead_jobs", "DELETE FROM memory_jobs WHERE id IN (SELECT id FROM memory_jobs"
             " WHERE status = 'dead' AND failed_at < ? LIMIT ?)", cfg.dead_job_days),
        )
        with self.db.write_tx() as conn:
            if _has_table(conn, "predictor_pairs"):
                steps += (("training_pairs", "DELETE FROM predictor_pairs WHERE id IN (SELECT"
                           " id FROM predictor_pairs WHERE created_at < ? LIMIT ?)",
                           cfg.training_pair_days),)
        for name, sql, days in steps:  # 4, 5, 6, 7
            with self.db.write_tx() as conn:
                count = conn.execute(sql, (_cutoff(days, now), cfg.batch_limit)).rowcount
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
