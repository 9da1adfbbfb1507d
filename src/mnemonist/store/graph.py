"""The knowledge graph tables: entities, relations and memory_entity_mentions (migration 2).

Entities are keyed by scope and canonical name (lowercased, whitespace collapsed): the scope is
(project, agent_id, user_id) of the memories naming the entity, '' where a memory has none
(migration 15, `store/graph_scopes.py`), so each project and each private owner has entities
of its own. An entity's `mentions`
counts the memories that mention it: it grows only when a new memory link is inserted, so
re-processing a memory is idempotent and the retention worker's decrement (one per link it
removes) keeps it exact. A relation's `mentions` counts how often the triple was extracted and
its `confidence` is the running average of those extractions.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from mnemonist.model.memory import utcnow
from mnemonist.store.row_ids import time_ordered_id
from mnemonist.text.normalize import collapse_whitespace
from mnemonist.text.prose_graph import resolve_name

#: how a relation is known -> the confidence it starts with. Traversal follows an edge only at
#: or above its minimum confidence, and impact tiers follow the product along a path.
REASONS: dict[str, float] = {
    "user-stated": 1.0,  # confirmed by a person or an agent (feedback marked it helpful)
    "multi-memory": 0.9,  # a stated dependency seen in two or more memories
    "pattern-matched": 0.8,  # "A depends on B" in one memory (text/dependencies.py)
    "extracted": 0.7,  # an LLM triple (its own confidence, averaged)
    "co-use": 0.5,  # used together in several sessions more than chance (graph/co_use.py)
    "co-occurrence": 0.4,  # named together: 0.4 + 0.1 per memory, at most 0.7
    "inferred": 0.4,  # derived from other edges
    "replay": 0.4,  # proposed by sleep replay: two memories embed alike (graph/replay.py)
    "llm-uncertain": 0.3,  # an LLM triple below 0.5 confidence
    "principle": 0.3,  # a proposed principle to its source entities (graph/principles.py)
}
#: reasons that are guesses: a relation known any other way takes the row over
PROPOSED = ("inferred", "replay")
CO_OCCURRENCE_CAP = 0.7


def co_occurrence_confidence(mentions: int) -> float:
    return min(CO_OCCURRENCE_CAP, 0.4 + 0.1 * max(0, mentions))


def canonical_name(name: str) -> str:
    return collapse_whitespace(name).lower()


#: (project, agent_id, user_id), '' for none: the scope an entity belongs to
Scope = tuple[str, str, str]
GLOBAL: Scope = ("", "", "")


def memory_scope(conn: sqlite3.Connection, memory_id: str) -> Scope:
    """The scope of a memory's entities (global for a memory that is not there)."""
    row = conn.execute("SELECT COALESCE(project, ''), COALESCE(agent_id, ''),"
                       " COALESCE(user_id, '') FROM memories WHERE id = ?",
                       (memory_id,)).fetchone()
    return (str(row[0]), str(row[1]), str(row[2])) if row else GLOBAL


@dataclass
class GraphWriteStats:
    entities_created: int = 0
    entities_matched: int = 0
    relations_created: int = 0
    relations_updated: int = 0
    mentions_linked: int = 0


_FIND = ("SELECT id FROM entities WHERE project = ? AND agent_id = ? AND user_id = ?"
         " AND canonical_name = ?")
_FIND_OR_ALIAS = (f"{_FIND} UNION ALL SELECT entity_id FROM entity_aliases WHERE project = ?"
                  " AND agent_id = ? AND user_id = ? AND canonical_name = ?")


