"""`knowledge_expand`, `knowledge_expand_session` and `graph_impact`: bounded walks from an
entity, a memory or a session, answered with the memories that support each edge (within a
token budget) or tiered by path confidence. Scoping and helpers: `service/graph.py`."""

from __future__ import annotations

import sqlite3
from typing import Any, cast

from mnemonist.graph.scoped import Scoped, memory_item
from mnemonist.graph.walks import Reach, walk
from mnemonist.model.answers_graph import (
    EntityItem,
    ExpandAnswer,
    ExpandNeighbour,
    ExpandSessionAnswer,
    GraphMemory,
    ImpactAnswer,
    ImpactItem,
    SessionEntity,
    SessionGraphMemory,
    SessionNeighbour,
)
from mnemonist.model.graph import ExpandRequest, ExpandSessionRequest, ImpactRequest
from mnemonist.service.errors import NotFound
from mnemonist.service.graph import (
    ENTITY_MEMORIES,
    TIERS,
    Budget,
    GraphOps,
    edge_item,
    entity_item,
    impact_tier,
)
from mnemonist.store import graph, memories
from mnemonist.store import graph_reads as reads
from mnemonist.store import sessions as session_store


def _name(entity_id: str, *found: dict[str, EntityItem]) -> str | None:
    """The entity's name from the first of `found` that holds it, or None."""
    for items in found:
        if entity_id in items:
            return items[entity_id]["name"]
    return None


