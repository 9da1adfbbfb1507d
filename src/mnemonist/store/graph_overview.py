"""Reads for the dashboard's graph view: the most-mentioned entities and the relations between
them (only live memories count: an entity named only by forgotten memories is not shown), and
the sizes `/api/diagnostics/graph` reports."""

from __future__ import annotations

import sqlite3
from typing import Any


def top_entities(conn: sqlite3.Connection, limit: int,
                 project: str | None = None) -> list[dict[str, Any]]:
    """The `limit` entities named by the most live memories, most-mentioned first; with
    `project`, only that project's ("" : the entities of memories without a project). Each
    says its project (None: no project) and canonical name: one name may be an entity in
    several projects, and in one project once per owner (a private copy)."""
    where, args = ("", []) if project is None else (" WHERE e.project = ?", [project])
    rows = conn.execute(
        "SELECT e.id, e.name, e.entity_type, COUNT(*) AS mentions, e.project, e.canonical_name"
        " FROM memory_entity_mentions x"
        " JOIN entities e ON e.id = x.entity_id"
        " JOIN memories m ON m.id = x.memory_id AND m.is_deleted = 0"
        f"{where} GROUP BY e.id ORDER BY mentions DESC, e.canonical_name, e.project LIMIT ?",
        (*args, limit),
    ).fetchall()
    return [{"id": r[0], "name": r[1], "type": r[2], "mentions": int(r[3]),
             "project": r[4] or None, "canonical_name": r[5]} for r in rows]


def projects(conn: sqlite3.Connection) -> list[str]:
    """The projects some entity belongs to ("" for entities of memories without one)."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT project FROM entities ORDER BY project LIMIT 500")]


def relations_among(conn: sqlite3.Connection, entity_ids: list[str]) -> list[dict[str, Any]]:
    """Every relation whose two ends are both among `entity_ids`."""
    if not entity_ids:
        return []
    marks = ",".join("?" * len(entity_ids))
    rows = conn.execute(
        "SELECT source_entity_id, target_entity_id, relation_type, strength, mentions"
        f" FROM relations WHERE source_entity_id IN ({marks})"
        f" AND target_entity_id IN ({marks})",
        [*entity_ids, *entity_ids],
    ).fetchall()
    return [{"source": r[0], "target": r[1], "type": r[2],
             "weight": round(float(r[3]) * int(r[4]), 4)} for r in rows]


def sizes(conn: sqlite3.Connection, project: str | None) -> dict[str, Any]:
    """For `/api/diagnostics/graph`: entities (all, and linked), relations (all, by reason, the
    20 commonest types), attributes by kind and aspects, of one project when given (a
    relation and an attribute are its source entity's)."""
    scope, args = ("e.project = ?", [project]) if project is not None else ("1", [])
    at = f"JOIN entities e ON e.id = {{col}} WHERE {scope}"

    def one(sql: str) -> int:
        return int(conn.execute(sql, args).fetchone()[0])

    def grouped(sql: str) -> dict[str, int]:
        return {str(r[0]): r[1] for r in conn.execute(sql, args)}

    rel = at.format(col="r.source_entity_id")
    return {
        "entities": one(f"SELECT COUNT(*) FROM entities e WHERE {scope}"),
        "linked_entities": one(f"SELECT COUNT(*) FROM entities e WHERE {scope}"
                               " AND e.mentions > 0"),
        "relations": one(f"SELECT COUNT(*) FROM relations r {rel}"),
        "relations_by_reason": grouped(
            f"SELECT r.reason, COUNT(*) FROM relations r {rel} GROUP BY r.reason"
            " ORDER BY r.reason"),
        "relations_by_type": grouped(
            f"SELECT r.relation_type, COUNT(*) FROM relations r {rel}"
            " GROUP BY r.relation_type ORDER BY COUNT(*) DESC LIMIT 20"),
        "attributes_by_kind": grouped(
            f"SELECT a.kind, COUNT(*) FROM entity_attributes a"
            f" {at.format(col='a.entity_id')} GROUP BY a.kind ORDER BY a.kind"),
        "aspects": one(f"SELECT COUNT(*) FROM entity_aspects a"
                       f" {at.format(col='a.entity_id')}"),
    }


def feedback_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Ratings given and sessions scored (the whole store's)."""
    return {
        "ratings": conn.execute("SELECT COUNT(*) FROM memory_feedback").fetchone()[0],
        "sessions_scored": conn.execute("SELECT COUNT(*) FROM session_scores").fetchone()[0],
    }
