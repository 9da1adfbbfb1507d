"""The SQL of structural classification (`pipeline/structural.py`): an entity's attributes not
filed under an aspect yet, its aspects, and filing an attribute (`entity_aspects`,
`entity_attributes.aspect_id`, migration 4)."""

from __future__ import annotations

import sqlite3


def entities_with_unfiled_attributes(conn: sqlite3.Connection, memory_id: str) -> list[str]:
    """The entities the memory states something about that is not filed under an aspect."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT entity_id FROM entity_attributes WHERE memory_id = ?"
        " AND aspect_id IS NULL", (memory_id,))]


def entity_name_and_type(conn: sqlite3.Connection, entity_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT name, entity_type FROM entities WHERE id = ?", (entity_id,)).fetchone()
    return row


def unfiled_attributes(conn: sqlite3.Connection, entity_id: str, memory_id: str,
                       limit: int) -> list[sqlite3.Row]:
    """(id, content, kind) of the entity's attributes not filed yet, this memory's first."""
    return conn.execute(
        "SELECT id, content, kind FROM entity_attributes WHERE entity_id = ?"
        " AND aspect_id IS NULL ORDER BY memory_id = ? DESC, created_at LIMIT ?",
        (entity_id, memory_id, limit)).fetchall()


def aspect_names(conn: sqlite3.Connection, entity_id: str) -> list[str]:
    """The entity's aspects, heaviest first."""
    return [r[0] for r in conn.execute(
        "SELECT name FROM entity_aspects WHERE entity_id = ? ORDER BY weight DESC, name",
        (entity_id,))]


def ensure_aspect(conn: sqlite3.Connection, aspect_id: str, entity_id: str, name: str,
                  canonical: str, now: str) -> tuple[str, int]:
    """(the id of the entity's aspect of this canonical name, 1 when it was created now);
    the aspect is confirmed now (a memory filed under it: time decay counts from here)."""
    created = conn.execute(
        "INSERT OR IGNORE INTO entity_aspects (id, entity_id, name, canonical_name,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        (aspect_id, entity_id, name, canonical, now, now)).rowcount
    found = conn.execute(
        "SELECT id FROM entity_aspects WHERE entity_id = ? AND canonical_name = ?",
        (entity_id, canonical)).fetchone()[0]
    conn.execute("UPDATE entity_aspects SET confirmed_at = ? WHERE id = ?", (now, found))
    return str(found), created


def file_attribute(conn: sqlite3.Connection, attribute_id: str, aspect_id: str, kind: str,
                   now: str) -> int:
    """File the attribute under the aspect with its kind (a constraint stays a constraint);
    1 when it was."""
    return conn.execute(
        "UPDATE entity_attributes SET aspect_id = ?, updated_at = ?, kind = CASE"
        " WHEN kind = 'constraint' THEN kind ELSE ? END WHERE id = ?",
        (aspect_id, now, kind, attribute_id)).rowcount


def retype_entity(conn: sqlite3.Connection, entity_id: str, entity_type: str, now: str) -> int:
    return conn.execute(
        "UPDATE entities SET entity_type = ?, updated_at = ? WHERE id = ?",
        (entity_type, now, entity_id)).rowcount
