"""Diagnostics and repair actions of the maintenance worker.

`diagnose()` reads queue health (dead rate, stale leases), index health (each FTS index's row
count against its content table; the vector index against the live embedded memories;
embeddings missing) and storage health (tombstone ratio), and folds them into one score in
[0, 1]. The repair actions each fix one of those and report what they did; the maintenance
worker runs them (rate-limited) and so do the `/api/repair/*` routes (on demand).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from mnemonist.model.memory import format_ts, utcnow
from mnemonist.pipeline.embedder import BackgroundEmbedder
from mnemonist.pipeline.retention import RetentionWorker
from mnemonist.providers.embedding.base import EmbeddingProvider
from mnemonist.search.vector_index import VectorIndex
from mnemonist.store import documents, embedding_work, embeddings, jobs, maintenance
from mnemonist.store.db import Database

#: (FTS5 index, the table it indexes): the later ones exist once their migration ran
FTS_INDEXES = (("memories_fts", "memories"), ("memories_ctx_fts", "memory_context"),
               ("memory_hints_fts", "memory_hints"))

#: weights of the composite score
WEIGHTS = {"queue": 0.35, "index": 0.45, "storage": 0.2}
TOMBSTONE_TOLERANCE = 0.3  # tombstones up to this share of the rows cost nothing


class VectorState(Protocol):
    """What diagnostics need of the service: its provider, vector index and embedder."""

    provider: EmbeddingProvider | None
    index: VectorIndex | None
    embedder: BackgroundEmbedder | None


def _clamp(x: float) -> float:
    return max(0.0, min(1.0, x))


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    return maintenance.table_exists(conn, name)


def fts_counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """{fts index: {"indexed": documents in the index, "rows": rows of its table}}.

    An external-content FTS5 table answers COUNT(*) from its content table, so the index's
    own size is read from its `_docsize` shadow table.
    """
    out = {}
    for fts, table in FTS_INDEXES:
        if _table_exists(conn, fts) and _table_exists(conn, f"{fts}_docsize"):
            out[fts] = {
                "indexed": maintenance.index_size(conn, fts),
                "rows": maintenance.table_rows(conn, table),
            }
    return out


def _queue(conn: sqlite3.Connection, lease_timeout_ms: int) -> dict[str, Any]:
    by_type = jobs.counts(conn)
    totals: dict[str, int] = {}
    for states in by_type.values():
        for state, n in states.items():
            totals[state] = totals.get(state, 0) + n
    total = sum(totals.values())
    cutoff = format_ts(datetime.now(UTC) - timedelta(milliseconds=lease_timeout_ms))
    stale = jobs.stale_leases(conn, cutoff)
    dead = totals.get("dead", 0)
    leased = totals.get("leased", 0)
    dead_rate = dead / total if total else 0.0
    stale_fraction = stale / leased if leased else 0.0
    return {
        "total": total, "pending": totals.get("pending", 0), "leased": leased,
        "completed": totals.get("completed", 0), "dead": dead,
        "dead_rate": round(dead_rate, 6), "stale_leases": stale, "by_type": by_type,
        "score": round(_clamp(1 - 5 * dead_rate - 0.5 * stale_fraction), 4),
    }


def _index(conn: sqlite3.Connection, vectors: VectorState | None) -> dict[str, Any]:
    fts = fts_counts(conn)
    rows = sum(c["rows"] for c in fts.values())
    off = sum(abs(c["indexed"] - c["rows"]) for c in fts.values())
    mem = fts.get("memories_fts", {"indexed": 0, "rows": 0})
    live = maintenance.live_memories(conn)
    parts = [1 - min(1.0, off / max(rows, 1))]
    out: dict[str, Any] = {
        "memories_total": mem["rows"], "memories_live": live, "fts_rows": mem["indexed"],
        "fts_mismatch": off > 0, "fts": fts,
    }
    provider = vectors.provider if vectors is not None else None
    if provider is not None and vectors is not None:
        stats = embeddings.stats(conn, provider.model_id)
        size = len(vectors.index) if vectors.index is not None else 0
        embedded = stats["embedded"]
        embedder = vectors.embedder
        available = embedder.stats.provider_ok if embedder is not None else False
        out.update(
            model=provider.model_id, vector_index_size=size, live_embedded=embedded,
            vector_mismatch=size != embedded, embeddings_missing=stats["missing"],
            embeddings_stale=stats["stale"], provider_available=available,
        )
        parts.append(embedded / stats["live"] if stats["live"] else 1.0)
        parts.append(1 - min(1.0, abs(size - embedded) / max(embedded, 1)))
    else:
        out.update(model=None, vector_index_size=None, live_embedded=None,
                   vector_mismatch=False, embeddings_missing=0, embeddings_stale=0,
                   provider_available=False)
    out["score"] = round(_clamp(sum(parts) / len(parts)), 4)
    return out


def _storage(conn: sqlite3.Connection) -> dict[str, Any]:
    # expired events are archive, not tombstones: no sweep purges them (store.expiry)
    total, deleted, archived = maintenance.tombstone_counts(conn)
    tombstones = deleted - archived
    ratio = tombstones / total if total else 0.0
    excess = max(0.0, ratio - TOMBSTONE_TOLERANCE) / (1 - TOMBSTONE_TOLERANCE)
    return {"total": total, "live": total - deleted, "tombstones": tombstones,
            "archived_events": archived, "tombstone_ratio": round(ratio, 6),
            "score": round(_clamp(1 - excess), 4)}


def diagnose(
    db: Database, *, lease_timeout_ms: int, vectors: VectorState | None = None
) -> dict[str, Any]:
    """The diagnostics report; `score` is the composite health in [0, 1]."""
    conn = db.reader()
    report: dict[str, Any] = {
        "at": utcnow(),
        "queue": _queue(conn, lease_timeout_ms),
        "index": _index(conn, vectors),
        "storage": _storage(conn),
    }
    report["score"] = round(sum(report[k]["score"] * w for k, w in WEIGHTS.items()), 4)
    if _table_exists(conn, "documents"):
        report["documents"] = documents.counts(conn)
    return report


# -- repair actions ------------------------------------------------------------------------------


def requeue_dead_jobs(db: Database, limit: int = 100) -> dict[str, Any]:
    """Dead jobs get a fresh set of attempts."""
    with db.write_tx() as conn:
        return {"requeued": jobs.requeue_dead(conn, limit=limit)}


def release_stale_leases(db: Database, lease_timeout_ms: int) -> dict[str, Any]:
    """Leases older than the timeout (a crashed worker) go back to pending (or dead)."""
    with db.write_tx() as conn:
        return {"released": jobs.reap_stale(conn, lease_timeout_ms)}


def _integrity(conn: sqlite3.Connection, fts: str) -> str:
    try:
        maintenance.integrity_check(conn, fts)
    except sqlite3.DatabaseError as exc:
        return f"failed: {exc}"
    return "ok"


def check_fts(db: Database) -> dict[str, Any]:
    """Each FTS index against its table: counts and FTS5's own integrity check (which compares
    the index with the content table). Read-only, but the check needs the write lock."""
    with db.write_tx() as conn:
        tables: dict[str, dict[str, Any]] = fts_counts(conn)
        for fts, counts in tables.items():
            counts["integrity"] = _integrity(conn, fts)
    consistent = all(c["integrity"] == "ok" and c["indexed"] == c["rows"]
                     for c in tables.values())
    return {"consistent": consistent, "tables": tables}


def rebuild_fts(db: Database) -> dict[str, Any]:
    """FTS5 'rebuild' of every index from its table, in one write transaction."""
    started = time.perf_counter()
    with db.write_tx() as conn:
        before = fts_counts(conn)
        for fts in before:
            maintenance.rebuild(conn, fts)
        after = fts_counts(conn)
    return {"rebuilt": sorted(before), "before": before, "after": after,
            "took_ms": round((time.perf_counter() - started) * 1000, 1)}


def check_and_rebuild_fts(db: Database) -> dict[str, Any]:
    """The worker's FTS action: check, and rebuild when the check finds a disagreement."""
    check = check_fts(db)
    out: dict[str, Any] = {"check": check, "rebuilt": False}
    if not check["consistent"]:
        out["rebuild"] = rebuild_fts(db)
        out["rebuilt"] = True
    return out


