"""Sleep replay: while the daemon is idle, compare a few random pairs of memories to find
connections the linker missed (two memories that say alike things about entities no relation
joins) and near-duplicates the sweep has not reached yet.

One cycle (`replay_cycle`), bounded by `memory.consolidation.replay.pairsPerCycle`:

1. **Sampling.** Each pair is drawn with two indexed look-ups, never a scan: a random seq gives
   the first live, current, curated memory at or after it (the memories the near-duplicate
   sweep compares: `store.duplicates.sweepable_where`), a second random seq the first memory
   of the same project and owner at or after that one (wrapping round). A memory not embedded
   yet is passed over. At most three draws per pair asked for; a pair drawn twice counts once.
2. **Similarity.** The cosine of the pair's vectors, from the vector index.
3. **Proposed edges.** A pair at or above `similarityThreshold` whose memories both name
   entities, none shared and no relation (any type, either way) between an entity of one and
   an entity of the other, gets one relation between the most mentioned entity of each:
   `related_to`, reason `replay`, confidence 0.4 (`store.graph.REASONS`), the smaller entity id
   its source (an association, read either way). Its `note` names the two memories and the
   cosine: feedback on either memory moves the edge (`service.graph_feedback`), and a
   relation the text or a person states later takes the row over.
4. **Near-duplicates.** A pair at or above `DUPLICATE_SIMILARITY` that passes the
   near-duplicate sweep's text guards (`text.near_duplicate.conflict`) is listed for review
   (`store.duplicates.flag`, kind `duplicate`); nothing is merged.
5. **Communities.** When an edge was written (and the graph's communities are on), they are
   computed again (`graph.communities.recompute`).
6. **Telemetry.** Counts of the cycle and running totals in `graph_state` (key
   `sleep_replay`); `report` adds what feedback did to the proposed edges since: an edge whose
   confidence feedback lowered (`boost` below 0) is a false positive.

The writes of a cycle are one short transaction (at most `pairsPerCycle` edges and flags, and
the totals); the relation check is repeated inside it.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mnemonist.graph import communities
from mnemonist.model.config_consolidation import ConsolidationConfig, ReplayConfig
from mnemonist.model.config_pipeline import GraphConfig
from mnemonist.model.memory import Memory, utcnow
from mnemonist.store import duplicates
from mnemonist.store import graph as graph_store
from mnemonist.store import graph_replay as replay_store
from mnemonist.store.db import Database
from mnemonist.store.graph import REASONS
from mnemonist.store.row_ids import time_ordered_id
from mnemonist.text.near_duplicate import conflict

log = logging.getLogger(__name__)

STATE_KEY = "sleep_replay"
REASON = replay_store.REASON
RELATION_TYPE = replay_store.RELATION_TYPE
CONFIDENCE = REASONS[REASON]
#: a pair this alike (and passing the text guards) is listed as a near-duplicate
DUPLICATE_SIMILARITY = 0.95
#: draws per pair asked for, at most (a draw may find no partner, or an unembedded memory)
DRAWS_PER_PAIR = 3
TOTALS = ("cycles", "pairs_compared", "above_threshold", "edges_proposed",
          "duplicates_flagged")


class Vectors(Protocol):
    """Where a memory's vector is read (the vector index, `search.vector_index.VectorIndex`)."""

    def vector(self, seq: int) -> np.ndarray | None: ...


@dataclass
class _Pair:
    older: Memory
    newer: Memory
    cosine: float


def _draw(conn: Any, rng: random.Random, top: int) -> tuple[Memory, Memory] | None:
    """One random pair of one project and owner, or None when the draw found none."""
    first = replay_store.first_sweepable_from(conn, rng.randint(1, top))
    if first is None:
        return None
    second = replay_store.first_sweepable_from(conn, rng.randint(1, top), first)
    if second is None:
        return None
    return (first, second) if first.seq < second.seq else (second, first)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(np.dot(a, b) / (na * nb)) if na and nb else 0.0


def sample(db: Database, index: Vectors, n: int, rng: random.Random) -> list[_Pair]:
    """Up to `n` distinct random pairs of embedded memories of one project and owner, with
    their cosines."""
    conn = db.reader()
    top = replay_store.max_seq(conn)
    if not top:
        return []
    out: dict[tuple[int, int], _Pair] = {}
    vectors: dict[int, np.ndarray | None] = {}
    for _ in range(n * DRAWS_PER_PAIR):
        if len(out) >= n:
            break
        pair = _draw(conn, rng, int(top))
        if pair is None or (pair[0].seq, pair[1].seq) in out:
            continue
        for m in pair:
            if m.seq not in vectors:
                vectors[m.seq] = index.vector(m.seq)
        va, vb = vectors[pair[0].seq], vectors[pair[1].seq]
        if va is None or vb is None:  # not embedded yet
            continue
        out[(pair[0].seq, pair[1].seq)] = _Pair(pair[0], pair[1], _cosine(va, vb))
    return list(out.values())


def _edge_for(conn: Any, pair: _Pair) -> tuple[str, str] | str:
    """(source, target) of the edge the pair proposes, or why it proposes none."""
    a = graph_store.entity_ids_named_by(conn, pair.older.id)
    b = graph_store.entity_ids_named_by(conn, pair.newer.id)
    if not a or not b:
        return "no entities"
    if set(a) & set(b):
        return "an entity in common"
    if replay_store.any_relation_between(conn, a, b):
        return "already related"
    x, y = a[0], b[0]
    return (x, y) if x < y else (y, x)


