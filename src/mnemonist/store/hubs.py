"""The mention counts of entities that recall's hub dampening reads (search/dampening.py):
the percentile above which an entity is a hub, and the entities each hit is linked to."""

from __future__ import annotations

import sqlite3
from typing import Any

#: hubs are judged among names and technologies: noun phrases ("the checkout API") are many
#: and mostly named once, and would move the percentile and shelter every memory naming one
#: (LoCoMo: Recall@10 0.850 with them left out, 0.825 with them in)
_NAMES = "entity_type != 'phrase'"


def data_version(conn: sqlite3.Connection) -> int:
    """SQLite's `PRAGMA data_version`: it moves when another connection commits."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def mention_percentile(conn: sqlite3.Connection, percentile: float) -> int | None:
    """The P-th percentile (lower) of the named entities' mention counts; None without
    entities or without the graph tables.

    Both reads go through the named entities' index of counts (migration 28): the count
    walks that index, not the table (SQLite's planner chose a scan of every entity: 12 ms at
    125,000 entities, 3 ms by the index), and the percentile is read from the top end, past
    the few hubs above it instead of the many counts below (0.3 ms instead of 2.4 at P 0.9).
    On SQLite a reader reads them again after every commit (search/dampening.py), which a
    prompt hook makes on every prompt."""
    try:
        n = conn.execute(
            f"SELECT COUNT(*) FROM entities INDEXED BY entities_named_mentions WHERE {_NAMES}"
        ).fetchone()[0]
        if not n:
            return None
        row = conn.execute(
            f"SELECT mentions FROM entities WHERE {_NAMES} ORDER BY mentions DESC"
            " LIMIT 1 OFFSET ?", ((n - 1) - int(percentile * (n - 1)),),
        ).fetchone()
    except sqlite3.OperationalError:
        return None  # no graph tables
    return None if row is None else int(row[0])


def linked_mentions(conn: sqlite3.Connection, memory_ids: list[str]) -> list[Any]:
    """(memory id, mention count) of each named entity linked to one of the memories."""
    marks = ",".join("?" * len(memory_ids))
    return conn.execute(
        f"SELECT mm.memory_id, e.mentions FROM memory_entity_mentions mm"
        f" JOIN entities e ON e.id = mm.entity_id WHERE mm.memory_id IN ({marks})"
        f" AND {_NAMES.replace('entity_type', 'e.entity_type')}",
        memory_ids,
    ).fetchall()