def retention_sweep(retention: RetentionWorker) -> dict[str, Any]:
    return asdict(retention.sweep())


def reembed(vectors: VectorState, db: Database, limit: int = 1000,
            wait_s: float = 0.0) -> dict[str, Any]:
    """Queue live memories whose embedding is missing or from another model, and embedded
    ones the vector index lacks, into the background embedder; drop tombstones the index
    still holds. With `wait_s`, wait (at most that long) for the embedder to finish."""
    embedder, provider = vectors.embedder, vectors.provider
    if embedder is None or provider is None:
        return {"skipped": "no embedding provider is configured"}
    conn = db.reader()
    model = provider.model_id
    missing = embedding_work.unembedded_newest_first(conn, model, limit)
    index = vectors.index
    not_indexed: list[int] = []
    removed = 0
    if index is not None:
        for seq in embedding_work.embedded_seqs(conn, model):
            if seq not in index:
                not_indexed.append(seq)
                if len(not_indexed) >= limit:
                    break
        for seq in embedding_work.deleted_seqs(conn):
            removed += index.remove(seq)
    for seq in (*missing, *not_indexed):
        embedder.notify(seq)
    out: dict[str, Any] = {"queued": len(missing) + len(not_indexed), "missing": len(missing),
                           "not_indexed": len(not_indexed), "removed_from_index": removed}
    if wait_s > 0 and out["queued"]:
        out["finished"] = embedder.wait_idle(wait_s)
    return out
