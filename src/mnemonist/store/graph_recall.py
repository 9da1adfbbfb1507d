"""The graph's reads during recall: the graph boost's seeds, neighbours and their memories
(`graph/boost.py`), and the traversal channel's seeds, hubs and memories (`graph/channel.py`).

Memories are always read through `memory_entity_mentions` CROSS JOIN `memories`: the links
drive, each memory is then looked up by id (left to itself the planner walks every live memory
to apply the recall's filters first). `where` / `args` is the recall's condition over
`memories m` (`store/filters.py`, `where_clause`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable
from typing import Any

_NO_PHRASE = " AND e.entity_type != 'phrase'"


# -- the graph boost ---------------------------------------------------------------------------
def entities_named(conn: sqlite3.Connection, names: list[str], scope: str, args: list[Any],
                   phrases: bool, limit: int) -> list[str]:
    """Entities of these canonical names that `scope` (over `entities e`) lets the recall see,
    most mentioned first; noun-phrase entities only with `phrases`."""
    rows = conn.execute(
        "SELECT e.id FROM entities e WHERE e.canonical_name IN (SELECT value FROM json_each(?))"
        f" AND {scope}{'' if phrases else _NO_PHRASE} ORDER BY e.mentions DESC, e.id LIMIT ?",
        [json.dumps(names), *args, limit],
    )
    return [r[0] for r in rows]


def strongest_neighbours(conn: sqlite3.Connection, seeds: list[str], phrases: bool,
                         limit: int) -> list[str]:
    """Entities one relation away from the seeds, either way, by summed relation mentions."""
    ids = json.dumps(seeds)
    kind = "" if phrases else (" AND NOT EXISTS (SELECT 1 FROM entities x WHERE x.id = n.e"
                               " AND x.entity_type = 'phrase')")
    rows = conn.execute(
        "SELECT e FROM ("
        " SELECT target_entity_id AS e, mentions FROM relations"
        "  WHERE source_entity_id IN (SELECT value FROM json_each(?1))"
        " UNION ALL"
        " SELECT source_entity_id AS e, mentions FROM relations"
        "  WHERE target_entity_id IN (SELECT value FROM json_each(?1))"
        f") n WHERE e NOT IN (SELECT value FROM json_each(?1)){kind}"
        " GROUP BY e ORDER BY SUM(mentions) DESC, e LIMIT ?2",
        (ids, limit),
    )
    return [r[0] for r in rows]


def memories_linked_to(
    conn: sqlite3.Connection,
    entity_ids: list[str],
    where: str,
    args: list[Any],
    candidates: Collection[str] | None,
    limit: int,
    exclude: list[str] | None = None,
) -> list[str]:
    """Ids of memories passing `where` linked to any of the entities; with `candidates`, only
    among those ids."""
    # With candidates, each candidate's few links are read (`+` keeps the entity list off the
    # index: 200 candidates x 50 entities would be 10,000 probes); without, the entity index
    # finds the links.
    sql = ("SELECT DISTINCT mm.memory_id FROM memory_entity_mentions mm"
           " CROSS JOIN memories m ON m.id = mm.memory_id WHERE ")
    ents = json.dumps(entity_ids)
    if candidates is not None:
        sql += ("mm.memory_id IN (SELECT value FROM json_each(?))"
                " AND +mm.entity_id IN (SELECT value FROM json_each(?))")
        params: list[Any] = [json.dumps(list(candidates)), ents]
    else:
        sql += "mm.entity_id IN (SELECT value FROM json_each(?))"
        params = [ents]
    if exclude:
        sql += " AND mm.memory_id NOT IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(exclude))
    sql += f" AND {where} LIMIT ?"
    return [r[0] for r in conn.execute(sql, [*params, *args, limit])]


# -- the traversal channel ---------------------------------------------------------------------
def entities_of_seqs(conn: sqlite3.Connection, seqs: Iterable[int],
                     hub_mentions: int) -> list[str]:
    """The entities the memories of these seqs name, hubs (`hub_mentions` or more) left out."""
    rows = conn.execute(
        "SELECT DISTINCT mm.entity_id FROM memories m JOIN memory_entity_mentions mm"
        " ON mm.memory_id = m.id JOIN entities e ON e.id = mm.entity_id"
        " WHERE m.seq IN (SELECT value FROM json_each(?)) AND e.mentions < ?",
        (json.dumps(list(seqs)), hub_mentions))
    return [r[0] for r in rows]


def hubs_among(conn: sqlite3.Connection, entity_ids: Iterable[str],
               hub_mentions: int) -> set[str]:
    """Those of the entities that `hub_mentions` memories or more name."""
    return {r[0] for r in conn.execute(
        "SELECT id FROM entities WHERE id IN (SELECT value FROM json_each(?)) AND mentions >= ?",
        (json.dumps(list(entity_ids)), hub_mentions))}


def memory_seqs_naming(conn: sqlite3.Connection, entity_id: str, where: str, args: list[Any],
                       limit: int) -> list[int]:
    """Seqs of the memories passing `where` that name the entity, most important first."""
    rows = conn.execute(
        "SELECT m.seq FROM memory_entity_mentions mm CROSS JOIN memories m"
        f" ON m.id = mm.memory_id WHERE mm.entity_id = ? AND {where}"
        " ORDER BY m.importance DESC, m.seq DESC LIMIT ?",
        [entity_id, *args, limit])
    return [seq for (seq,) in rows]
