"""The knowledge graph as the dashboard draws it: the top entities by live mentions, the
relations among them, and communities (Louvain, seeded so the same graph colours the same);
and its diagnostics (sizes, communities, entity health, sleep replay, principles)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from typing import TYPE_CHECKING, Any

import networkx as nx

from mnemonist.graph import bridges, communities, entity_health
from mnemonist.graph import replay as sleep_replay
from mnemonist.model.answers_curation import PrinciplesReport
from mnemonist.model.answers_graph import GraphDiagnostics, GraphOverview
from mnemonist.service.errors import BadRequest
from mnemonist.service.part import Part
from mnemonist.store import graph_communities as community_store
from mnemonist.store import graph_overview

if TYPE_CHECKING:
    from mnemonist.service.parts import Curation

MAX_GRAPH_NODES = 500
#: Louvain is randomised; a fixed seed keeps the communities (and colours) stable
COMMUNITY_SEED = 7


def communities_of(nodes: list[str], edges: list[dict[str, Any]]) -> list[list[str]]:
    """Communities of the weighted undirected graph, largest first (ties by first member)."""
    graph: nx.Graph[str] = nx.Graph()
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


class GraphViewOps(Part):
    curation: Curation  # the principles' report in the diagnostics
    #: the daemon's sleep-replay worker (its state in /api/diagnostics/graph), when it runs one
    sleep_replay_worker: Any = None

    def attach_sleep_replay(self, worker: Any) -> None:
        self.sleep_replay_worker = worker

    def graph_overview(self, limit: int = 100, project: str | None = None) -> GraphOverview:
        """Nodes (entity, its project, live mentions, community), edges (relation, weight =
        strength × mentions) and each community's size and best-known members; with
        `project`, that project's entities only."""
        if not 1 <= limit <= MAX_GRAPH_NODES:
            raise BadRequest(f"limit must be between 1 and {MAX_GRAPH_NODES}", field="limit")
        conn = self.core.db.reader()
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

    def graph_diagnostics(self, recompute: bool = False,
                          project: str | None = None) -> GraphDiagnostics:
        """Sizes of the graph, relations by reason, attributes by kind, and the communities
        with their modularity (computed now when never computed, or when asked) — of one
        project when `project` is given (entities belong to one project since migration 15),
        else of all."""
        cfg = self.core.config.memory.pipeline_v2.graph
        conn = self.core.db.reader()
        state = communities.last_state(conn)
        if cfg.enabled and (recompute or state is None):
            communities.recompute(self.core.db, resolution=cfg.communities.resolution,
                                  max_entities=cfg.communities.max_entities)
            state = communities.last_state(conn)
        state = state or {}
        if project is not None:
            state = {**(state.get("projects") or {}).get(project, {}),
                     "computed_at": state.get("computed_at")}
        sizes = graph_overview.sizes(conn, project)
        return {
            "project": project,
            "entities": sizes["entities"], "linked_entities": sizes["linked_entities"],
            "relations": sizes["relations"], "relations_by_reason": sizes["relations_by_reason"],
            "relations_by_type": sizes["relations_by_type"],
            "attributes_by_kind": sizes["attributes_by_kind"], "aspects": sizes["aspects"],
            "modularity": state.get("modularity"),
            "communities_computed_at": state.get("computed_at"),
            "community_count": state.get("communities") or 0,
            "communities": community_store.community_rows(conn, project),
            # folds, junk removed, orphans, what is pending (graph/entity_health.py)
            "entity_health": entity_health.report(conn, project),
            # entities whose relations join communities (graph/bridges.py)
            "bridges": bridges.bridges(conn, cfg.communities.bridges, project),
            # idle-time pair comparison: totals, false positives (graph/replay.py)
            "sleep_replay": self._sleep_replay(conn),
            # proposed, confirmed and rejected principles (graph/principles.py)
            "principles": self._principles(conn),
            "feedback": graph_overview.feedback_counts(conn),
        }

    def _principles(self, conn: sqlite3.Connection) -> PrinciplesReport | None:
        return self.curation.principles_report(conn)  # service/principles.py

    def _sleep_replay(self, conn: sqlite3.Connection) -> dict[str, Any]:
        """Sleep replay's settings and totals (the whole store's), and its worker's state."""
        out = sleep_replay.report(conn, self.core.config.memory.consolidation)
        worker = self.sleep_replay_worker
        out["worker"] = worker.status() if worker is not None else None
        return out
