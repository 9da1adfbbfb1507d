"""Traversal as a recall channel (`graph.traversalChannel`, off by default: see docs/graph.md
for its measured effect): the best fused candidates seed a walk over the entity graph, and
memories of the entities it reaches join fusion as candidates of their own.

- Seeds: the top `SEED_MEMORIES` fused candidates; their linked entities start the walk.
- One hop: other memories of the seeds' entities. Two hops: memories of the entities one
  relation away (the bounded walk of `graph.walks`, at most two relations).
- Entities named by `HUB_MENTIONS` memories or more (a conversation's speakers, the user's
  own company) neither start the walk nor give memories: they connect everything.
- Each memory keeps the best path confidence that reached it (1.0 through a seed's own
  entity). Memories are live and pass the recall's filters (`where_clause`); at most
  `MAX_MEMORIES` are gathered, most confident path first, then scored by the caller.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from mnemonist.graph.walks import Limits, walk
from mnemonist.model.requests import RecallFilters
from mnemonist.store import graph_recall
from mnemonist.store.filters import where_clause

SEED_MEMORIES = 5
MAX_MEMORIES = 300
PER_ENTITY = 60
HUB_MENTIONS = 60


def seed_entities(conn: sqlite3.Connection, seqs: Iterable[int]) -> list[str]:
    return graph_recall.entities_of_seqs(conn, seqs, HUB_MENTIONS)


def candidates(conn: sqlite3.Connection, seed_seqs: list[int], filters: RecallFilters | None,
               limits: Limits) -> dict[int, float]:
    """seq -> the best path confidence that reached the memory (seeds excluded)."""
    starts = seed_entities(conn, seed_seqs)
    if not starts:
        return {}
    found = walk(conn, starts, limits)
    reach = {e: 1.0 for e in starts}
    for r in found.ordered():
        reach.setdefault(r.entity_id, r.confidence)
    hubs = graph_recall.hubs_among(conn, reach, HUB_MENTIONS)
    where, args = where_clause(filters)
    out: dict[int, float] = {}
    seeds = set(seed_seqs)
    for entity_id, confidence in sorted(reach.items(), key=lambda kv: -kv[1]):
        if entity_id in hubs:
            continue
        for seq in graph_recall.memory_seqs_naming(conn, entity_id, where, args, PER_ENTITY):
            if seq not in seeds and seq not in out:
                out[seq] = confidence
        if len(out) >= MAX_MEMORIES:
            break
    return out
