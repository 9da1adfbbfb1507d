"""The graph's reads for the faces (`service/graph.py`, `service/knowledge.py`,
`graph/scoped.py`): entities by id, name or alias, what memories say about them, and the
memories that support an edge.

Every read of memories takes the caller's condition over `memories m` (`where` / `args`:
`store/filters.py`, `where_clause`), and every read of entities the scopes' condition over
`entities e` (`graph/scope.py`, `entity_scope_clause`). Links drive (`memory_entity_mentions`
CROSS JOIN `memories`): each memory is then looked up by id.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from mnemonist.store.backend import is_postgres

_MEMORY_COLUMNS = "m.id, m.content, m.type, m.importance"


# -- entities ----------------------------------------------------------------------------------
def entity_in_scope(conn: sqlite3.Connection, entity_id: str, where: str,
                    args: list[Any]) -> bool:
    return conn.execute(f"SELECT 1 FROM entities e WHERE e.id = ? AND {where}",
                        [entity_id, *args]).fetchone() is not None


def has_unbacked_relation(conn: sqlite3.Connection, entity_id: str) -> bool:
    """A stated or inferred relation is at the entity."""
    return conn.execute(
        "SELECT 1 FROM relations WHERE reason IN ('user-stated', 'inferred')"
        " AND (source_entity_id = ?1 OR target_entity_id = ?1) LIMIT 1",
        (entity_id,)).fetchone() is not None


def mention_counts(conn: sqlite3.Connection, ids: list[str]) -> dict[str, int]:
    """{entity id: mentions} of these entities (0 for one that is not there), one statement
    per 500."""
    out: dict[str, int] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found = dict(conn.execute(
            f"SELECT id, mentions FROM entities WHERE id IN ({marks})", chunk).fetchall())
        for e in chunk:
            out[e] = int(found.get(e) or 0)
    return out


def mention_count(conn: sqlite3.Connection, entity_id: str) -> int:
    """The entity's mentions (0 when it is not there)."""
    row = conn.execute("SELECT mentions FROM entities WHERE id = ?", (entity_id,)).fetchone()
    return int(row[0]) if row else 0


def entities_of_id(conn: sqlite3.Connection, entity_id: str, where: str,
                   args: list[Any]) -> list[sqlite3.Row]:
    """The entity of this id when `where` lets the caller see it (every column)."""
    return conn.execute(f"SELECT * FROM entities e WHERE e.id = ? AND {where}",
                        [entity_id, *args]).fetchall()


def entities_of_names(conn: sqlite3.Connection, names: list[str], where: str,
                      args: list[Any]) -> list[sqlite3.Row]:
    """The entities of these canonical names the caller may see, most mentioned first."""
    return conn.execute(
        f"SELECT * FROM entities e WHERE e.canonical_name IN"
        f" ({','.join('?' * len(names))}) AND {where} ORDER BY e.mentions DESC, e.id",
        [*names, *args]).fetchall()


def entities_of_alias(conn: sqlite3.Connection, key: str, where: str,
                      args: list[Any]) -> list[sqlite3.Row]:
    """The entities a name was folded into (`entity_aliases`) the caller may see."""
    return conn.execute(
        "SELECT e.* FROM entities e WHERE e.id IN (SELECT a.entity_id FROM"
        " entity_aliases a WHERE a.canonical_name = ?)"
        f" AND {where} ORDER BY e.mentions DESC, e.id",
        [key, *args]).fetchall()


def entities_named_by_memories(
    conn: sqlite3.Connection, where: str, args: list[Any], scope: str, scope_args: list[Any],
    *, name_part: str | None, entity_type: str | None, community: int | None, limit: int,
    offset: int,
) -> tuple[int, list[sqlite3.Row]]:
    """(how many, a page of) the entities memories passing `where` name, each with `n` (how
    many such memories), most first; `name_part`: a part of the canonical name."""
    extra, extra_args = [scope], list(scope_args)
    if name_part is not None:
        extra.append("e.canonical_name LIKE ? ESCAPE '\\'")
        escaped = name_part.replace("\\", "\\\\").replace("%", "\\%")
        extra_args.append("%" + escaped.replace("_", "\\_") + "%")
    if entity_type:
        extra.append("e.entity_type = ?")
        extra_args.append(entity_type)
    if community is not None:
        extra.append("e.community_id = ?")
        extra_args.append(community)
    cond = " AND ".join([where, *extra])
    base = ("FROM entities e JOIN memory_entity_mentions mm ON mm.entity_id = e.id"
            f" CROSS JOIN memories m ON m.id = mm.memory_id WHERE {cond}")
    total = conn.execute(f"SELECT COUNT(DISTINCT e.id) {base}",
                         [*args, *extra_args]).fetchone()[0]
    rows = conn.execute(
        f"SELECT e.*, COUNT(*) AS n {base} GROUP BY e.id ORDER BY n DESC, e.id"
        " LIMIT ? OFFSET ?", [*args, *extra_args, limit, offset]).fetchall()
    return int(total), rows