class KnowledgeOps(GraphOps):
    # -- knowledge_expand --------------------------------------------------------------
    def knowledge_expand(self, req: ExpandRequest) -> ExpandAnswer:
        conn = self.core.db.reader()
        scoped = Scoped(conn, req)
        budget = Budget(req.max_tokens)
        start_memory = None
        if req.memory_id is not None:
            mid = self.core.resolve_id(req.memory_id, conn)
            m = memories.get(conn, mid)
            visible = m is not None and reads.memory_passes(conn, mid, scoped.where,
                                                            scoped.args)
            if m is None or not visible:
                raise NotFound(f"no memory {req.memory_id} passing the filters",
                               field="memory_id")
            starts = graph.entity_ids_named_by(conn, mid)
            start_memory = cast(list[GraphMemory] | None, budget.take(
                [memory_item((m.id, m.content, m.type, m.importance))]))
        else:
            starts = [r["id"] for r in self._visible_entities(conn, req.entity or "", scoped,
                                                               req)]
        limits = self._limits(req.hops, req.min_confidence)
        found = walk(conn, starts, limits, supported=scoped.supported,
                     prefetch=scoped.prefetch)
        start_entities = self._entities(conn, starts)
        own: list[GraphMemory] = []
        if req.memory_id is None:
            took = budget.take(scoped.memories_of(starts[0], ENTITY_MEMORIES))
            own = cast(list[GraphMemory], took or [])
        constraints = [c for c in self._constraints(conn, scoped, starts)
                       if budget.spend(c["content"])]
        reached = found.ordered()
        names = self._entities(conn, [r.entity_id for r in reached])
        neighbours: list[ExpandNeighbour] = []
        for r in reached:
            support = scoped.supporting(r.path[-2], r.entity_id)
            shown = budget.take(support)
            if shown is None:
                break
            neighbours.append({
                "entity": names.get(r.entity_id), "hops": r.hops,
                "confidence": round(r.confidence, 4),
                "via": [_name(e, names, start_entities) for e in r.path],
                "relation": edge_item(r.edges[-1]),
                "supporting_memory_ids": [m["id"] for m in support],
                "memories": cast(list[GraphMemory], shown),
            })
        return {
            "entities": list(start_entities.values()),
            "memory": start_memory[0] if start_memory else None,
            "memories": own, "constraints": constraints, "neighbours": neighbours,
            "tokens": budget.used, "max_tokens": budget.max, "truncated": budget.truncated,
            "reached": len(reached), "paths": found.paths, "timed_out": found.timed_out,
            "limited_by": found.limited_by, "limits": self._limits_out(limits),
        }

    @staticmethod
    def _constraints(conn: sqlite3.Connection, scoped: Scoped,
                     entity_ids: list[str]) -> list[dict[str, Any]]:
        """The decisions standing on these entities (constraint attributes)."""
        if not entity_ids:
            return []
        return reads.constraints_on(conn, entity_ids, scoped.where, scoped.args)

    def knowledge_expand_session(self, req: ExpandSessionRequest) -> ExpandSessionAnswer:
        """What a session was given and used, the entities those memories name, and each
        entity's strongest neighbours, within the token budget."""
        conn = self.core.db.reader()
        rows = session_store.session_memories(conn, req.session_key)
        if not rows and session_store.get_state(conn, req.session_key) is None:
            raise NotFound(f"no session {req.session_key}", field="session_key")
        scoped = Scoped(conn, req)
        by_id = {r["memory_id"]: r for r in rows}
        visible = [memory_item(r) for r in reads.memories_passing(conn, list(by_id), scoped.where,
                                                                  scoped.args)]
        visible.sort(key=lambda m: (-by_id[m["id"]]["was_injected"],
                                    -by_id[m["id"]]["fts_hit_count"], m["id"]))
        budget = Budget(req.max_tokens)
        given: list[SessionGraphMemory] = []
        for m in visible:
            if budget.take([m]) is None:
                break
            r = by_id[m["id"]]
            given.append(cast(SessionGraphMemory, {
                **m, "injected": bool(r["was_injected"]), "hits": r["fts_hit_count"],
                "relevance_score": r["relevance_score"]}))
        counts: dict[str, int] = {}
        for m in visible:
            for entity_id in reads.entity_ids_linked_to(conn, m["id"]):
                counts[entity_id] = counts.get(entity_id, 0) + 1
        top = sorted(counts, key=lambda e: (-counts[e], e))[:5]
        names = self._entities(conn, top)
        limits = self._limits(hops=1)
        found = walk(conn, top, limits, supported=scoped.supported,
                     prefetch=scoped.prefetch)
        reached = found.ordered()
        more = self._entities(conn, [r.entity_id for r in reached])
        neighbours: list[SessionNeighbour] = []
        for reach in reached:
            shown = budget.take(scoped.supporting(reach.path[0], reach.entity_id))
            if shown is None:
                break
            neighbours.append({"entity": more.get(reach.entity_id),
                               "from": names[reach.path[0]]["name"],
                               "relation": edge_item(reach.edges[-1]),
                               "memories": cast(list[GraphMemory], shown)})
        return {"session_key": req.session_key, "memories": given,
                "entities": [SessionEntity(**names[e], session_memories=counts[e]) for e in top],
                "neighbours": neighbours, "tokens": budget.used, "max_tokens": budget.max,
                "truncated": budget.truncated, "timed_out": found.timed_out}

    # -- graph_impact ------------------------------------------------------------------
    def graph_impact(self, req: ImpactRequest) -> ImpactAnswer:
        """Who depends on the entity, directly or through others, tiered by path confidence.
        Stated dependencies count in full, associations (co-occurrence) at half."""
        conn = self.core.db.reader()
        scoped = Scoped(conn, req)
        rows = self._visible_entities(conn, req.entity, scoped, req)
        row = rows[0]
        limits = self._limits(req.max_depth, req.min_confidence)
        # every copy the caller sees (the shared entity and its own private one)
        found = walk(conn, [r["id"] for r in rows], limits, direction="dependents",
                     supported=scoped.supported, prefetch=scoped.prefetch)
        names = self._entities(conn, [r.entity_id for r in found.reached.values()])
        names.update((r["id"], entity_item(r)) for r in rows)
        tiers: dict[str, list[ImpactItem]] = {key: [] for key, _ in TIERS}
        for r in found.ordered():
            key, label = impact_tier(r.confidence)
            tiers[key].append(self._impact_item(scoped, names, r, label))
        return {"entity": entity_item(row), "tiers": tiers,
                "affected": sum(len(v) for v in tiers.values()), "paths": found.paths,
                "timed_out": found.timed_out, "limited_by": found.limited_by,
                "limits": self._limits_out(limits)}

    @staticmethod
    def _impact_item(scoped: Scoped, names: dict[str, EntityItem], r: Reach,
                     label: str) -> ImpactItem:
        return {
            "entity": names.get(r.entity_id), "tier": label, "depth": r.hops,
            "confidence": round(r.confidence, 4),
            "path": [_name(e, names) for e in r.path],
            "edges": [edge_item(e, w) for e, w in zip(r.edges, r.weights, strict=True)],
            "supporting_memory_ids": [m["id"] for m in
                                      scoped.supporting(r.path[-2], r.entity_id)],
        }
