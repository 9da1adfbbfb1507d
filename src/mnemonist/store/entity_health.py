"""The SQL of the entity-health pass (`graph/entity_health.py`): the entities it examines and
what it reads of them, and its writes: fold one entity into another of the same scope, remove
a junk entity, and log each (migration 21).

A **fold** moves everything of the folded entity to the kept one, inside the caller's write
transaction:

- links (`memory_entity_mentions`): a memory linked to both keeps one link; the kept entity's
  `mentions` grows by the links that moved, so it stays the number of its linked memories;
- aspects: one of the same name on the kept entity takes the other's attributes and the larger
  weight; the others move;
- attributes: one per memory and entity, a constraint wins over an attribute, the larger
  importance stays;
- relations: each end that was the folded entity becomes the kept one; a relation between the
  two goes; two rows that become one are merged — a co-occurrence counts the live memories
  naming both ends (never more than the two counts together) and takes the confidence that
  count earns; another relation adds its counts, keeps the larger confidence and boost and the
  stronger reason (two single-memory statements make a `multi-memory` one);
- the folded name becomes an alias of the kept entity (`entity_aliases`), and so do the
  folded entity's own aliases: the inline linker resolves them to the kept entity.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from mnemonist.store.graph import REASONS, co_occurrence_confidence
from mnemonist.store.row_ids import time_ordered_id

STATE_KEY = "entity_health"
#: relations that no regular expression wrote: an entity holding one is not checked as junk
NOT_FROM_TEXT = ("user-stated", "extracted", "llm-uncertain")
_STATED = ("pattern-matched", "multi-memory")

_ENTITY = ("SELECT id, name, canonical_name, entity_type, mentions, project, agent_id, user_id"
           " FROM entities WHERE id = ?")


def entity(conn: sqlite3.Connection, entity_id: str) -> dict[str, Any] | None:
    row = conn.execute(_ENTITY, (entity_id,)).fetchone()
    if row is None:
        return None
    keys = ("id", "name", "canonical_name", "entity_type", "mentions", "project", "agent_id",
            "user_id")
    return dict(zip(keys, tuple(row), strict=True))


def _scope(e: dict[str, Any]) -> tuple[str, str, str]:
    return (e["project"], e["agent_id"], e["user_id"])


def aliases(conn: sqlite3.Connection, entity_id: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT canonical_name FROM entity_aliases WHERE entity_id = ? ORDER BY canonical_name",
        (entity_id,))]


def shared_live(conn: sqlite3.Connection, a: str, b: str) -> int:
    """Live memories linked to both entities."""
    return int(conn.execute(
        "SELECT COUNT(*) FROM memory_entity_mentions x CROSS JOIN memory_entity_mentions y"
        " ON y.memory_id = x.memory_id AND y.entity_id = ? CROSS JOIN memories m"
        " ON m.id = x.memory_id WHERE x.entity_id = ? AND m.is_deleted = 0",
        (b, a)).fetchone()[0])


def fold(conn: sqlite3.Connection, keep_id: str, gone_id: str, now: str) -> dict[str, Any] | None:
    """Fold entity `gone_id` into `keep_id` (same scope). None when either is gone or the
    scopes differ (nothing written)."""
    keep, gone = entity(conn, keep_id), entity(conn, gone_id)
    if keep is None or gone is None or keep_id == gone_id or _scope(keep) != _scope(gone):
        return None
    conn.execute(
        "DELETE FROM memory_entity_mentions WHERE entity_id = ? AND memory_id IN"
        " (SELECT memory_id FROM memory_entity_mentions WHERE entity_id = ?)",
        (gone_id, keep_id))
    moved = conn.execute("UPDATE memory_entity_mentions SET entity_id = ? WHERE entity_id = ?",
                         (keep_id, gone_id)).rowcount
    _fold_aspects(conn, keep_id, gone_id, now)
    _fold_attributes(conn, keep_id, gone_id, now)
    relations = _fold_relations(conn, keep_id, gone_id, now)
    conn.execute("UPDATE entity_aliases SET entity_id = ? WHERE entity_id = ?",
                 (keep_id, gone_id))
    conn.execute(
        "INSERT INTO entity_aliases (project, agent_id, user_id, canonical_name, entity_id,"
        " name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(project, agent_id,"
        " user_id, canonical_name) DO UPDATE SET entity_id = excluded.entity_id",
        (*_scope(gone), gone["canonical_name"], keep_id, gone["name"], now))
    conn.execute("UPDATE entities SET mentions = mentions + ?, updated_at = ? WHERE id = ?",
                 (moved, now, keep_id))
    conn.execute("DELETE FROM entities WHERE id = ?", (gone_id,))
    detail = {"links_moved": moved, **relations}
    log(conn, "fold", gone, now, kept=keep, detail=detail)
    return {"kept": keep["name"], "folded": gone["name"], "kept_id": keep_id,
            "folded_id": gone_id, **detail}


def _fold_aspects(conn: sqlite3.Connection, keep_id: str, gone_id: str, now: str) -> None:
    for aspect_id, name, weight in conn.execute(
            "SELECT id, canonical_name, weight FROM entity_aspects WHERE entity_id = ?",
            (gone_id,)).fetchall():
        same = conn.execute("SELECT id FROM entity_aspects WHERE entity_id = ?"
                            " AND canonical_name = ?", (keep_id, name)).fetchone()
        if same is None:
            conn.execute("UPDATE entity_aspects SET entity_id = ?, updated_at = ? WHERE id = ?",
                         (keep_id, now, aspect_id))
            continue
        conn.execute("UPDATE entity_attributes SET aspect_id = ? WHERE aspect_id = ?",
                     (same[0], aspect_id))
        conn.execute("UPDATE entity_aspects SET weight = MAX(weight, ?), updated_at = ?"
                     " WHERE id = ?", (weight, now, same[0]))
        conn.execute("DELETE FROM entity_aspects WHERE id = ?", (aspect_id,))


def _fold_attributes(conn: sqlite3.Connection, keep_id: str, gone_id: str, now: str) -> None:
    both = conn.execute(
        "SELECT g.memory_id, g.kind, g.importance FROM entity_attributes g"
        " CROSS JOIN entity_attributes k ON k.memory_id = g.memory_id AND k.entity_id = ?"
        " WHERE g.entity_id = ?", (keep_id, gone_id)).fetchall()
    for memory_id, kind, importance in both:
        conn.execute(
            "UPDATE entity_attributes SET kind = CASE WHEN ? = 'constraint' THEN 'constraint'"
            " ELSE kind END, importance = MAX(importance, ?), updated_at = ?"
            " WHERE entity_id = ? AND memory_id = ?",
            (kind, importance, now, keep_id, memory_id))
        conn.execute("DELETE FROM entity_attributes WHERE entity_id = ? AND memory_id = ?",
                     (gone_id, memory_id))
    conn.execute("UPDATE entity_attributes SET entity_id = ?, updated_at = ? WHERE entity_id = ?",
                 (keep_id, now, gone_id))


_REL = ("id", "source_entity_id", "target_entity_id", "relation_type", "mentions",
        "confidence", "reason", "boost", "note", "confirmed_at")


def _relations_at(conn: sqlite3.Connection, entity_id: str) -> list[dict[str, Any]]:
    cols = ", ".join(_REL)
    rows = conn.execute(f"SELECT {cols} FROM relations WHERE source_entity_id = ?"
                        f" UNION ALL SELECT {cols} FROM relations WHERE target_entity_id = ?"
                        " AND source_entity_id != ?", (entity_id, entity_id, entity_id))
    return [dict(zip(_REL, tuple(r), strict=True)) for r in rows.fetchall()]


def _fold_relations(conn: sqlite3.Connection, keep_id: str, gone_id: str,
                    now: str) -> dict[str, int]:
    out = {"relations_moved": 0, "relations_merged": 0, "relations_dropped": 0}
    for r in _relations_at(conn, gone_id):
        source = keep_id if r["source_entity_id"] == gone_id else r["source_entity_id"]
        target = keep_id if r["target_entity_id"] == gone_id else r["target_entity_id"]
        if source == target:  # between the two: nothing left to relate
            conn.execute("DELETE FROM relations WHERE id = ?", (r["id"],))
            out["relations_dropped"] += 1
            continue
        co = r["relation_type"] == "co_occurrence"
        if co and source > target:  # one row per unordered pair, the smaller id first
            source, target = target, source
        cols = ", ".join(_REL)
        row = conn.execute(
            f"SELECT {cols} FROM relations WHERE source_entity_id = ? AND target_entity_id = ?"
            " AND relation_type = ? AND id != ?",
            (source, target, r["relation_type"], r["id"])).fetchone()
        if row is None:
            conn.execute("UPDATE relations SET source_entity_id = ?, target_entity_id = ?,"
                         " updated_at = ? WHERE id = ?", (source, target, now, r["id"]))
            out["relations_moved"] += 1
            continue
        other = dict(zip(_REL, tuple(row), strict=True))
        conn.execute("DELETE FROM relations WHERE id = ?", (r["id"],))
        out["relations_merged"] += 1
        if co:
            count = min(int(other["mentions"]) + int(r["mentions"]),
                        shared_live(conn, source, target))
            if count <= 0:
                conn.execute("DELETE FROM relations WHERE id = ?", (other["id"],))
                continue
            conn.execute("UPDATE relations SET mentions = ?, confidence = ?, boost = 0,"
                         " updated_at = ? WHERE id = ?",
                         (count, co_occurrence_confidence(count), now, other["id"]))
            continue
        count = int(other["mentions"]) + int(r["mentions"])
        confidence = max(float(other["confidence"]), float(r["confidence"]))
        reason = max((other["reason"], r["reason"]), key=lambda x: REASONS.get(x, 0.0))
        if other["reason"] in _STATED and r["reason"] in _STATED and count >= 2:
            reason = "multi-memory"  # stated in two or more memories
            confidence = max(confidence, REASONS[reason])
        confirmed = max((c for c in (other["confirmed_at"], r["confirmed_at"]) if c),
                        default=None)
        conn.execute(
            "UPDATE relations SET mentions = ?, confidence = ?, reason = ?,"
            " boost = MAX(boost, ?), note = COALESCE(note, ?), confirmed_at = ?,"
            " updated_at = ? WHERE id = ?",
            (count, confidence, reason, float(r["boost"] or 0.0), r["note"], confirmed, now,
             other["id"]))
    return out


def remove(conn: sqlite3.Connection, entity_id: str, now: str, why: str) -> dict[str, Any] | None:
    """Remove an entity with its links, attributes, aspects, relations and aliases."""
    e = entity(conn, entity_id)
    if e is None:
        return None
    links = conn.execute("DELETE FROM memory_entity_mentions WHERE entity_id = ?",
                         (entity_id,)).rowcount
    conn.execute("DELETE FROM entity_attributes WHERE entity_id = ?", (entity_id,))
    conn.execute("DELETE FROM entity_aspects WHERE entity_id = ?", (entity_id,))
    relations = conn.execute("DELETE FROM relations WHERE source_entity_id = ?"
                             " OR target_entity_id = ?", (entity_id, entity_id)).rowcount
    conn.execute("DELETE FROM entity_aliases WHERE entity_id = ?", (entity_id,))
    conn.execute("DELETE FROM entities WHERE id = ?", (entity_id,))
    detail = {"links": links, "relations": relations, "why": why}
    log(conn, "junk", e, now, detail=detail)
    return {"name": e["name"], "id": entity_id, **detail}


def log(conn: sqlite3.Connection, action: str, e: dict[str, Any], now: str, *,
        kept: dict[str, Any] | None = None, detail: dict[str, Any] | None = None) -> None:
    conn.execute(
        "INSERT INTO entity_health_log (id, action, entity_id, name, kept_id, kept_name,"
        " project, agent_id, user_id, mentions, detail, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (time_ordered_id(), action, e["id"], e["name"], kept and kept["id"],
         kept and kept["name"], *_scope(e), int(e["mentions"]),
         json.dumps(detail or {}, sort_keys=True), now))


def load_state(conn: sqlite3.Connection) -> dict[str, Any]:
    row = conn.execute("SELECT value FROM graph_state WHERE key = ?", (STATE_KEY,)).fetchone()
    return json.loads(row[0]) if row else {}


def save_state(conn: sqlite3.Connection, state: dict[str, Any], now: str) -> None:
    conn.execute(
        "INSERT INTO graph_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key)"
        " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (STATE_KEY, json.dumps(state, sort_keys=True), now))


def counts(conn: sqlite3.Connection, project: str | None = None) -> dict[str, int]:
    """Actions logged so far, by action (of one project when given)."""
    where, args = ("WHERE project = ?", [project]) if project is not None else ("", [])
    return {str(a): int(n) for a, n in conn.execute(
        f"SELECT action, COUNT(*) FROM entity_health_log {where} GROUP BY action", args)}


def recent(conn: sqlite3.Connection, limit: int,
           project: str | None = None) -> list[dict[str, Any]]:
    """The latest actions on shared entities (a private entity's name is its owner's: like a
    community label, what is listed here any operator reads)."""
    where, args = ("AND project = ?", [project]) if project is not None else ("", [])
    rows = conn.execute(
        "SELECT action, name, kept_name, project, mentions, detail, created_at"
        f" FROM entity_health_log WHERE agent_id = '' AND user_id = '' {where}"
        " ORDER BY id DESC LIMIT ?", [*args, limit]).fetchall()
    return [{"action": r[0], "name": r[1], "kept": r[2], "project": r[3] or None,
             "mentions": r[4], "detail": json.loads(r[5] or "{}"), "at": r[6]} for r in rows]


# -- the reads of the pass (`graph/entity_health.py`) -----------------------------------------
_COLUMNS = "id, name, canonical_name, entity_type, mentions, project, agent_id, user_id"


def entities_after(conn: sqlite3.Connection, cursor: str, limit: int) -> list[sqlite3.Row]:
    """The next `limit` entities after the cursor, in the order they were created."""
    return conn.execute(f"SELECT {_COLUMNS} FROM entities WHERE id > ? ORDER BY id"
                        " LIMIT ?", (cursor, limit)).fetchall()


def entities_in_scope(conn: sqlite3.Connection,
                      scope: tuple[str, str, str]) -> list[sqlite3.Row]:
    """Every entity of one scope (project, agent, user), oldest first."""
    return conn.execute(
        f"SELECT {_COLUMNS} FROM entities WHERE project = ? AND agent_id = ?"
        " AND user_id = ? ORDER BY id", scope).fetchall()


def held_by_relation_not_from_text(conn: sqlite3.Connection, entity_id: str) -> bool:
    """A stated or LLM-extracted relation is at the entity (`NOT_FROM_TEXT`)."""
    return conn.execute(
        "SELECT 1 FROM relations WHERE (source_entity_id = ?1 OR target_entity_id = ?1)"
        f" AND reason IN ({', '.join(repr(r) for r in NOT_FROM_TEXT)}) LIMIT 1",
        (entity_id,)).fetchone() is not None


def links_with_texts(conn: sqlite3.Connection, entity_id: str,
                     limit: int) -> list[sqlite3.Row]:
    """(memory id, link confidence, memory text or None) of the entity's links."""
    return conn.execute(
        "SELECT mm.memory_id, mm.confidence, m.content FROM memory_entity_mentions mm"
        " LEFT JOIN memories m ON m.id = mm.memory_id WHERE mm.entity_id = ?"
        " ORDER BY mm.memory_id LIMIT ?", (entity_id, limit)).fetchall()


def linked_memory_ids(conn: sqlite3.Connection, entity_id: str) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT memory_id FROM memory_entity_mentions WHERE entity_id = ?", (entity_id,))}


def report_counts(conn: sqlite3.Connection, cursor: str,
                  project: str | None) -> dict[str, int]:
    """Entities not examined yet (after the cursor), orphans the retention sweep removes (no
    link left, no stated relation holding them) and aliases, of one project when given."""
    scope, args = ("e.project = ?", [project]) if project is not None else ("1 = 1", [])

    def one(sql: str, *before: Any) -> int:
        return int(conn.execute(sql, [*before, *args]).fetchone()[0])

    return {
        "pending": one(f"SELECT COUNT(*) FROM entities e WHERE e.id > ? AND {scope}", cursor),
        "orphans": one("SELECT COUNT(*) FROM entities e WHERE e.mentions <= 0 AND NOT EXISTS"
                       " (SELECT 1 FROM relations r WHERE r.reason = 'user-stated' AND e.id IN"
                       f" (r.source_entity_id, r.target_entity_id)) AND {scope}"),
        "aliases": one(f"SELECT COUNT(*) FROM entity_aliases e WHERE {scope}"),
    }
