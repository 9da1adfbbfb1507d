"""Knowledge-graph reads: entities, one entity, an entity's neighbourhood, and what the walks
of `service/knowledge.py` (knowledge_expand, knowledge_expand_session, graph_impact) share.

What a caller may see of the graph (its entities' scopes, `graph/scope.py`; the memories that
support an edge, `graph/scoped.py`) is `Scoped`'s; the statements are `store/graph_reads.py`'s.
"""

from __future__ import annotations

import sqlite3
from typing import Any, cast

from mnemonist.graph.scope import entity_scope_clause
from mnemonist.graph.scoped import Scoped
from mnemonist.graph.walks import Edge, Limits, walk
from mnemonist.model.answers_graph import (
    EdgeItem,
    EntityAnswer,
    EntityAttribute,
    EntityCount,
    EntityItem,
    EntityListAnswer,
    EntityRelation,
    GraphMemory,
    NeighbourhoodAnswer,
    WalkLimits,
)
from mnemonist.model.graph import EntityListRequest, NeighbourhoodRequest
from mnemonist.model.requests import RecallFilters
from mnemonist.service.errors import NotFound
from mnemonist.service.part import Part
from mnemonist.store import graph
from mnemonist.store import graph_reads as reads
from mnemonist.store.filters import where_clause
from mnemonist.text.entities import canonical_name
from mnemonist.text.entity_words import TECH_ALIASES

#: impact tiers by path confidence (the product of the edges' confidences)
WILL_BREAK = 0.7
LIKELY_AFFECTED = 0.45
TIERS = (("will_break", "WILL BREAK"), ("likely_affected", "LIKELY AFFECTED"),
         ("may_need_testing", "MAY NEED TESTING"))
ENTITY_MEMORIES = 5