def aspects_of(conn: sqlite3.Connection, entity_id: str) -> list[dict[str, Any]]:
    """The entity's aspects (id, name, weight, updated_at), heaviest first."""
    return [dict(a) for a in conn.execute(
        "SELECT id, name, weight, updated_at FROM entity_aspects WHERE entity_id = ?"
        " ORDER BY weight DESC, name", (entity_id,))]


def attributes_of(conn: sqlite3.Connection, entity_id: str, where: str, args: list[Any],
                  limit: int) -> list[sqlite3.Row]:
    """What memories passing `where` state about the entity, with their aspect's name:
    constraints first, then by importance, newest first."""
    return conn.execute(
        "SELECT ea.*, asp.name AS aspect FROM entity_attributes ea"
        " CROSS JOIN memories m ON m.id = ea.memory_id"
        " LEFT JOIN entity_aspects asp ON asp.id = ea.aspect_id"
        f" WHERE ea.entity_id = ? AND {where}"
        " ORDER BY ea.kind = 'constraint' DESC, ea.importance DESC, ea.created_at DESC"
        " LIMIT ?", [entity_id, *args, limit]).fetchall()


def constraints_on(conn: sqlite3.Connection, entity_ids: list[str], where: str,
                   args: list[Any]) -> list[dict[str, Any]]:
    """The decisions standing on these entities (constraint attributes), at most 10."""
    rows = conn.execute(
        "SELECT ea.memory_id, ea.content FROM entity_attributes ea CROSS JOIN"
        f" memories m ON m.id = ea.memory_id WHERE ea.entity_id IN"
        f" ({','.join('?' * len(entity_ids))}) AND ea.kind = 'constraint' AND {where}"
        " GROUP BY ea.memory_id, ea.content"  # DISTINCT, ordered (also on PostgreSQL)
        " ORDER BY MAX(ea.importance) DESC, MAX(ea.created_at) DESC LIMIT 10",
        [*entity_ids, *args])
    return [{"memory_id": r[0], "content": r[1]} for r in rows]


def entity_ids_linked_to(conn: sqlite3.Connection, memory_id: str) -> list[str]:
    """The entities linked to the memory (in no particular order)."""
    return [r[0] for r in conn.execute(
        "SELECT entity_id FROM memory_entity_mentions WHERE memory_id = ?", (memory_id,))]


# -- memories ----------------------------------------------------------------------------------
def memory_passes(conn: sqlite3.Connection, memory_id: str, where: str,
                  args: list[Any]) -> bool:
    return conn.execute(f"SELECT 1 FROM memories m WHERE m.id = ? AND {where}",
                        [memory_id, *args]).fetchone() is not None


def memories_passing(conn: sqlite3.Connection, ids: list[str], where: str,
                     args: list[Any]) -> list[sqlite3.Row]:
    """(id, content, type, importance) of those of the memories that pass `where`, one
    statement per 500."""
    out: list[sqlite3.Row] = []
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        out += conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.id IN"
            f" ({','.join('?' * len(chunk))}) AND {where}", [*chunk, *args]).fetchall()
    return out


def memories_of_entity(conn: sqlite3.Connection, entity_id: str, where: str, args: list[Any],
                       limit: int, offset: int = 0) -> list[sqlite3.Row]:
    """(id, content, type, importance) of the memories passing `where` that name the entity,
    most important first, then newest."""
    return conn.execute(
        f"SELECT {_MEMORY_COLUMNS} FROM memory_entity_mentions mm"
        f" CROSS JOIN memories m ON m.id = mm.memory_id WHERE mm.entity_id = ?"
        f" AND {where} ORDER BY m.importance DESC, m.created_at DESC, m.id"
        " LIMIT ? OFFSET ?",
        [entity_id, *args, limit, offset],
    ).fetchall()


def count_memories_of_entity(conn: sqlite3.Connection, entity_id: str, where: str,
                             args: list[Any]) -> int:
    return int(conn.execute(
        "SELECT COUNT(*) FROM memory_entity_mentions mm CROSS JOIN memories m"
        f" ON m.id = mm.memory_id WHERE mm.entity_id = ? AND {where}",
        [entity_id, *args]).fetchone()[0])


def memories_naming_both(conn: sqlite3.Connection, rare: str, common: str, where: str,
                         args: list[Any], limit: int) -> list[sqlite3.Row]:
    """(id, content, type, importance) of the memories passing `where` linked to both
    entities, most important first. The rarer entity's links drive (CROSS JOIN keeps the
    order): a hub's thousands of links are never walked to find the few it shares."""
    return conn.execute(
        f"SELECT {_MEMORY_COLUMNS} FROM memory_entity_mentions x"
        " CROSS JOIN memory_entity_mentions y ON y.memory_id = x.memory_id"
        " AND y.entity_id = ? CROSS JOIN memories m ON m.id = x.memory_id"
        f" WHERE x.entity_id = ? AND {where}"
        " ORDER BY m.importance DESC, m.created_at DESC, m.id LIMIT ?",
        [common, rare, *args, limit],
    ).fetchall()