def _note(pair: _Pair) -> str:
    return (f"sleep replay: memories {pair.older.id} and {pair.newer.id} embed alike"
            f" (cosine {pair.cosine:.3f})")


def _propose(conn: Any, pair: _Pair, at: str) -> bool:
    """Write the pair's edge unless a relation joins its entities by now."""
    edge = _edge_for(conn, pair)
    if isinstance(edge, str):
        return False
    return replay_store.propose_edge(conn, time_ordered_id(), edge[0], edge[1], CONFIDENCE,
                                     _note(pair), at)


def _add_totals(conn: Any, cycle: dict[str, Any], at: str) -> None:
    state = graph_store.load_graph_state(conn, STATE_KEY) or {}
    for key in TOTALS:
        state[key] = int(state.get(key, 0)) + (1 if key == "cycles" else int(cycle[key]))
    state["last_cycle"] = {k: v for k, v in cycle.items() if k != "communities"}
    graph_store.save_graph_state(conn, STATE_KEY, state, at)


def replay_cycle(db: Database, index: Vectors | None, cfg: ReplayConfig,
                 rng: random.Random, *, graph: GraphConfig | None = None) -> dict[str, Any]:
    """One cycle: sample, compare, propose edges, flag near-duplicates, recount. `graph`: the
    knowledge graph's settings (no edge is proposed when it is off or not given)."""
    if index is None:
        return {"skipped": "no vector index (no embedding provider)"}
    edges_on = graph is not None and graph.enabled
    pairs = sample(db, index, cfg.pairs_per_cycle, rng)
    alike = [p for p in pairs if p.cosine >= cfg.similarity_threshold]
    conn = db.reader()
    why_not: Counter[str] = Counter()
    candidates: list[_Pair] = []
    for p in alike if edges_on else []:
        edge = _edge_for(conn, p)
        if isinstance(edge, str):
            why_not[edge] += 1
        else:
            candidates.append(p)
    twins: list[_Pair] = []
    guarded: Counter[str] = Counter()
    for p in alike:
        if p.cosine < DUPLICATE_SIMILARITY or duplicates.known(conn, p.older.id, p.newer.id):
            continue
        guard = conflict(p.older.content, p.newer.content)
        if guard:
            guarded[guard.split(" (")[0]] += 1
        else:
            twins.append(p)
    at = utcnow()
    cycle: dict[str, Any] = {
        "at": at, "pairs_compared": len(pairs), "above_threshold": len(alike),
        "edges_proposed": 0, "duplicates_flagged": 0,
        "not_proposed": dict(sorted(why_not.items())), "guarded": dict(sorted(guarded.items())),
        "threshold": cfg.similarity_threshold,
    }
    with db.write_tx() as w:
        for p in candidates:
            cycle["edges_proposed"] += _propose(w, p, at)
        for p in twins:
            cycle["duplicates_flagged"] += duplicates.flag(
                w, p.older.id, p.newer.id, p.cosine,
                f"sleep replay: cosine {p.cosine:.3f}; no guard fired", at)
        _add_totals(w, cycle, at)
    cycle["communities"] = None
    if cycle["edges_proposed"] and graph is not None and graph.communities.enabled:
        cycle["communities"] = communities.recompute(
            db, resolution=graph.communities.resolution,
            max_entities=graph.communities.max_entities)
    log.info("sleep replay: %d pairs, %d alike, %d edges proposed, %d duplicates flagged",
             cycle["pairs_compared"], cycle["above_threshold"], cycle["edges_proposed"],
             cycle["duplicates_flagged"])
    return cycle


def scheduled(consolidation: ConsolidationConfig) -> bool:
    """Whether the idle trigger runs: `replay.enabled`, under the consolidation section's own
    `enabled` (its master switch, as `graph.enabled` is for the graph's passes)."""
    return consolidation.enabled and consolidation.replay.enabled


def report(conn: Any, consolidation: ConsolidationConfig) -> dict[str, Any]:
    """The settings, the totals so far, the last cycle, and what feedback did to the edges
    replay proposed: `downgraded` (feedback lowered them: false positives), `confirmed`
    (feedback raised them), `present` (replay edges now; a relation stated or read from text
    later takes its row over)."""
    cfg = consolidation.replay
    state = graph_store.load_graph_state(conn, STATE_KEY) or {}
    present, downgraded, confirmed = replay_store.edge_feedback_counts(conn)
    proposed = int(state.get("edges_proposed", 0))
    return {
        "enabled": scheduled(consolidation), "idle_timeout_ms": cfg.idle_timeout_ms,
        "pairs_per_cycle": cfg.pairs_per_cycle,
        "similarity_threshold": cfg.similarity_threshold,
        "duplicate_similarity": DUPLICATE_SIMILARITY,
        **{key: int(state.get(key, 0)) for key in TOTALS},
        "present": present, "downgraded": downgraded, "confirmed": confirmed,
        "false_positive_rate": round(downgraded / proposed, 4) if proposed else None,
        "last_cycle": state.get("last_cycle"),
    }
