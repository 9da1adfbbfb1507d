"""Reads for the dashboard's graph view: the most-mentioned entities and the relations between
them. Only live memories count: an entity named only by forgotten memories is not shown."""

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