def memories_naming_each_pair(conn: sqlite3.Connection, entity_id: str, others: list[str],
                              others_drive: bool, where: str, args: list[Any],
                              per_pair: int) -> list[sqlite3.Row]:
    """`memories_naming_both` of `entity_id` and each of `others` in one statement: rows of
    (other, id, content, type, importance), at most `per_pair` per other, in the same order.
    `others_drive`: the others are the rarer ends (their links drive), else `entity_id`."""
    first, second = ("y", "x") if others_drive else ("x", "y")
    marks = ",".join("?" * len(others))
    on = (f"{second}.entity_id = ?" if others_drive else
          f"{second}.entity_id IN ({marks})")
    cond = (f"{first}.entity_id IN ({marks})" if others_drive else
            f"{first}.entity_id = ?")
    params = [entity_id, *others] if others_drive else [*others, entity_id]
    return conn.execute(
        "SELECT other, id, content, type, importance FROM (SELECT y.entity_id AS other,"
        " m.id, m.content, m.type, m.importance, ROW_NUMBER() OVER (PARTITION BY"
        " y.entity_id ORDER BY m.importance DESC, m.created_at DESC, m.id) AS n"
        f" FROM memory_entity_mentions {first} CROSS JOIN memory_entity_mentions"
        f" {second} ON {second}.memory_id = {first}.memory_id AND {on}"
        f" CROSS JOIN memories m ON m.id = x.memory_id WHERE {cond} AND {where})"
        " t WHERE n <= ? ORDER BY other, n",
        [*params, *args, per_pair],
    ).fetchall()


def support_at(conn: sqlite3.Connection, entity_id: str, others: list[str], where: str,
               args: list[Any], per_pair: int, counts: dict[str, int]
               ) -> dict[str, list[tuple[Any, ...]]]:
    """For each of `others`, the (id, content, type, importance) of the memories passing
    `where` linked to it and to `entity_id`: `memories_naming_both` of every pair, the same
    memories in the same order. `counts` caches entities' mentions (read and filled here):
    the rarer end of a pair drives, so a hub's links are never all walked.

    On SQLite: the missing counts, then one statement for the others rarer than the entity
    and one for the rest. On PostgreSQL, where each statement is a round trip, all in one:
    each pair's drive is chosen by the server from the two entities' counts (a lateral
    lookup per other), and the counts come back with the rows."""
    if is_postgres(conn):
        return _support_at_pg(conn, entity_id, others, where, args, per_pair, counts)
    missing = [e for e in [entity_id, *others] if e not in counts]
    counts.update(mention_counts(conn, missing))
    mine = counts[entity_id]
    rarer = [o for o in others if (counts[o], o) < (mine, entity_id)]
    commoner = [o for o in others if (counts[o], o) >= (mine, entity_id)]
    found: dict[str, list[tuple[Any, ...]]] = {o: [] for o in others}
    for group, others_drive in ((rarer, True), (commoner, False)):
        if group:
            for r in memories_naming_each_pair(conn, entity_id, group, others_drive, where,
                                               args, per_pair):
                found[r[0]].append((r[1], r[2], r[3], r[4]))
    return found


def _support_at_pg(conn: Any, entity_id: str, others: list[str], where: str,
                   args: list[Any], per_pair: int, counts: dict[str, int]
                   ) -> dict[str, list[tuple[Any, ...]]]:
    mine = "COALESCE((SELECT mentions FROM entities WHERE id = ?), 0)"
    # the other drives when (its mentions, its id) < (ours, our id), as on SQLite
    rarer = f"(COALESCE(eo.mentions, 0), o.value) < ({mine}, ?)"
    rows = conn.execute(
        f"SELECT o.value, COALESCE(eo.mentions, 0), {mine}, s.id, s.content, s.type,"
        " s.importance FROM json_each(?) o LEFT JOIN entities eo ON eo.id = o.value"
        f" LEFT JOIN LATERAL (SELECT {_MEMORY_COLUMNS}, m.created_at"
        " FROM memory_entity_mentions x JOIN memory_entity_mentions y"
        f" ON y.memory_id = x.memory_id AND y.entity_id = CASE WHEN {rarer} THEN ?"
        " ELSE o.value END JOIN memories m ON m.id = x.memory_id"
        f" WHERE x.entity_id = CASE WHEN {rarer} THEN o.value ELSE ? END AND {where}"
        " ORDER BY m.importance DESC, m.created_at DESC, m.id LIMIT ?) s ON true"
        " ORDER BY o.value, s.importance DESC, s.created_at DESC, s.id",
        [entity_id, json.dumps(others), entity_id, entity_id, entity_id, entity_id,
         entity_id, entity_id, *args, per_pair],
    ).fetchall()
    found: dict[str, list[tuple[Any, ...]]] = {o: [] for o in others}
    for r in rows:
        counts[r[0]] = int(r[1])
        counts[entity_id] = int(r[2])
        if r[3] is not None:
            found[r[0]].append((r[3], r[4], r[5], r[6]))
    return found
