"""Knowledge-graph reads: entities, one entity, an entity's neighbourhood, and what the walks
of `service/knowledge.py` (knowledge_expand, knowledge_expand_session, graph_impact) share.

An entity belongs to one scope (project, agent_id, user_id: migration 15), and a read sees
only the entities of scopes it may see (`search/entity_scope.py`). Every memory these reads
return or count passes the caller's recall filters too (`where_clause`, the condition recall
uses), and an edge is followed only when a memory that passes them supports it (links both
ends) — or, for an edge no memory backs (`user-stated`, `inferred`), when both its ends are
visible entities.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.model.graph import EntityListRequest, NeighbourhoodRequest
from mnemonist.model.requests import RecallFilters
from mnemonist.search.entity_scope import entity_scope_clause
from mnemonist.search.filters import where_clause
from mnemonist.search.traversal import Edge, Limits, walk
from mnemonist.service.errors import NotFound
from mnemonist.service.part import Part
from mnemonist.text.entities import canonical_name
from mnemonist.text.entity_words import TECH_ALIASES

#: impact tiers by path confidence (the product of the edges' confidences)
WILL_BREAK = 0.7
LIKELY_AFFECTED = 0.45
TIERS = (("will_break", "WILL BREAK"), ("likely_affected", "LIKELY AFFECTED"),
         ("may_need_testing", "MAY NEED TESTING"))
SUPPORT_PER_EDGE = 3
#: relations no memory backs: followed when both ends are entities the caller may see (a
#: replay edge joins entities that no one memory names together; both are of one scope)
UNBACKED = ("user-stated", "inferred", "replay")
ENTITY_MEMORIES = 5
MEMORY_CHARS = 1000


def estimate_tokens(text: str) -> int:
    """About four characters a token (English prose with this model family's tokenizers)."""
    return max(1, (len(text) + 3) // 4)


def impact_tier(confidence: float) -> tuple[str, str]:
    if confidence >= WILL_BREAK:
        return TIERS[0]
    if confidence >= LIKELY_AFFECTED:
        return TIERS[1]
    return TIERS[2]


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
            self._visible[entity_id] = self.conn.execute(
                f"SELECT 1 FROM entities e WHERE e.id = ? AND {self.entity_where}",
                [entity_id, *self.entity_args]).fetchone() is not None
        return self._visible[entity_id]

    def has_unbacked(self, entity_id: str) -> bool:
        """A stated or inferred relation is at the entity."""
        return self.conn.execute(
            "SELECT 1 FROM relations WHERE reason IN ('user-stated', 'inferred')"
            " AND (source_entity_id = ?1 OR target_entity_id = ?1) LIMIT 1",
            (entity_id,)).fetchone() is not None

    def supporting(self, a: str, b: str, limit: int = SUPPORT_PER_EDGE) -> list[dict[str, Any]]:
        """Memories (passing the filters) linked to both entities, most important first."""
        key = (a, b) if a < b else (b, a)
        if key not in self._support:
            # the rarer entity's links drive (CROSS JOIN keeps the order): a hub's thousands
            # of links are never walked to find the few it shares with a rare one
            rare, common = sorted((a, b), key=lambda e: (self._mentions(e), e))
            rows = self.conn.execute(
                "SELECT m.id, m.content, m.type, m.importance FROM memory_entity_mentions x"
                " CROSS JOIN memory_entity_mentions y ON y.memory_id = x.memory_id"
                " AND y.entity_id = ? CROSS JOIN memories m ON m.id = x.memory_id"
                f" WHERE x.entity_id = ? AND {self.where}"
                " ORDER BY m.importance DESC, m.created_at DESC, m.id LIMIT ?",
                [common, rare, *self.args, limit],
            ).fetchall()
            self._support[key] = [memory_item(r) for r in rows]
        return self._support[key]

    def prefetch(self, entity_id: str, edges: list[Edge]) -> None:
        """The support of every edge at `entity_id` that a walk may take, in two or three
        statements instead of one or two per edge: on PostgreSQL each statement is a round
        trip, and `graph_impact` over a hub paid one per neighbour. The same memories, in the
        same order, as `supporting` finds edge by edge."""
        others = sorted({e.other(entity_id) for e in edges if e.reason not in UNBACKED}
                        - {b for a, b in self._support if a == entity_id}
                        - {a for a, b in self._support if b == entity_id})
        if len(others) < 2:
            return
        counts = self._mentions_of([entity_id, *others])
        mine = counts.get(entity_id, 0)
        # as edge by edge: the rarer entity's links drive, so a hub's are never all walked
        rarer = [o for o in others if (counts.get(o, 0), o) < (mine, entity_id)]
        commoner = [o for o in others if (counts.get(o, 0), o) >= (mine, entity_id)]
        found: dict[str, list[dict[str, Any]]] = {o: [] for o in others}
        for group, drive in ((rarer, "y"), (commoner, "x")):
            if not group:
                continue
            first, second = ("y", "x") if drive == "y" else ("x", "y")
            marks = ",".join("?" * len(group))
            on = (f"{second}.entity_id = ?" if drive == "y" else
                  f"{second}.entity_id IN ({marks})")
            where = (f"{first}.entity_id IN ({marks})" if drive == "y" else
                     f"{first}.entity_id = ?")
            args = [entity_id, *group] if drive == "y" else [*group, entity_id]
            rows = self.conn.execute(
                "SELECT other, id, content, type, importance FROM (SELECT y.entity_id AS other,"
                " m.id, m.content, m.type, m.importance, ROW_NUMBER() OVER (PARTITION BY"
                " y.entity_id ORDER BY m.importance DESC, m.created_at DESC, m.id) AS n"
                f" FROM memory_entity_mentions {first} CROSS JOIN memory_entity_mentions"
                f" {second} ON {second}.memory_id = {first}.memory_id AND {on}"
                f" CROSS JOIN memories m ON m.id = x.memory_id WHERE {where} AND {self.where})"
                " t WHERE n <= ? ORDER BY other, n",
                [*args, *self.args, SUPPORT_PER_EDGE],
            ).fetchall()
            for r in rows:
                found[r[0]].append(memory_item((r[1], r[2], r[3], r[4])))
        for other, items in found.items():
            key = (entity_id, other) if entity_id < other else (other, entity_id)
            self._support[key] = items

    def _mentions_of(self, ids: list[str]) -> dict[str, int]:
        missing = [e for e in ids if e not in self._counts]
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found = dict(self.conn.execute(
                f"SELECT id, mentions FROM entities WHERE id IN ({marks})", chunk).fetchall())
            for e in chunk:
                self._counts[e] = int(found.get(e) or 0)
        return {e: self._counts[e] for e in ids}

    def _mentions(self, entity_id: str) -> int:
        if entity_id not in self._counts:
            row = self.conn.execute("SELECT mentions FROM entities WHERE id = ?",
                                    (entity_id,)).fetchone()
            self._counts[entity_id] = int(row[0]) if row else 0
        return self._counts[entity_id]

    def supported(self, edge: Edge) -> bool:
        if edge.reason in UNBACKED:
            return self.entity_visible(edge.source) and self.entity_visible(edge.target)
        return bool(self.supporting(edge.source, edge.target))

    def memories_of(self, entity_id: str, limit: int, offset: int = 0) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT m.id, m.content, m.type, m.importance FROM memory_entity_mentions mm"
            f" CROSS JOIN memories m ON m.id = mm.memory_id WHERE mm.entity_id = ?"
            f" AND {self.where} ORDER BY m.importance DESC, m.created_at DESC, m.id"
            " LIMIT ? OFFSET ?",
            [entity_id, *self.args, limit, offset],
        ).fetchall()
        return [memory_item(r) for r in rows]

    def count_of(self, entity_id: str) -> int:
        return int(self.conn.execute(
            "SELECT COUNT(*) FROM memory_entity_mentions mm CROSS JOIN memories m"
            f" ON m.id = mm.memory_id WHERE mm.entity_id = ? AND {self.where}",
            [entity_id, *self.args]).fetchone()[0])


def memory_item(row: sqlite3.Row | tuple[Any, ...]) -> dict[str, Any]:
    return {"id": row[0], "content": str(row[1])[:MEMORY_CHARS], "type": row[2],
            "importance": row[3]}


def entity_item(row: sqlite3.Row) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "type": row["entity_type"],
            "mentions": row["mentions"], "community": row["community_id"],
            "project": row["project"] or None, "agent_id": row["agent_id"] or None,
            "user_id": row["user_id"] or None}


