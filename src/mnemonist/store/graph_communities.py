"""The SQL of the graph's communities (`graph/communities.py`: Louvain per project over the
shared entities) and of its bridges (`graph/bridges.py`: entities whose relations join
communities): `entity_communities` and `entities.community_id` (migration 13)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any


def top_shared_entities(conn: sqlite3.Connection, project: str,
                        limit: int) -> list[sqlite3.Row]:
    """(id, name, mentions) of the project's most mentioned shared live entities."""
    return conn.execute(
        "SELECT id, name, mentions FROM entities WHERE project = ? AND agent_id = ''"
        " AND user_id = '' AND mentions > 0 ORDER BY mentions DESC, id LIMIT ?",
        (project, limit)).fetchall()


def shared_relation_weights(conn: sqlite3.Connection,
                            project: str) -> Iterable[tuple[str, str, float]]:
    """(source, target, confidence × mentions) of the relations out of the project's shared
    entities, self-relations left out."""
    return conn.execute(
        "SELECT r.source_entity_id, r.target_entity_id, r.confidence * r.mentions"
        " FROM relations r JOIN entities e ON e.id = r.source_entity_id"
        " WHERE e.project = ? AND e.agent_id = '' AND e.user_id = ''"
        " AND r.source_entity_id != r.target_entity_id", (project,))


def replace_communities(conn: sqlite3.Connection,
                        communities: list[tuple[int, str, int, str]],
                        assignments: dict[str, int], now: str) -> None:
    """Forget every community, then write these ((id, label, size, project)) and each
    entity's membership, inside the caller's write transaction."""
    conn.execute("UPDATE entities SET community_id = NULL WHERE community_id IS NOT NULL")
    conn.execute("DELETE FROM entity_communities")
    conn.executemany(
        "INSERT INTO entity_communities (id, label, member_count, created_at, project)"
        " VALUES (?, ?, ?, ?, ?)",
        [(i, label, n, now, p) for i, label, n, p in communities])
    conn.executemany("UPDATE entities SET community_id = ? WHERE id = ?",
                     [(c, e) for e, c in assignments.items()])


def community_rows(conn: sqlite3.Connection, project: str | None) -> list[dict[str, Any]]:
    """The 50 largest communities (of one project when given): id, label, size, project."""
    args = [project] if project is not None else []
    return [dict(r) for r in conn.execute(
        "SELECT id, label, member_count, project FROM entity_communities"
        f" WHERE {'project = ?' if project is not None else '1'}"
        " ORDER BY member_count DESC, id LIMIT 50", args)]


# -- bridges -----------------------------------------------------------------------------------
def cross_community_relations(conn: sqlite3.Connection,
                              project: str | None) -> list[sqlite3.Row]:
    """(source, target, source community, target community, confidence × mentions) of the
    relations whose ends are in two communities (or one in none), within one project."""
    scope, args = ("AND s.project = ?", [project]) if project is not None else ("", [])
    return conn.execute(
        "SELECT r.source_entity_id, r.target_entity_id, s.community_id, t.community_id,"
        " r.confidence * r.mentions FROM relations r"
        " JOIN entities s ON s.id = r.source_entity_id"
        " JOIN entities t ON t.id = r.target_entity_id"
        " WHERE (s.community_id IS NOT NULL OR t.community_id IS NOT NULL)"
        " AND COALESCE(s.community_id, -1) != COALESCE(t.community_id, -1)"
        f" AND s.project = t.project {scope}", args).fetchall()


def entity_communities_of(conn: sqlite3.Connection,
                          ids: list[str]) -> dict[str, tuple[str, str, int | None]]:
    """{entity id: (name, project, community)} of these entities."""
    marks = ",".join("?" * len(ids))
    return {r[0]: (r[1], r[2], r[3]) for r in conn.execute(
        f"SELECT id, name, project, community_id FROM entities WHERE id IN ({marks})", ids)}


def community_labels(conn: sqlite3.Connection, ids: list[int]) -> dict[int, str]:
    """{community id: label} of these communities."""
    marks = ",".join("?" * len(ids))
    return {r[0]: r[1] for r in conn.execute(
        f"SELECT id, label FROM entity_communities WHERE id IN ({marks})", ids)}
