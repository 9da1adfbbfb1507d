"""Communities of the entity graph: Louvain (networkx) over the entities and their relations,
recomputed by the maintenance worker (or `POST /api/repair/cluster-entities`).

Nodes are the most mentioned live entities (at most `maxEntities`); an edge's weight is its
confidence × mentions, so a pair named together often and a stated dependency pull harder
than a pair seen once. Louvain runs with a fixed seed, so the same graph gives the same
communities. A community of one entity is no community: its entity keeps `community_id`
NULL. Each community is labelled with its most mentioned entity. Modularity (how much more
the edges stay inside communities than chance would have them: below 0.3 the graph is
fragmented or one blob, above 0.6 it has strong neighbourhoods) is kept in `graph_state`
with the time and size of the run, for `/api/diagnostics/graph`.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
from networkx.algorithms import community as nx_community

from mnemonist.model.memory import utcnow
from mnemonist.store.db import Database

log = logging.getLogger(__name__)

STATE_KEY = "communities"
SEED = 7


@dataclass
class Clustering:
    assignments: dict[str, int] = field(default_factory=dict)
    communities: list[tuple[int, str, int]] = field(default_factory=list)  # id, label, size
    modularity: float | None = None
    nodes: int = 0
    edges: int = 0
    seconds: float = 0.0


def compute(db: Database, *, resolution: float = 1.0, max_entities: int = 50_000) -> Clustering:
    started = time.monotonic()
    conn = db.reader()
    rows = conn.execute(
        "SELECT id, name, mentions FROM entities WHERE mentions > 0"
        " ORDER BY mentions DESC, id LIMIT ?", (max_entities,)).fetchall()
    graph = nx.Graph()
    names = {r[0]: (r[1], r[2]) for r in rows}
    graph.add_nodes_from(names)
    for source, target, weight in conn.execute(
            "SELECT source_entity_id, target_entity_id, confidence * mentions FROM relations"
            " WHERE source_entity_id != target_entity_id"):
        if source in names and target in names:
            prior = graph.get_edge_data(source, target, {}).get("weight", 0.0)
            graph.add_edge(source, target, weight=prior + float(weight))
    out = Clustering(nodes=graph.number_of_nodes(), edges=graph.number_of_edges())
    if out.edges == 0:
        out.seconds = time.monotonic() - started
        return out
    parts = nx_community.louvain_communities(graph, weight="weight", resolution=resolution,
                                             seed=SEED)
    out.modularity = float(nx_community.modularity(graph, parts, weight="weight",
                                                   resolution=resolution))
    ranked = sorted((p for p in parts if len(p) > 1),
                    key=lambda p: (-len(p), min(p)))
    for number, members in enumerate(ranked, start=1):
        label = max(members, key=lambda e: (names[e][1], e))
        out.communities.append((number, names[label][0], len(members)))
        out.assignments.update((e, number) for e in members)
    out.seconds = time.monotonic() - started
    return out


def store(db: Database, result: Clustering) -> None:
    """Replace the communities and each entity's membership in one transaction."""
    now = utcnow()
    with db.write_tx() as conn:
        conn.execute("UPDATE entities SET community_id = NULL WHERE community_id IS NOT NULL")
        conn.execute("DELETE FROM entity_communities")
        conn.executemany(
            "INSERT INTO entity_communities (id, label, member_count, created_at)"
            " VALUES (?, ?, ?, ?)", [(i, label, n, now) for i, label, n in result.communities])
        conn.executemany("UPDATE entities SET community_id = ? WHERE id = ?",
                         [(c, e) for e, c in result.assignments.items()])
        state = {"modularity": result.modularity, "communities": len(result.communities),
                 "nodes": result.nodes, "edges": result.edges,
                 "seconds": round(result.seconds, 3), "computed_at": now}
        conn.execute(
            "INSERT INTO graph_state (key, value, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at", (STATE_KEY, json.dumps(state), now))


def recompute(db: Database, *, resolution: float = 1.0,
              max_entities: int = 50_000) -> dict[str, Any]:
    result = compute(db, resolution=resolution, max_entities=max_entities)
    store(db, result)
    log.info("communities: %d over %d entities, modularity %s (%.2fs)",
             len(result.communities), result.nodes, result.modularity, result.seconds)
    return {"communities": len(result.communities), "modularity": result.modularity,
            "nodes": result.nodes, "edges": result.edges, "seconds": round(result.seconds, 3)}


def last_state(conn: Any) -> dict[str, Any] | None:
    row = conn.execute("SELECT value FROM graph_state WHERE key = ?", (STATE_KEY,)).fetchone()
    return json.loads(row[0]) if row else None