def upsert_entity(
    conn: sqlite3.Connection, name: str, stats: GraphWriteStats, entity_type: str = "extracted",
    scope: Scope = GLOBAL,
) -> str:
    """The id of the entity of this name in `scope` (or of the entity it is an alias of),
    inserting it when new. The name is resolved as the prose reader keeps names
    (`text.prose_graph.resolve_name`): "the checkout API" is the entity "checkout API", "postgres"
    is PostgreSQL, "the worker queues" is "worker queue"."""
    display, keys = resolve_name(name)
    for key in keys:
        row = conn.execute(_FIND_OR_ALIAS, (*scope, key, *scope, key)).fetchone()
        if row is not None:
            stats.entities_matched += 1
            return str(row[0])
    canon, name = keys[0], display
    entity_id = time_ordered_id()
    now = utcnow()
    try:
        conn.execute(
            "INSERT INTO entities (id, name, canonical_name, entity_type, mentions, created_at,"
            " updated_at, project, agent_id, user_id) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
            (entity_id, collapse_whitespace(name), canon, entity_type, now, now, *scope),
        )
    except sqlite3.IntegrityError:  # another writer got there first: use its row
        row = conn.execute(_FIND, (*scope, canon)).fetchone()
        if row is None:
            raise
        stats.entities_matched += 1
        return str(row[0])
    stats.entities_created += 1
    return entity_id


def link_mention(
    conn: sqlite3.Connection,
    memory_id: str,
    entity_id: str,
    mention_text: str,
    confidence: float,
    stats: GraphWriteStats,
) -> bool:
    """INSERT OR IGNORE the memory → entity link; a new link adds one to the entity's mentions."""
    cur = conn.execute(
        "INSERT OR IGNORE INTO memory_entity_mentions (memory_id, entity_id, mention_text,"
        " confidence, created_at) VALUES (?, ?, ?, ?, ?)",
        (memory_id, entity_id, mention_text, confidence, utcnow()),
    )
    if cur.rowcount:
        conn.execute(
            "UPDATE entities SET mentions = mentions + 1, updated_at = ? WHERE id = ?",
            (utcnow(), entity_id),
        )
        stats.mentions_linked += 1
        return True
    return False


def upsert_relation(
    conn: sqlite3.Connection,
    source_id: str,
    target_id: str,
    relation_type: str,
    confidence: float,
    stats: GraphWriteStats,
    reason: str = "extracted",
) -> str:
    """Insert with strength 1.0, or count one more mention and average the confidence:
    (old_avg × n + new) / (n + 1)."""
    if reason not in REASONS:
        raise ValueError(f"unknown relation reason {reason!r}")
    now = utcnow()
    row = conn.execute(
        "SELECT id, mentions, confidence, reason FROM relations WHERE source_entity_id = ?"
        " AND target_entity_id = ? AND relation_type = ?",
        (source_id, target_id, relation_type),
    ).fetchone()
    if row is None:
        relation_id = time_ordered_id()
        conn.execute(
            "INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
            " strength, mentions, confidence, reason, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, 1.0, 1, ?, ?, ?, ?)",
            (relation_id, source_id, target_id, relation_type, confidence, reason, now, now),
        )
        stats.relations_created += 1
        return relation_id
    if row["reason"] in PROPOSED:  # evidence takes an inferred or replay row over
        conn.execute(
            "UPDATE relations SET mentions = 1, confidence = ?, reason = ?, derived_from = NULL,"
            " note = NULL, boost = 0, updated_at = ?, confirmed_at = ? WHERE id = ?",
            (confidence, reason, now, now, row["id"]))
        stats.relations_updated += 1
        return str(row["id"])
    n = int(row["mentions"])
    if row["reason"] == "user-stated":  # a statement's confidence stays; count the evidence
        conn.execute("UPDATE relations SET mentions = mentions + 1, updated_at = ? WHERE id = ?",
                     (now, row["id"]))
        stats.relations_updated += 1
        return str(row["id"])
    average = (float(row["confidence"]) * n + confidence) / (n + 1)
    conn.execute(
        "UPDATE relations SET mentions = mentions + 1, confidence = ?, updated_at = ?,"
        " confirmed_at = ? WHERE id = ?",
        (average, now, now, row["id"]),
    )
    stats.relations_updated += 1
    return str(row["id"])


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {
        "entities": conn.execute("SELECT COUNT(*) FROM entities").fetchone()[0],
        "relations": conn.execute("SELECT COUNT(*) FROM relations").fetchone()[0],
        "mentions": conn.execute("SELECT COUNT(*) FROM memory_entity_mentions").fetchone()[0],
    }


