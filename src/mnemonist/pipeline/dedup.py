"""The near-duplicate sweep: flags pairs of memories for review, never merges them.

One run examines the next `repair.dedupBatchSize` memories after the sweep's cursor (in the
order they were written, live curated memories only: see `store.duplicates`). For each it
takes its nearest neighbours in the same project from the vector index, and every neighbour
at cosine ≥ `repair.dedupSemanticThreshold` is checked by the text guards
(`text.near_duplicate`): a pair that differs in numbers, negation, opposite words, the order
of its words or the names it states is not a duplicate, however alike it embeds. The rest are
stored as open candidates for a person to dismiss or resolve. The maintenance worker runs it
under `repair.dedupCooldownMs` / `repair.dedupHourlyBudget`; `POST /api/repair/dedup-sweep`
runs it now.

A memory not embedded yet stops the run before it (the next run starts there), so nothing is
skipped while the embedder catches up. A memory whose text changes keeps its place: pairs are
found from the newer side, so an edited memory is compared again when a newer neighbour is
swept, not by itself.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mnemonist.model.config import RepairConfig
from mnemonist.model.memory import Memory, utcnow
from mnemonist.search.vector_index import VectorIndex
from mnemonist.store import duplicates, memories
from mnemonist.store.db import Database
from mnemonist.text.near_duplicate import conflict

#: neighbours looked at per memory (the index's nearest, the memory itself included)
NEIGHBOURS = 10


def _batch(db: Database, after: int, size: int) -> list[Memory]:
    conn = db.reader()
    seqs = duplicates.sweepable_seqs(conn, after, size)
    rows = memories.get_many_by_seq(conn, seqs)
    return [rows[s] for s in seqs if s in rows]


def _guard_kind(reason: str) -> str:
    return reason.split(" (")[0]


def sweep(db: Database, index: VectorIndex | None, cfg: RepairConfig,
          *, batch_size: int | None = None) -> dict[str, Any]:
    """One run of the sweep; returns what it examined, flagged and why it skipped pairs."""
    if index is None:
        return {"skipped": "no vector index (no embedding provider)"}
    size = batch_size or cfg.dedup_batch_size
    threshold = cfg.dedup_semantic_threshold
    start = duplicates.cursor(db.reader())
    batch = _batch(db, start, size)
    examined, last = 0, start
    waiting: str | None = None
    pairs: dict[tuple[int, int], float] = {}
    for m in batch:
        vec = index.vector(m.seq)
        if vec is None:
            waiting = m.id
            break
        for seq, cos in index.search(vec, NEIGHBOURS, project=m.project, filter_project=True):
            if seq != m.seq and cos >= threshold:
                key = (min(seq, m.seq), max(seq, m.seq))
                pairs[key] = max(cos, pairs.get(key, cos))
        examined += 1
        last = m.seq
    conn = db.reader()
    rows = memories.get_many_by_seq(conn, sorted({s for pair in pairs for s in pair}),
                                    duplicates.sweepable_where())
    found: list[tuple[Memory, Memory, float, str]] = []
    guarded: Counter[str] = Counter()
    for (lo, hi), cos in sorted(pairs.items()):
        older, newer = rows.get(lo), rows.get(hi)
        if older is None or newer is None or duplicates.known(conn, older.id, newer.id):
            continue
        if (older.agent_id, older.user_id) != (newer.agent_id, newer.user_id):
            guarded["different owners"] += 1  # a pair never spans scopes: one reviewer sees both
            continue
        why_not = conflict(older.content, newer.content)
        if why_not:
            guarded[_guard_kind(why_not)] += 1
            continue
        found.append((older, newer, cos, f"cosine {cos:.3f}; no guard fired"))
    at = utcnow()
    flagged = 0
    with db.write_tx() as w:
        for older, newer, cos, reason in found:
            flagged += duplicates.flag(w, older.id, newer.id, cos, reason, at)
        if last != start:
            duplicates.set_cursor(w, last, at)
    return {
        "examined": examined, "pairs_above_threshold": len(pairs), "flagged": flagged,
        "guarded": dict(sorted(guarded.items())), "threshold": threshold,
        "cursor": last, "waiting_for_embedding": waiting,
        "done": waiting is None and len(batch) < size,
    }
