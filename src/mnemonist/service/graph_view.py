"""The knowledge graph as the dashboard draws it: the top entities by live mentions, the
relations among them, and communities (Louvain, seeded so the same graph colours the same)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import networkx as nx

from mnemonist.service.base import ServiceBase
from mnemonist.service.errors import BadRequest
from mnemonist.store import graph_overview

MAX_GRAPH_NODES = 500
#: Louvain is randomised; a fixed seed keeps the communities (and colours) stable
COMMUNITY_SEED = 7


def communities_of(nodes: list[str], edges: list[dict[str, Any]]) -> list[list[str]]:
    """Communities of the weighted undirected graph, largest first (ties by first member)."""
    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    for e in edges:
        if e["source"] == e["target"]:
            continue
        old = graph.get_edge_data(e["source"], e["target"], {}).get("weight", 0.0)
        graph.add_edge(e["source"], e["target"], weight=old + max(e["weight"], 0.0001))
    found = nx.community.louvain_communities(graph, weight="weight", seed=COMMUNITY_SEED)
    order = {node: i for i, node in enumerate(nodes)}
    groups = [sorted(c, key=order.__getitem__) for c in found]
    return sorted(groups, key=lambda g: (-len(g), order[g[0]]))


class GraphViewOps(ServiceBase):
    def graph_overview(self, limit: int = 100, project: str | None = None) -> dict[str, Any]:
        """Nodes (entity, its project, live mentions, community), edges (relation, weight =
        strength × mentions) and each community's size and best-known members; with
        `project`, that project's entities only."""
        if not 1 <= limit <= MAX_GRAPH_NODES:
            raise BadRequest(f"limit must be between 1 and {MAX_GRAPH_NODES}", field="limit")
        conn = self.db.reader()
        # one node per name and project: an owner's private copy of an entity is the same
        # node (its mentions added), so the picture shows things, not storage rows
        rows = graph_overview.top_entities(conn, limit * 3, project)
        node_of: dict[str, str] = {}
        merged: dict[tuple[str | None, str], dict[str, Any]] = {}
        for row in rows:
            key = (row["project"], row["canonical_name"])
            kept = merged.get(key)
            if kept is None:
                merged[key] = kept = {k: v for k, v in row.items() if k != "canonical_name"}
            else:
                kept["mentions"] += row["mentions"]
            node_of[row["id"]] = kept["id"]
        entities = sorted(merged.values(), key=lambda e: -e["mentions"])[:limit]
        kept_ids = {e["id"] for e in entities}
        node_of = {k: v for k, v in node_of.items() if v in kept_ids}
        ids = [e["id"] for e in entities]
        weights: dict[tuple[str, str, str], float] = {}
        for e in graph_overview.relations_among(conn, list(node_of)):
            ends = (node_of[e["source"]], node_of[e["target"]], e["type"])
            if ends[0] != ends[1]:
                weights[ends] = weights.get(ends, 0.0) + e["weight"]
        edges = [{"source": a, "target": b, "type": t, "weight": round(w, 4)}
                 for (a, b, t), w in weights.items()]
        groups = communities_of(ids, edges)
        community = {node: n for n, group in enumerate(groups) for node in group}
        nodes = [{**e, "community": community[e["id"]]} for e in entities]
        seen = Counter(e["name"] for e in entities)
        several = {name for name, n in seen.items() if n > 1}
        # a name that is an entity in several projects is told apart by its project
        names = {e["id"]: f"{e['name']} ({e['project'] or 'no project'})"
                 if e["name"] in several else e["name"] for e in entities}
        return {
            "nodes": nodes,
            "edges": edges,
            "communities": [{"id": n, "size": len(g), "members": [names[i] for i in g[:8]]}
                            for n, g in enumerate(groups)],
            "projects": graph_overview.projects(conn),
        }