def mentions_of(conn: sqlite3.Connection,
                memory_ids: list[str]) -> dict[str, list[tuple[str, str, str | None]]]:
    """{memory id: [(entity id, entity name, attribute kind or None)]} for `memory_ids`, the
    entities each one names (the kind is what `entity_attributes` says the memory states
    about the entity: 'constraint' or 'attribute'). One query per 500 ids."""
    out: dict[str, list[tuple[str, str, str | None]]] = {}
    for start in range(0, len(memory_ids), 500):
        part = memory_ids[start:start + 500]
        rows = conn.execute(
            "SELECT mm.memory_id, e.id, e.name, a.kind FROM memory_entity_mentions mm"
            " JOIN entities e ON e.id = mm.entity_id"
            " LEFT JOIN entity_attributes a ON a.entity_id = mm.entity_id"
            " AND a.memory_id = mm.memory_id"
            f" WHERE mm.memory_id IN ({','.join('?' * len(part))})"
            " ORDER BY mm.memory_id, e.id", part)
        for r in rows:
            out.setdefault(str(r[0]), []).append((str(r[1]), str(r[2]), r[3]))
    return out


_EDGE_COLS = ("id, source_entity_id, target_entity_id, relation_type, reason, confidence,"
              " strength, mentions, note")


def best_edges_at(conn: sqlite3.Connection, entity_ids: list[str], min_confidence: float,
                  fetch: int) -> list[sqlite3.Row]:
    """The `fetch` most confident relations at each entity (confidence × strength, then
    mentions), in one statement: rows of (entity, id, source, target, type, reason,
    confidence, strength, mentions, note, rank), by entity then rank."""
    marks = ",".join("?" * len(entity_ids))
    return conn.execute(
        f"SELECT * FROM (SELECT e, {_EDGE_COLS}, ROW_NUMBER() OVER (PARTITION BY e ORDER BY"
        " confidence * strength DESC, mentions DESC, id) AS n FROM ("
        f"SELECT source_entity_id AS e, {_EDGE_COLS} FROM relations"
        f" WHERE source_entity_id IN ({marks}) AND confidence >= ?"
        f" UNION ALL SELECT target_entity_id AS e, {_EDGE_COLS} FROM relations"
        f" WHERE target_entity_id IN ({marks}) AND confidence >= ?"
        " AND source_entity_id != target_entity_id) u) t WHERE n <= ? ORDER BY e, n",
        [*entity_ids, min_confidence, *entity_ids, min_confidence, fetch],
    ).fetchall()


def shared_entity_projects(conn: sqlite3.Connection) -> list[str]:
    """The projects that have shared (no agent or user owner) entities some memory links."""
    return [str(r[0]) for r in conn.execute(
        "SELECT DISTINCT project FROM entities WHERE agent_id = '' AND user_id = ''"
        " AND mentions > 0 ORDER BY project")]


def load_graph_state(conn: sqlite3.Connection, key: str) -> Any:
    """The JSON value a graph pass keeps under `key` in `graph_state`, or None."""
    row = conn.execute("SELECT value FROM graph_state WHERE key = ?", (key,)).fetchone()
    return json.loads(row[0]) if row else None


def save_graph_state(conn: sqlite3.Connection, key: str, value: Any, now: str) -> None:
    """Replace the JSON value kept under `key` in `graph_state`."""
    conn.execute(
        "INSERT INTO graph_state (key, value, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value,"
        " updated_at = excluded.updated_at", (key, json.dumps(value), now))


def entities_by_ids(conn: sqlite3.Connection, ids: list[str]) -> list[sqlite3.Row]:
    """The entity rows of these ids (every column)."""
    return conn.execute(
        f"SELECT * FROM entities WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall()


def entity_names(conn: sqlite3.Connection, ids: list[str]) -> dict[str, str]:
    """{entity id: name} of the entities of these ids, one statement per 500."""
    names: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        names.update((str(a), str(b)) for a, b in conn.execute(
            f"SELECT id, name FROM entities WHERE id IN ({','.join('?' * len(part))})", part))
    return names


def entity_ids_named_by(conn: sqlite3.Connection, memory_id: str) -> list[str]:
    """The entities a memory names, most mentioned first."""
    return [str(r[0]) for r in conn.execute(
        "SELECT e.id FROM memory_entity_mentions mm JOIN entities e ON e.id = mm.entity_id"
        " WHERE mm.memory_id = ? ORDER BY e.mentions DESC, e.id", (memory_id,))]
