"""The SQL of stated relations (`service/graph_relations.py`): stating one (a new row, or a
row the text or an LLM showed promoted), finding a stated one, and retracting it."""

from __future__ import annotations

import sqlite3
from typing import Any


def relation_of(conn: sqlite3.Connection, source: str, target: str,
                relation_type: str) -> sqlite3.Row | None:
    """The relation of this type from `source` to `target` (every column), if any."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM relations WHERE source_entity_id = ? AND target_entity_id = ?"
        " AND relation_type = ?", (source, target, relation_type)).fetchone()
    return row


def relation_by_id(conn: sqlite3.Connection, relation_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute("SELECT * FROM relations WHERE id = ?",
                                           (relation_id,)).fetchone()
    return row


def insert_stated(conn: sqlite3.Connection, relation_id: str, source: str, target: str,
                  relation_type: str, confidence: float, reason: str, note: str,
                  now: str) -> None:
    conn.execute(
        "INSERT INTO relations (id, source_entity_id, target_entity_id,"
        " relation_type, strength, mentions, confidence, reason, note,"
        " created_at, updated_at, confirmed_at) VALUES (?, ?, ?, ?, 1.0, 1, ?, ?,"
        " ?, ?, ?, ?)",
        (relation_id, source, target, relation_type, confidence, reason, note, now, now, now))


def promote_to_stated(conn: sqlite3.Connection, relation_id: str, reason: str,
                      confidence: float, note: str, was: str | None, now: str) -> None:
    """Make the row a statement; `was` (JSON of the evidence it had) goes to `derived_from`."""
    conn.execute(
        "UPDATE relations SET reason = ?, confidence = ?, boost = 0, note = ?,"
        " derived_from = COALESCE(?, derived_from), updated_at = ?,"
        " confirmed_at = ? WHERE id = ?",
        (reason, confidence, note, was, now, now, relation_id))


def stated_relation_id(conn: sqlite3.Connection, scope: tuple[str, str, str], source_key: str,
                       target_key: str, relation_type: str, reason: str) -> str | None:
    """The id of the relation of this type and reason between the entities of these
    canonical names (the source's in `scope`)."""
    row = conn.execute(
        "SELECT r.id FROM relations r JOIN entities s ON s.id = r.source_entity_id"
        " JOIN entities t ON t.id = r.target_entity_id WHERE s.project = ?"
        " AND s.agent_id = ? AND s.user_id = ? AND s.canonical_name = ?"
        " AND t.canonical_name = ? AND r.relation_type = ? AND r.reason = ?",
        (*scope, source_key, target_key, relation_type, reason)).fetchone()
    return str(row[0]) if row is not None else None


def relation_in_scope(conn: sqlite3.Connection, relation_id: str, where: str,
                      args: list[Any]) -> sqlite3.Row | None:
    """The relation (every column) when its source entity passes `where` (over `entities
    s`)."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT r.* FROM relations r JOIN entities s ON s.id = r.source_entity_id"
        f" WHERE r.id = ? AND {where}", [relation_id, *args]).fetchone()
    return row


def restore_evidence(conn: sqlite3.Connection, relation_id: str, reason: str,
                     confidence: float, boost: float, now: str) -> None:
    """A retracted statement gives its row back to the evidence it replaced."""
    conn.execute(
        "UPDATE relations SET reason = ?, confidence = ?, boost = ?, note = NULL,"
        " derived_from = NULL, updated_at = ? WHERE id = ?",
        (reason, confidence, boost, now, relation_id))


def delete_relation(conn: sqlite3.Connection, relation_id: str) -> None:
    conn.execute("DELETE FROM relations WHERE id = ?", (relation_id,))


def delete_inferred_from(conn: sqlite3.Connection, relation_id: str) -> int:
    """Remove the inferred edges that have this relation as a premise; returns how many."""
    return conn.execute(
        "DELETE FROM relations WHERE reason = 'inferred' AND derived_from IS NOT NULL"
        " AND EXISTS (SELECT 1 FROM json_each(relations.derived_from)"
        " WHERE json_each.value = ?)", (relation_id,)).rowcount


def delete_entity_if_unused(conn: sqlite3.Connection, entity_id: str) -> int:
    """Remove the entity when no memory links it and no relation is at it; 1 when removed."""
    return conn.execute(
        "DELETE FROM entities WHERE id = ?1 AND mentions <= 0 AND NOT EXISTS"
        " (SELECT 1 FROM memory_entity_mentions WHERE entity_id = ?1) AND NOT"
        " EXISTS (SELECT 1 FROM relations WHERE ?1 IN (source_entity_id,"
        " target_entity_id))", (entity_id,)).rowcount
