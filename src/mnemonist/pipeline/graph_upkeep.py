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

from mnemonist.model.config import GraphConfig
from mnemonist.model.memory import utcnow
from mnemonist.search.traversal import DEPENDENCY_TYPES
from mnemonist.store.db import Database
from mnemonist.store.row_ids import time_ordered_id

DECAY_KEY = "decay"
_DEPS = "(" + ", ".join(f"'{t}'" for t in sorted(DEPENDENCY_TYPES)) + ")"
#: entity `{e}` is exempt from time decay
_EXEMPT = (
    "(EXISTS (SELECT 1 FROM entity_attributes xa WHERE xa.entity_id = {e}"
    " AND xa.kind = 'constraint') OR EXISTS (SELECT 1 FROM memory_entity_mentions xm"
    " CROSS JOIN memories xmm ON xmm.id = xm.memory_id WHERE xm.entity_id = {e}"
    " AND xmm.is_deleted = 0 AND (xmm.pinned = 1 OR xmm.type = 'decision')))")


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
    removed = conn.execute(
        "DELETE FROM relations WHERE reason = 'inferred' AND (derived_from IS NULL OR EXISTS"
        " (SELECT 1 FROM json_each(relations.derived_from) j WHERE NOT EXISTS (SELECT 1 FROM"
        f" relations p WHERE p.id = j.value AND p.reason != 'inferred' AND p.relation_type IN"
        f" {_DEPS} AND p.confidence >= ?)))", (lo,)).rowcount
    rows = conn.execute(
        "SELECT r1.source_entity_id, r2.target_entity_id, r1.id, r2.id,"
        " r1.confidence * r2.confidence AS p FROM relations r1"
        " JOIN relations r2 ON r2.source_entity_id = r1.target_entity_id"
        f" WHERE r1.relation_type IN {_DEPS} AND r2.relation_type IN {_DEPS}"
        " AND r1.reason != 'inferred' AND r2.reason != 'inferred'"
        " AND r1.confidence >= ?1 AND r2.confidence >= ?1"
        " AND r2.target_entity_id != r1.source_entity_id"
        " AND NOT EXISTS (SELECT 1 FROM relations x WHERE x.source_entity_id ="
        " r1.source_entity_id AND x.target_entity_id = r2.target_entity_id"
        f" AND x.reason != 'inferred' AND (x.relation_type IN {_DEPS}"
        " OR x.relation_type = 'depends_on'))"
        " ORDER BY p DESC, r1.id, r2.id LIMIT ?2", (lo, inf.max_per_run * 4)).fetchall()
    best: dict[tuple[str, str], tuple[float, list[str]]] = {}
    for a, c, r1, r2, p in rows:
        if (a, c) not in best:
            best[(a, c)] = (float(p), [r1, r2])
        if len(best) >= inf.max_per_run:
            break
    written = 0
    for (a, c), (p, premises) in best.items():
        confidence = round(min(inf.max_confidence, p * inf.discount), 4)
        written += conn.execute(
            "INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
            " strength, mentions, confidence, reason, derived_from, created_at, updated_at,"
            " confirmed_at) VALUES (?, ?, ?, 'depends_on', 1.0, 1, ?, 'inferred', ?, ?, ?, ?)"
            " ON CONFLICT(source_entity_id, target_entity_id, relation_type) DO UPDATE SET"
            " confidence = excluded.confidence, derived_from = excluded.derived_from,"
            " updated_at = excluded.updated_at WHERE relations.reason = 'inferred'"
            " AND (relations.confidence != excluded.confidence"
            " OR relations.derived_from != excluded.derived_from)",
            (time_ordered_id(), a, c, confidence, json.dumps(premises), now, now, now)).rowcount
    return {"written": written, "removed": removed, "chains": len(best)}


def decay(conn: sqlite3.Connection, cfg: GraphConfig, now: str) -> dict[str, Any]:
    fb = cfg.feedback
    row = conn.execute("SELECT value FROM graph_state WHERE key = ?", (DECAY_KEY,)).fetchone()
    last = json.loads(row[0]).get("at", "") if row else ""
    if last and last >= now:
        return {"aspects": 0, "edges": 0, "since": last}
    days = "(julianday(:now) - julianday(MAX({col}, :last)))"
    aspect_days = days.format(col="COALESCE(a.confirmed_at, a.created_at)")
    aspects = conn.execute(
        f"UPDATE entity_aspects AS a SET weight = MAX(:floor, weight - :rate * {aspect_days})"
        f" WHERE a.weight > :floor AND {aspect_days} > 0"
        f" AND NOT {_EXEMPT.format(e='a.entity_id')}",
        {"now": now, "last": last, "floor": fb.decay_floor, "rate": fb.decay_per_day},
    ).rowcount
    edge_days = days.format(col="COALESCE(r.confirmed_at, r.created_at)")
    lost = f"MIN(r.boost, :rate * {edge_days})"
    edges = conn.execute(
        f"UPDATE relations AS r SET confidence = confidence - {lost}, boost = boost - {lost}"
        f" WHERE r.boost > 0 AND {edge_days} > 0"
        f" AND NOT {_EXEMPT.format(e='r.source_entity_id')}"
        f" AND NOT {_EXEMPT.format(e='r.target_entity_id')}",
        {"now": now, "last": last, "rate": fb.decay_per_day}).rowcount
    conn.execute(
        "INSERT INTO graph_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key)"
        " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (DECAY_KEY, json.dumps({"at": now}), now))
    return {"aspects": aspects, "edges": edges, "since": last or None}
