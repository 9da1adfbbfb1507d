"""Graph upkeep, run by the maintenance worker each `execute` cycle (and by
`POST /api/repair/graph-upkeep`): transitive inference and time decay.

**Inference.** Two dependency edges in a row, A → B and B → C (a dependency relation type:
depends_on, uses, calls, …, each stated, pattern-matched, extracted — never itself inferred —
and at least `minPremiseConfidence` confident), make an `inferred` edge A depends_on C with
confidence = the premises' product × `discount`, at most `maxConfidence` (0.4: below the walks'
default minimum, so an inferred edge is shown on an entity and lifts recall one hop away, but
never puts anything in an impact tier on its own — the chain it came from already does). Its
premises' ids are kept in `derived_from`. Bounded: at most `maxPerRun` edges written or
refreshed per run, the most confident chains first; one level (an inferred edge is no premise).
An inferred edge never replaces another: where A → C is already known any other way, nothing
is inferred, and a later stated or text-derived A → C takes the row over. When a premise goes
(retracted, its entities purged) or drops below the minimum, the edge goes on the next run.

**Time decay.** What feedback taught fades unless confirmed again: each aspect's weight, and
the confidence an edge earned from feedback (`boost`), lose `decayPerDay` per day since last
confirmed (an aspect: used at session end, rated helpful, or a memory filed under it; an edge:
used or rated helpful, or for a co-occurrence edge named together again). Aspects stop at
`decayFloor`; an edge never drops below the confidence its evidence gives (its boost reaches 0).
Entities a pinned memory or a decision names, or that carry a constraint, are exempt, with
their edges. Each run decays by the time since the later of the last run and the row's last
confirmation, so running twice at the same time changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from mnemonist.graph.walks import DEPENDENCY_TYPES
from mnemonist.model.config import GraphConfig
from mnemonist.model.memory import utcnow
from mnemonist.store import graph
from mnemonist.store import graph_upkeep as store
from mnemonist.store.db import Database
from mnemonist.store.row_ids import time_ordered_id

DECAY_KEY = "decay"


def run(db: Database, cfg: GraphConfig, now: str | None = None) -> dict[str, Any]:
    now = now or utcnow()
    out: dict[str, Any] = {}
    with db.write_tx() as conn:
        if cfg.inference.enabled:
            out["inference"] = infer(conn, cfg, now)
        if cfg.feedback.decay_per_day > 0:
            out["decay"] = decay(conn, cfg, now)
    return out


def infer(conn: sqlite3.Connection, cfg: GraphConfig, now: str) -> dict[str, int]:
    inf = cfg.inference
    lo = inf.min_premise_confidence
    removed = store.remove_stale_inferred(conn, DEPENDENCY_TYPES, lo)
    rows = store.dependency_chains(conn, DEPENDENCY_TYPES, lo, inf.max_per_run * 4)
    best: dict[tuple[str, str], tuple[float, list[str]]] = {}
    for a, c, r1, r2, p in rows:
        if (a, c) not in best:
            best[(a, c)] = (float(p), [r1, r2])
        if len(best) >= inf.max_per_run:
            break
    written = 0
    for (a, c), (p, premises) in best.items():
        confidence = round(min(inf.max_confidence, p * inf.discount), 4)
        written += store.write_inferred(conn, time_ordered_id(), a, c, confidence,
                                        json.dumps(premises), now)
    return {"written": written, "removed": removed, "chains": len(best)}


def decay(conn: sqlite3.Connection, cfg: GraphConfig, now: str) -> dict[str, Any]:
    fb = cfg.feedback
    state = graph.load_graph_state(conn, DECAY_KEY)
    last = state.get("at", "") if state else ""
    if last and last >= now:
        return {"aspects": 0, "edges": 0, "since": last}
    aspects = store.decay_aspects(conn, now, last, fb.decay_floor, fb.decay_per_day)
    edges = store.decay_edge_boosts(conn, now, last, fb.decay_per_day)
    graph.save_graph_state(conn, DECAY_KEY, {"at": now}, now)
    return {"aspects": aspects, "edges": edges, "since": last or None}