def estimate_tokens(text: str) -> int:
    """About four characters a token (English prose with this model family's tokenizers)."""
    return max(1, (len(text) + 3) // 4)


def impact_tier(confidence: float) -> tuple[str, str]:
    if confidence >= WILL_BREAK:
        return TIERS[0]
    if confidence >= LIKELY_AFFECTED:
        return TIERS[1]
    return TIERS[2]


def entity_item(row: sqlite3.Row) -> EntityItem:
    return {"id": row["id"], "name": row["name"], "type": row["entity_type"],
            "mentions": row["mentions"], "community": row["community_id"],
            "project": row["project"] or None, "agent_id": row["agent_id"] or None,
            "user_id": row["user_id"] or None}


def edge_item(edge: Edge, weight: float | None = None) -> EdgeItem:
    out: EdgeItem = {"id": edge.id, "source": edge.source, "target": edge.target,
           "type": edge.relation_type, "reason": edge.reason,
           "confidence": round(edge.confidence, 4), "mentions": edge.mentions}
    if edge.note:
        out["note"] = edge.note
    if weight is not None and abs(weight - edge.confidence) > 1e-9:
        out["counted_as"] = round(weight, 4)
    return out


class Budget:
    def __init__(self, max_tokens: int) -> None:
        self.max = max_tokens
        self.used = 0
        self.truncated = False
        self.seen: set[str] = set()

    def spend(self, text: str) -> bool:
        """Count `text` if it fits; False (and truncated) if not."""
        cost = estimate_tokens(text)
        if self.used + cost > self.max:
            self.truncated = True
            return False
        self.used += cost
        return True

    def take(self, items: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """The items not yet given, if they all fit; None (and truncated) if not."""
        new = [m for m in items if m["id"] not in self.seen]
        cost = sum(estimate_tokens(m["content"]) for m in new)
        if self.used + cost > self.max:
            self.truncated = True
            return None
        self.used += cost
        self.seen.update(m["id"] for m in new)
        return new


class GraphOps(Part):
    # -- helpers -------------------------------------------------------------------------
    def _limits(self, hops: int | None = None, min_confidence: float | None = None) -> Limits:
        t = self.core.config.memory.pipeline_v2.graph.traversal
        return Limits(
            min_confidence=t.min_confidence if min_confidence is None else min_confidence,
            max_branching=t.max_branching, max_paths=t.max_paths,
            max_hops=min(hops, t.max_hops) if hops else t.max_hops,
            timeout_ms=t.timeout_ms)

    def _candidates(self, conn: sqlite3.Connection, ref: str,
                    scoped: Scoped) -> list[sqlite3.Row]:
        """The entities `ref` (an id, or a name or technology alias in any case) can mean
        among those the caller may see: one per scope, most mentioned first."""
        where, args = scoped.entity_where, scoped.entity_args
        rows = reads.entities_of_id(conn, ref, where, args)
        if not rows:
            key = canonical_name(ref)
            alias = TECH_ALIASES.get(key)
            names = [key, *([canonical_name(alias)] if alias else [])]
            rows = reads.entities_of_names(conn, names, where, args)
        if not rows:  # a name folded into another entity (entity health: "ttls" -> "ttl")
            rows = reads.entities_of_alias(conn, canonical_name(ref), where, args)
        return rows

    def _visible_entities(self, conn: sqlite3.Connection, ref: str, scoped: Scoped,
                          filters: RecallFilters | None = None) -> list[sqlite3.Row]:
        """The entities `ref` means that the caller can reach: some memory passing the
        filters names it, or a stated or inferred relation is at it. One per scope (the
        shared one and the caller's private one may both exist), most mentioned first. An
        entity only other projects' memories, or only memories the caller may not see
        (another agent's private ones), name is not found. With no filters at all the caller
        still reads only global memories, so the check always runs."""
        rows = self._candidates(conn, ref, scoped)
        if not rows:
            raise NotFound(f"no entity {ref!r}: give an entity id or name (GET /api/entities)",
                           field="entity")
        found = [r for r in rows if scoped.count_of(r["id"]) > 0 or scoped.has_unbacked(r["id"])]
        if not found:
            raise NotFound(f"no memory passing the filters names entity {ref!r}",
                           field="entity")
        return found

    def _visible_entity(self, conn: sqlite3.Connection, ref: str, scoped: Scoped,
                        filters: RecallFilters | None = None) -> sqlite3.Row:
        return self._visible_entities(conn, ref, scoped, filters)[0]

    def _entities(self, conn: sqlite3.Connection, ids: list[str]) -> dict[str, EntityItem]:
        if not ids:
            return {}
        return {r["id"]: entity_item(r) for r in graph.entities_by_ids(conn, ids)}

    @staticmethod
    def _limits_out(limits: Limits) -> WalkLimits:
        return {"min_confidence": limits.min_confidence, "max_branching": limits.max_branching,
                "max_paths": limits.max_paths, "max_hops": limits.max_hops,
                "timeout_ms": limits.timeout_ms}

    # -- entities ------------------------------------------------------------------------
    def list_entities(self, req: EntityListRequest) -> EntityListAnswer:
        """Entities with the number of memories (passing the filters) that name them, most
        first; an entity no such memory names is not listed."""
        conn = self.core.db.reader()
        q, entity_type, community = req.q, req.entity_type, req.community
        limit, offset = req.limit, req.offset
        where, args = where_clause(req)
        scope_where, scope_args = entity_scope_clause(req)
        total, rows = reads.entities_named_by_memories(
            conn, where, args, scope_where, scope_args,
            name_part=canonical_name(q) if q else None, entity_type=entity_type,
            community=community, limit=limit, offset=offset)
        return {"entities": [EntityCount(**entity_item(r), memories=r["n"]) for r in rows],
                "total": total, "limit": limit, "offset": offset}

    def get_entity(self, ref: str, filters: RecallFilters | None = None,
                   limit: int = 20) -> EntityAnswer:
        conn = self.core.db.reader()
        scoped = Scoped(conn, filters)
        row = self._visible_entity(conn, ref, scoped, filters or RecallFilters())
        entity_id = row["id"]
        count = scoped.count_of(entity_id)
        aspects = reads.aspects_of(conn, entity_id)
        attributes: list[EntityAttribute] = [
            {"memory_id": a["memory_id"], "kind": a["kind"], "content": a["content"],
             "importance": a["importance"], "aspect": a["aspect"], "source": a["source"]}
            for a in reads.attributes_of(conn, entity_id, scoped.where, scoped.args, limit)]
        hood = walk(conn, [entity_id], self._limits(hops=1, min_confidence=0.0),
                    supported=scoped.supported)
        names = self._entities(conn, [r.entity_id for r in hood.reached.values()])
        relations = [EntityRelation(entity=names[r.entity_id], **edge_item(r.edges[-1]))
                     for r in hood.ordered() if r.entity_id in names]
        return {"entity": entity_item(row), "memories_count": count,
                "memories": cast(list[GraphMemory], scoped.memories_of(entity_id, limit)),
                "aspects": aspects, "attributes": attributes, "relations": relations}

    def neighbourhood(self, req: NeighbourhoodRequest) -> NeighbourhoodAnswer:
        """Nodes and edges around an entity (for drawing): the bounded walk, every edge
        supported by a memory passing the filters."""
        conn = self.core.db.reader()
        scoped = Scoped(conn, req)
        row = self._visible_entity(conn, req.entity, scoped, req)
        limits = self._limits(req.hops, req.min_confidence)
        hood = walk(conn, [row["id"]], limits, supported=scoped.supported,
                    prefetch=scoped.prefetch)
        reached = hood.ordered()[:req.limit]
        nodes = self._entities(conn, [row["id"], *[r.entity_id for r in reached]])
        edges: dict[str, EdgeItem] = {}
        for r in reached:
            for e in r.edges:
                if e.source in nodes and e.target in nodes:
                    edges[e.id] = edge_item(e)
        return {"center": row["id"], "nodes": list(nodes.values()), "edges": list(edges.values()),
                "paths": hood.paths, "timed_out": hood.timed_out, "limited_by": hood.limited_by,
                "limits": self._limits_out(limits)}
