"""Communities of the entity graph: Louvain (networkx) over the entities and their relations,
recomputed by the maintenance worker (or `POST /api/repair/cluster-entities`).

Per project: each project's shared entities (not those private to an agent or user) are
clustered on their own — relations never cross projects. Nodes are the most mentioned live
entities of the project (at most `maxEntities`); an edge's weight is its
confidence × mentions, so a pair named together often and a stated dependency pull harder
than a pair seen once. Louvain runs with a fixed seed, so the same graph gives the same
communities. A community of one entity is no community: its entity keeps `community_id`
NULL. Each community is labelled with its most mentioned entity. Modularity (how much more
the edges stay inside communities than chance would have them: below 0.3 the graph is
fragmented or one blob, above 0.6 it has strong neighbourhoods) is kept in `graph_state`
with the time and size of the run, for `/api/diagnostics/graph`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
from networkx.algorithms import community as nx_community

from mnemonist.model.memory import utcnow
from mnemonist.store import graph as graph_store
from mnemonist.store import graph_communities as community_store
from mnemonist.store.db import Database

log = logging.getLogger(__name__)

STATE_KEY = "communities"
SEED = 7


@dataclass
class Clustering:
    assignments: dict[str, int] = field(default_factory=dict)
    #: id, label, size, project
    communities: list[tuple[int, str, int, str]] = field(default_factory=list)
    modularity: float | None = None
    #: project -> its modularity, communities, nodes and edges
    projects: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodes: int = 0
    edges: int = 0
    seconds: float = 0.0


#: entity id -> (name, mentions)
Names = dict[str, tuple[str, int]]


def _project_graph(conn: Any, project: str, max_entities: int) -> tuple[nx.Graph[str], Names]:
    rows = community_store.top_shared_entities(conn, project, max_entities)
    graph: nx.Graph[str] = nx.Graph()
    names: Names = {r[0]: (r[1], r[2]) for r in rows}
    graph.add_nodes_from(names)
    for source, target, weight in community_store.shared_relation_weights(conn, project):
        if source in names and target in names:
            prior = graph.get_edge_data(source, target, {}).get("weight", 0.0)
            graph.add_edge(source, target, weight=prior + float(weight))
    return graph, names


def compute(db: Database, *, resolution: float = 1.0, max_entities: int = 50_000) -> Clustering:
    """Louvain per project over its shared entities (relations never cross projects, and a
    private entity's name must not label a community others see); the overall modularity is
    the union partition's over the union graph."""
    started = time.monotonic()
    conn = db.reader()
    projects = graph_store.shared_entity_projects(conn)
    out = Clustering()
    union: nx.Graph[str] = nx.Graph()
    parts_all: list[set[str]] = []
    ranked: list[tuple[str, set[str], Names]] = []
    for project in projects:
        graph, names = _project_graph(conn, project, max_entities)
        info: dict[str, Any] = {"nodes": graph.number_of_nodes(),
                                "edges": graph.number_of_edges(), "modularity": None,
                                "communities": 0}
        out.projects[project] = info
        out.nodes += info["nodes"]
        out.edges += info["edges"]
        union.update(graph)
        if info["edges"] == 0:
            parts_all += [{n} for n in graph.nodes]
            continue
        parts = nx_community.louvain_communities(graph, weight="weight",
                                                 resolution=resolution, seed=SEED)
        parts_all += parts
        info["modularity"] = float(nx_community.modularity(graph, parts, weight="weight",
                                                           resolution=resolution))
        multi = sorted((p for p in parts if len(p) > 1), key=lambda p: (-len(p), min(p)))
        info["communities"] = len(multi)
        ranked += [(project, members, names) for members in multi]
    ranked.sort(key=lambda x: (-len(x[1]), x[0], min(x[1])))
    for number, (project, members, names) in enumerate(ranked, start=1):
        label = max(members, key=lambda e: (names[e][1], e))
        out.communities.append((number, names[label][0], len(members), project))
        out.assignments.update((e, number) for e in members)
    if union.number_of_edges():
        out.modularity = float(nx_community.modularity(union, parts_all, weight="weight",
                                                       resolution=resolution))
    out.seconds = time.monotonic() - started
    return out


def store(db: Database, result: Clustering) -> None:
    """Replace the communities and each entity's membership in one transaction."""
    now = utcnow()
    with db.write_tx() as conn:
        community_store.replace_communities(conn, result.communities, result.assignments, now)
        state = {"modularity": result.modularity, "communities": len(result.communities),
                 "nodes": result.nodes, "edges": result.edges, "projects": result.projects,
                 "seconds": round(result.seconds, 3), "computed_at": now}
        graph_store.save_graph_state(conn, STATE_KEY, state, now)


def recompute(db: Database, *, resolution: float = 1.0,
              max_entities: int = 50_000) -> dict[str, Any]:
    result = compute(db, resolution=resolution, max_entities=max_entities)
    store(db, result)
    log.info("communities: %d over %d entities, modularity %s (%.2fs)",
             len(result.communities), result.nodes, result.modularity, result.seconds)
    return {"communities": len(result.communities), "modularity": result.modularity,
            "nodes": result.nodes, "edges": result.edges, "seconds": round(result.seconds, 3)}


def last_state(conn: Any) -> dict[str, Any] | None:
    state: dict[str, Any] | None = graph_store.load_graph_state(conn, STATE_KEY)
    return state
