"""The SQL of desire paths (`graph/co_use.py`): which entities the memories a session used
name, how many sessions used each entity and each pair (migration 29), and the `co-use`
edges learned from them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

#: the reason and type of an edge learned from use (`store.graph.REASONS`)
REASON = "co-use"
RELATION_TYPE = "related_to"


def helpful_in_session(conn: sqlite3.Connection, session_key: str) -> list[str]:
    """The memories rated helpful in this session (`memory_feedback.session_key`)."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT memory_id FROM memory_feedback WHERE session_key = ? AND helpful = 1",
        (session_key,))]


def entities_of(conn: sqlite3.Connection, memory_ids: list[str]
                ) -> list[tuple[str, int, str, str, str]]:
    """(entity id, mentions, project, agent_id, user_id) of each entity these live memories
    name, once each."""
    if not memory_ids:
        return []
    marks = ",".join("?" * len(memory_ids))
    return [(r[0], int(r[1]), r[2], r[3], r[4]) for r in conn.execute(
        "SELECT DISTINCT e.id, e.mentions, e.project, e.agent_id, e.user_id"
        " FROM memory_entity_mentions mm JOIN entities e ON e.id = mm.entity_id"
        " JOIN memories m ON m.id = mm.memory_id"
        f" WHERE mm.memory_id IN ({marks}) AND m.is_deleted = 0", memory_ids)]


def count_use(conn: sqlite3.Connection, entity_ids: Iterable[str], now: str) -> None:
    """One more session for each of these entities."""
    conn.executemany(
        "INSERT INTO entity_use (entity_id, sessions, last_at) VALUES (?, 1, ?)"
        " ON CONFLICT(entity_id) DO UPDATE SET sessions = entity_use.sessions + 1,"
        " last_at = excluded.last_at", [(e, now) for e in entity_ids])


def count_co_use(conn: sqlite3.Connection, pairs: Iterable[tuple[str, str]], now: str) -> None:
    """One more session for each pair (smaller id first)."""
    conn.executemany(
        "INSERT INTO entity_co_use (entity_a, entity_b, sessions, last_at) VALUES (?, ?, 1, ?)"
        " ON CONFLICT(entity_a, entity_b) DO UPDATE SET"
        " sessions = entity_co_use.sessions + 1, last_at = excluded.last_at",
        [(a, b, now) for a, b in pairs])


def use_counts(conn: sqlite3.Connection, entity_ids: list[str]) -> dict[str, int]:
    """Sessions that used each of these entities."""
    if not entity_ids:
        return {}
    marks = ",".join("?" * len(entity_ids))
    return {r[0]: int(r[1]) for r in conn.execute(
        f"SELECT entity_id, sessions FROM entity_use WHERE entity_id IN ({marks})", entity_ids)}


def co_use_count(conn: sqlite3.Connection, a: str, b: str) -> int:
    """Sessions that used both (smaller id first)."""
    row = conn.execute("SELECT sessions FROM entity_co_use WHERE entity_a = ? AND entity_b = ?",
                       (a, b)).fetchone()
    return int(row[0]) if row else 0


def relation_between(conn: sqlite3.Connection, a: str, b: str) -> tuple[str, str] | None:
    """(id, reason) of a relation joining the two, either way: a learned edge first."""
    row = conn.execute(
        "SELECT id, reason FROM relations WHERE (source_entity_id = ? AND target_entity_id = ?)"
        " OR (source_entity_id = ? AND target_entity_id = ?)"
        f" ORDER BY CASE WHEN reason = '{REASON}' THEN 0 ELSE 1 END, id LIMIT 1",
        (a, b, b, a)).fetchone()
    return (row[0], row[1]) if row else None


def learned_edges_at(conn: sqlite3.Connection, entity_id: str) -> list[tuple[str, float]]:
    """(relation id, strength) of the co-use edges at this entity, either end, weakest first."""
    return [(r[0], float(r[1])) for r in conn.execute(
        "SELECT id, strength FROM relations WHERE reason = ?"
        " AND (source_entity_id = ? OR target_entity_id = ?) ORDER BY strength, id",
        (REASON, entity_id, entity_id))]


def insert_learned_edge(conn: sqlite3.Connection, relation_id: str, a: str, b: str,
                        strength: float, sessions: int, confidence: float, note: str,
                        now: str) -> None:
    """A co-use edge: `strength` its NPMI, `mentions` the sessions that used both."""
    conn.execute(
        "INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
        " strength, mentions, confidence, reason, note, created_at, updated_at, confirmed_at)"
        f" VALUES (?, ?, ?, '{RELATION_TYPE}', ?, ?, ?, '{REASON}', ?, ?, ?, ?)",
        (relation_id, a, b, strength, sessions, confidence, note, now, now, now))


def refresh_learned_edge(conn: sqlite3.Connection, relation_id: str, strength: float,
                         sessions: int, note: str, now: str) -> None:
    """A co-use edge used again: its NPMI and count now, confirmed now."""
    conn.execute(
        "UPDATE relations SET strength = ?, mentions = ?, note = ?, updated_at = ?,"
        " confirmed_at = ? WHERE id = ?", (strength, sessions, note, now, now, relation_id))


def delete_relation(conn: sqlite3.Connection, relation_id: str) -> None:
    conn.execute("DELETE FROM relations WHERE id = ?", (relation_id,))


def learned_edge_count(conn: sqlite3.Connection) -> int:
    """Co-use edges in the graph."""
    return int(conn.execute("SELECT COUNT(*) FROM relations WHERE reason = ?",
                            (REASON,)).fetchone()[0])
