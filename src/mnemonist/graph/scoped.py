"""The graph as one caller may see it: `Scoped` holds the caller's recall filters over one
read connection, says which entities it may see and which memories support an edge (cached
per edge), and is what a walk asks (`supported`, `prefetch`) before it takes an edge.

An entity belongs to one scope (project, agent_id, user_id: migration 15), and a read sees
only the entities of scopes it may see (`graph/scope.py`). Every memory these reads return or
count passes the caller's recall filters too (`where_clause`, the condition recall uses), and
an edge is followed only when a memory that passes them supports it (links both ends) — or,
for an edge no memory backs (`user-stated`, `inferred`, `replay`, `co-use`), when both its
ends are visible entities.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.graph.scope import entity_scope_clause
from mnemonist.graph.walks import Edge
from mnemonist.model.requests import RecallFilters
from mnemonist.store import graph_reads as reads
from mnemonist.store.filters import where_clause

SUPPORT_PER_EDGE = 3
#: relations no memory backs: followed when both ends are entities the caller may see (a
#: replay or co-use edge joins entities that no one memory names together; both are of one
#: scope)
UNBACKED = ("user-stated", "inferred", "replay", "co-use")
MEMORY_CHARS = 1000


def memory_item(row: sqlite3.Row | tuple[Any, ...]) -> dict[str, Any]:
    return {"id": row[0], "content": str(row[1])[:MEMORY_CHARS], "type": row[2],
            "importance": row[3]}


class Scoped:
    """The caller's filters over one read connection, with the support of each edge cached."""

    def __init__(self, conn: sqlite3.Connection, filters: RecallFilters | None) -> None:
        self.conn = conn
        self.where, self.args = where_clause(filters)
        self.entity_where, self.entity_args = entity_scope_clause(filters)
        self._support: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._counts: dict[str, int] = {}
        self._visible: dict[str, bool] = {}

    def entity_visible(self, entity_id: str) -> bool:
        """The entity is in a scope the caller may see (and a project it asks for)."""
        if entity_id not in self._visible:
            self._visible[entity_id] = reads.entity_in_scope(
                self.conn, entity_id, self.entity_where, self.entity_args)
        return self._visible[entity_id]

    def has_unbacked(self, entity_id: str) -> bool:
        """A stated or inferred relation is at the entity."""
        return reads.has_unbacked_relation(self.conn, entity_id)

    def supporting(self, a: str, b: str, limit: int = SUPPORT_PER_EDGE) -> list[dict[str, Any]]:
        """Memories (passing the filters) linked to both entities, most important first."""
        key = (a, b) if a < b else (b, a)
        if key not in self._support:
            # the rarer entity's links drive: a hub's thousands of links are never walked to
            # find the few it shares with a rare one
            rare, common = sorted((a, b), key=lambda e: (self._mentions(e), e))
            rows = reads.memories_naming_both(self.conn, rare, common, self.where, self.args,
                                              limit)
            self._support[key] = [memory_item(r) for r in rows]
        return self._support[key]

    def prefetch(self, entity_id: str, edges: list[Edge]) -> None:
        """The support of every edge at `entity_id` that a walk may take, in one statement
        on PostgreSQL (two or three on SQLite) instead of one or two per edge: on PostgreSQL
        each statement is a round trip, and `graph_impact` over a hub paid one per
        neighbour. The same memories, in the same order, as `supporting` finds edge by
        edge (`store.graph_reads.support_at`)."""
        others = sorted({e.other(entity_id) for e in edges if e.reason not in UNBACKED}
                        - {b for a, b in self._support if a == entity_id}
                        - {a for a, b in self._support if b == entity_id})
        if not others:
            return
        found = reads.support_at(self.conn, entity_id, others, self.where, self.args,
                                 SUPPORT_PER_EDGE, self._counts)
        for other, rows in found.items():
            key = (entity_id, other) if entity_id < other else (other, entity_id)
            self._support[key] = [memory_item(r) for r in rows]

    def _mentions(self, entity_id: str) -> int:
        if entity_id not in self._counts:
            self._counts[entity_id] = reads.mention_count(self.conn, entity_id)
        return self._counts[entity_id]

    def supported(self, edge: Edge) -> bool:
        if edge.reason in UNBACKED:
            return self.entity_visible(edge.source) and self.entity_visible(edge.target)
        return bool(self.supporting(edge.source, edge.target))

    def memories_of(self, entity_id: str, limit: int, offset: int = 0) -> list[dict[str, Any]]:
        rows = reads.memories_of_entity(self.conn, entity_id, self.where, self.args, limit,
                                        offset)
        return [memory_item(r) for r in rows]

    def count_of(self, entity_id: str) -> int:
        return reads.count_memories_of_entity(self.conn, entity_id, self.where, self.args)
