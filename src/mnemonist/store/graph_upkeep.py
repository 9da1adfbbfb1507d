"""The SQL of graph upkeep (`graph/upkeep.py`): transitive inference over dependency edges
and the time decay of what feedback taught (aspect weights, edge boosts)."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

#: entity `{e}` is exempt from time decay
_EXEMPT = (
    "(EXISTS (SELECT 1 FROM entity_attributes xa WHERE xa.entity_id = {e}"
    " AND xa.kind = 'constraint') OR EXISTS (SELECT 1 FROM memory_entity_mentions xm"
    " CROSS JOIN memories xmm ON xmm.id = xm.memory_id WHERE xm.entity_id = {e}"
    " AND xmm.is_deleted = 0 AND (xmm.pinned = 1 OR xmm.type = 'decision')))")


def _in_list(types: Collection[str]) -> str:
    """`('a', 'b', …)`: the relation types, sorted, as an SQL list."""
    return "(" + ", ".join(f"'{t}'" for t in sorted(types)) + ")"


def remove_stale_inferred(conn: sqlite3.Connection, dependency_types: Collection[str],
                          min_premise_confidence: float) -> int:
    """Delete the inferred edges a premise of which is gone, no longer a dependency, or below
    the minimum confidence; returns how many."""
    deps = _in_list(dependency_types)
    return conn.execute(
        "DELETE FROM relations WHERE reason = 'inferred' AND (derived_from IS NULL OR EXISTS"
        " (SELECT 1 FROM json_each(relations.derived_from) j WHERE NOT EXISTS (SELECT 1 FROM"
        f" relations p WHERE p.id = j.value AND p.reason != 'inferred' AND p.relation_type IN"
        f" {deps} AND p.confidence >= ?)))", (min_premise_confidence,)).rowcount


def dependency_chains(conn: sqlite3.Connection, dependency_types: Collection[str],
                      min_premise_confidence: float, limit: int) -> list[sqlite3.Row]:
    """(A, C, A→B id, B→C id, product of confidences) of two dependency edges in a row, none
    inferred, where A → C is not known any other way; most confident first."""
    deps = _in_list(dependency_types)
    return conn.execute(
        "SELECT r1.source_entity_id, r2.target_entity_id, r1.id, r2.id,"
        " r1.confidence * r2.confidence AS p FROM relations r1"
        " JOIN relations r2 ON r2.source_entity_id = r1.target_entity_id"
        f" WHERE r1.relation_type IN {deps} AND r2.relation_type IN {deps}"
        " AND r1.reason != 'inferred' AND r2.reason != 'inferred'"
        " AND r1.confidence >= ?1 AND r2.confidence >= ?1"
        " AND r2.target_entity_id != r1.source_entity_id"
        " AND NOT EXISTS (SELECT 1 FROM relations x WHERE x.source_entity_id ="
        " r1.source_entity_id AND x.target_entity_id = r2.target_entity_id"
        f" AND x.reason != 'inferred' AND (x.relation_type IN {deps}"
        " OR x.relation_type = 'depends_on'))"
        " ORDER BY p DESC, r1.id, r2.id LIMIT ?2", (min_premise_confidence, limit)).fetchall()


def write_inferred(conn: sqlite3.Connection, relation_id: str, source: str, target: str,
                   confidence: float, premises: str, now: str) -> int:
    """Insert the inferred `depends_on` edge, or refresh an inferred one that changed (never
    a row known any other way); 1 when a row was written."""
    return conn.execute(
        "INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
        " strength, mentions, confidence, reason, derived_from, created_at, updated_at,"
        " confirmed_at) VALUES (?, ?, ?, 'depends_on', 1.0, 1, ?, 'inferred', ?, ?, ?, ?)"
        " ON CONFLICT(source_entity_id, target_entity_id, relation_type) DO UPDATE SET"
        " confidence = excluded.confidence, derived_from = excluded.derived_from,"
        " updated_at = excluded.updated_at WHERE relations.reason = 'inferred'"
        " AND (relations.confidence != excluded.confidence"
        " OR relations.derived_from != excluded.derived_from)",
        (relation_id, source, target, confidence, premises, now, now, now)).rowcount


_DAYS = "(julianday(:now) - julianday(MAX({col}, :last)))"


def decay_aspects(conn: sqlite3.Connection, now: str, last: str, floor: float,
                  rate: float) -> int:
    """Lower each aspect's weight by `rate` a day since it was last confirmed (or since
    `last`), not below `floor`; aspects of exempt entities are left alone."""
    aspect_days = _DAYS.format(col="COALESCE(a.confirmed_at, a.created_at)")
    return conn.execute(
        f"UPDATE entity_aspects AS a SET weight = MAX(:floor, weight - :rate * {aspect_days})"
        f" WHERE a.weight > :floor AND {aspect_days} > 0"
        f" AND NOT {_EXEMPT.format(e='a.entity_id')}",
        {"now": now, "last": last, "floor": floor, "rate": rate},
    ).rowcount


def decay_edge_boosts(conn: sqlite3.Connection, now: str, last: str, rate: float) -> int:
    """Take back `rate` a day of what feedback added to each edge (its `boost`, down to 0);
    edges at an exempt entity are left alone."""
    edge_days = _DAYS.format(col="COALESCE(r.confirmed_at, r.created_at)")
    lost = f"MIN(r.boost, :rate * {edge_days})"
    return conn.execute(
        f"UPDATE relations AS r SET confidence = confidence - {lost}, boost = boost - {lost}"
        f" WHERE r.boost > 0 AND {edge_days} > 0"
        f" AND NOT {_EXEMPT.format(e='r.source_entity_id')}"
        f" AND NOT {_EXEMPT.format(e='r.target_entity_id')}",
        {"now": now, "last": last, "rate": rate}).rowcount