def edge_item(edge: Edge, weight: float | None = None) -> dict[str, Any]:
    out = {"id": edge.id, "source": edge.source, "target": edge.target,
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
        rows = conn.execute(f"SELECT * FROM entities e WHERE e.id = ? AND {where}",
                            [ref, *args]).fetchall()
        if not rows:
            key = canonical_name(ref)
            alias = TECH_ALIASES.get(key)
            names = [key, *([canonical_name(alias)] if alias else [])]
            rows = conn.execute(
                f"SELECT * FROM entities e WHERE e.canonical_name IN"
                f" ({','.join('?' * len(names))}) AND {where} ORDER BY e.mentions DESC, e.id",
                [*names, *args]).fetchall()
        if not rows:  # a name folded into another entity (entity health: "ttls" -> "ttl")
            rows = conn.execute(
                "SELECT e.* FROM entities e WHERE e.id IN (SELECT a.entity_id FROM"
                " entity_aliases a WHERE a.canonical_name = ?)"
                f" AND {where} ORDER BY e.mentions DESC, e.id",
                [canonical_name(ref), *args]).fetchall()
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

    def _entities(self, conn: sqlite3.Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        rows = conn.execute(
            f"SELECT * FROM entities WHERE id IN ({','.join('?' * len(ids))})", ids)
        return {r["id"]: entity_item(r) for r in rows}

    @staticmethod
    def _limits_out(limits: Limits) -> dict[str, Any]:
        return {"min_confidence": limits.min_confidence, "max_branching": limits.max_branching,
                "max_paths": limits.max_paths, "max_hops": limits.max_hops,
                "timeout_ms": limits.timeout_ms}

    # -- entities ------------------------------------------------------------------------
    def list_entities(self, req: EntityListRequest) -> dict[str, Any]:
        """Entities with the number of memories (passing the filters) that name them, most
        first; an entity no such memory names is not listed."""
        conn = self.core.db.reader()
        q, entity_type, community = req.q, req.entity_type, req.community
        limit, offset = req.limit, req.offset
        where, args = where_clause(req)
        scope_where, scope_args = entity_scope_clause(req)
        extra, extra_args = [scope_where], list(scope_args)
        if q:
            extra.append("e.canonical_name LIKE ? ESCAPE '\\'")
            escaped = canonical_name(q).replace("\\", "\\\\").replace("%", "\\%")
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
        return {"entities": [{**entity_item(r), "memories": r["n"]} for r in rows],
                "total": total, "limit": limit, "offset": offset}

    def get_entity(self, ref: str, filters: RecallFilters | None = None,
                   limit: int = 20) -> dict[str, Any]:
        conn = self.core.db.reader()
        scoped = Scoped(conn, filters)
        row = self._visible_entity(conn, ref, scoped, filters or RecallFilters())
        entity_id = row["id"]
        count = scoped.count_of(entity_id)
        aspects = [dict(a) for a in conn.execute(
            "SELECT id, name, weight, updated_at FROM entity_aspects WHERE entity_id = ?"
            " ORDER BY weight DESC, name", (entity_id,))]
        attributes = [
            {"memory_id": a["memory_id"], "kind": a["kind"], "content": a["content"],
             "importance": a["importance"], "aspect": a["aspect"], "source": a["source"]}
            for a in conn.execute(
                "SELECT ea.*, asp.name AS aspect FROM entity_attributes ea"
                " CROSS JOIN memories m ON m.id = ea.memory_id"
                " LEFT JOIN entity_aspects asp ON asp.id = ea.aspect_id"
                f" WHERE ea.entity_id = ? AND {scoped.where}"
                " ORDER BY ea.kind = 'constraint' DESC, ea.importance DESC, ea.created_at DESC"
                " LIMIT ?", [entity_id, *scoped.args, limit])]
        hood = walk(conn, [entity_id], self._limits(hops=1, min_confidence=0.0),
                    supported=scoped.supported)
        names = self._entities(conn, [r.entity_id for r in hood.reached.values()])
        relations = [{"entity": names[r.entity_id], **edge_item(r.edges[-1])}
                     for r in hood.ordered() if r.entity_id in names]
        return {"entity": entity_item(row), "memories_count": count,
                "memories": scoped.memories_of(entity_id, limit),
                "aspects": aspects, "attributes": attributes, "relations": relations}

    def neighbourhood(self, req: NeighbourhoodRequest) -> dict[str, Any]:
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
        edges: dict[str, dict[str, Any]] = {}
        for r in reached:
            for e in r.edges:
                if e.source in nodes and e.target in nodes:
                    edges[e.id] = edge_item(e)
        return {"center": row["id"], "nodes": list(nodes.values()), "edges": list(edges.values()),
                "paths": hood.paths, "timed_out": hood.timed_out, "limited_by": hood.limited_by,
                "limits": self._limits_out(limits)}
