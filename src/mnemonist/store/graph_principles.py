"""The SQL of principles (`graph/principles.py`, `service/principles.py`): the candidates'
entities, memories and vectors, the `principles` rows (migration 25), and a principle's
entity, links and relations as it is proposed, confirmed or rejected."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

_COLUMNS = ("SELECT id, entity_id, statement, reason, status, project, sources, evidence,"
            " model, similarity, created_at, reviewed_at, review_reason FROM principles")


# -- candidates --------------------------------------------------------------------------------
def candidate_entities(conn: sqlite3.Connection, project: str, principle_type: str,
                       limit: int) -> list[sqlite3.Row]:
    """(id, name, community) of the project's most mentioned shared live entities, neither
    principles nor noun phrases."""
    return conn.execute(
        "SELECT id, name, community_id FROM entities WHERE project = ? AND agent_id = ''"
        " AND user_id = '' AND mentions > 0 AND entity_type NOT IN (?, 'phrase')"
        " ORDER BY mentions DESC, id LIMIT ?", (project, principle_type, limit)
    ).fetchall()


def shared_memory_vectors(conn: sqlite3.Connection, entity_ids: list[str],
                          model: str) -> Iterable[tuple[str, str, str, bytes, int]]:
    """(entity, memory id, text, vector blob, dimensions) of the live shared memories linked
    to these entities that have a vector of `model`, by entity, newest memory first."""
    marks = ",".join("?" * len(entity_ids))
    return conn.execute(
        "SELECT mm.entity_id, m.id, m.content, v.vector, v.dimensions"
        " FROM memory_entity_mentions mm JOIN memories m ON m.id = mm.memory_id"
        " JOIN embeddings v ON v.content_hash = m.content_hash AND v.model = ?"
        f" WHERE mm.entity_id IN ({marks}) AND m.is_deleted = 0"
        " AND m.superseded_at IS NULL AND COALESCE(m.agent_id, '') = ''"
        " AND COALESCE(m.user_id, '') = '' ORDER BY mm.entity_id, m.id DESC",
        (model, *entity_ids))


def related_pairs(conn: sqlite3.Connection, entity_ids: list[str]) -> set[frozenset[str]]:
    """The pairs of entities a relation joins (either way), one of them among these."""
    marks = ",".join("?" * len(entity_ids))
    return {frozenset((str(a), str(b))) for a, b in conn.execute(
        "SELECT source_entity_id, target_entity_id FROM relations"
        f" WHERE source_entity_id IN ({marks}) OR target_entity_id IN ({marks})",
        (*entity_ids, *entity_ids))}


def group_keys(conn: sqlite3.Connection) -> set[str]:
    """The groups of entities already put to the LLM (any status)."""
    return {str(r[0]) for r in conn.execute("SELECT group_key FROM principles")}


# -- proposing ---------------------------------------------------------------------------------
def group_settled(conn: sqlite3.Connection, group_key: str) -> bool:
    return conn.execute("SELECT 1 FROM principles WHERE group_key = ?",
                        (group_key,)).fetchone() is not None


def name_taken(conn: sqlite3.Connection, scope: tuple[str, str, str], canonical: str) -> bool:
    """An entity of this canonical name exists in the scope."""
    return conn.execute("SELECT 1 FROM entities WHERE project = ? AND agent_id = ? AND"
                        " user_id = ? AND canonical_name = ?",
                        (*scope, canonical)).fetchone() is not None


def live_memory_ids(conn: sqlite3.Connection, ids: list[str]) -> set[str]:
    """Those of the memories that are neither deleted nor superseded."""
    return {str(r[0]) for r in conn.execute(
        "SELECT id FROM memories WHERE is_deleted = 0 AND superseded_at IS NULL AND id IN"
        f" ({','.join('?' * len(ids))})", ids)}


def present_entity_ids(conn: sqlite3.Connection, ids: list[str]) -> set[str]:
    """Those of the entities still there."""
    return {str(r[0]) for r in conn.execute(
        f"SELECT id FROM entities WHERE id IN ({','.join('?' * len(ids))})", ids)}


def insert_principle_entity(conn: sqlite3.Connection, entity_id: str, statement: str,
                            canonical: str, entity_type: str, scope: tuple[str, str, str],
                            now: str) -> None:
    conn.execute(
        "INSERT INTO entities (id, name, canonical_name, entity_type, mentions, created_at,"
        " updated_at, project, agent_id, user_id) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
        (entity_id, statement, canonical, entity_type, now, now, *scope))


def insert_proposed(conn: sqlite3.Connection, entity_id: str, group_key: str, statement: str,
                    reason: str, project: str, sources: list[str], evidence: list[str],
                    model: str | None, similarity: float, now: str) -> None:
    """The `principles` row of a proposed principle (its id is its entity's)."""
    conn.execute(
        "INSERT INTO principles (id, entity_id, group_key, statement, reason, status,"
        " project, sources, evidence, model, similarity, created_at)"
        " VALUES (?, ?, ?, ?, ?, 'proposed', ?, ?, ?, ?, ?, ?)",
        (entity_id, entity_id, group_key, statement, reason, project,
         json.dumps(sources), json.dumps(evidence), model, similarity, now))


def insert_unstated(conn: sqlite3.Connection, principle_id: str, group_key: str, reason: str,
                    project: str, sources: list[str], evidence: list[str],
                    model: str | None, similarity: float, now: str) -> None:
    """The `principles` row of a group the LLM saw no pattern in (never put again)."""
    conn.execute(
        "INSERT INTO principles (id, entity_id, group_key, statement, reason, status,"
        " project, sources, evidence, model, similarity, created_at)"
        " VALUES (?, NULL, ?, '', ?, 'unstated', ?, ?, ?, ?, ?, ?)",
        (principle_id, group_key, reason, project, json.dumps(sources),
         json.dumps(evidence), model, similarity, now))


# -- reading and reviewing ---------------------------------------------------------------------
def listed(conn: sqlite3.Connection, status: str | None, limit: int,
           offset: int) -> list[sqlite3.Row]:
    """Principles of one status (else every one but `unstated`), newest first."""
    where, args = (("status = ?", [status]) if status is not None
                   else ("status != 'unstated'", []))
    return conn.execute(
        f"{_COLUMNS} WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
        (*args, limit, offset)).fetchall()


def latest_proposed(conn: sqlite3.Connection, limit: int) -> list[sqlite3.Row]:
    return conn.execute(
        f"{_COLUMNS} WHERE status = 'proposed' ORDER BY created_at DESC, id DESC LIMIT ?",
        (limit,)).fetchall()


def counts_by_status(conn: sqlite3.Connection) -> dict[str, int]:
    return {str(r[0]): int(r[1]) for r in conn.execute(
        "SELECT status, COUNT(*) FROM principles GROUP BY status")}


def principle(conn: sqlite3.Connection, principle_id: str) -> sqlite3.Row | None:
    """The principle of this id (an `unstated` group is none)."""
    row: sqlite3.Row | None = conn.execute(f"{_COLUMNS} WHERE id = ? AND status != 'unstated'",
                                           (principle_id,)).fetchone()
    return row


def review_state(conn: sqlite3.Connection, principle_id: str) -> tuple[str, str | None] | None:
    """(status, entity id) of the principle, None when there is none."""
    row = conn.execute("SELECT status, entity_id FROM principles WHERE id = ? AND"
                       " status != 'unstated'", (principle_id,)).fetchone()
    return (row[0], row[1]) if row is not None else None


def entity_exists(conn: sqlite3.Connection, entity_id: str) -> bool:
    return conn.execute("SELECT 1 FROM entities WHERE id = ?",
                        (entity_id,)).fetchone() is not None


def confirm(conn: sqlite3.Connection, principle_id: str, entity_id: str, relation_type: str,
            confidence: float, why: str | None, now: str) -> None:
    """A proposed principle confirmed: its relations become stated, its row `confirmed`."""
    conn.execute(
        "UPDATE relations SET reason = 'user-stated', confidence = ?,"
        " updated_at = ?, confirmed_at = ? WHERE source_entity_id = ?"
        " AND relation_type = ?",
        (confidence, now, now, entity_id, relation_type))
    conn.execute("UPDATE principles SET status = 'confirmed', reviewed_at = ?,"
                 " review_reason = ? WHERE id = ?", (now, why, principle_id))


def remove_principle_entity(conn: sqlite3.Connection, entity_id: str,
                            entity_type: str) -> None:
    """A rejected principle's relations, links and entity go."""
    conn.execute("DELETE FROM relations WHERE source_entity_id = ?"
                 " OR target_entity_id = ?", (entity_id, entity_id))
    conn.execute("DELETE FROM memory_entity_mentions WHERE entity_id = ?",
                 (entity_id,))
    conn.execute("DELETE FROM entities WHERE id = ? AND entity_type = ?",
                 (entity_id, entity_type))


def mark_rejected(conn: sqlite3.Connection, principle_id: str, why: str | None,
                  now: str) -> None:
    conn.execute("UPDATE principles SET status = 'rejected', entity_id = NULL,"
                 " reviewed_at = ?, review_reason = ? WHERE id = ?",
                 (now, why, principle_id))

