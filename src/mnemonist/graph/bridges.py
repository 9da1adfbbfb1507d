"""Bridges of the entity graph: entities whose relations join two or more communities
(`graph/communities.py`), for `/api/diagnostics/graph` and the dashboard's graph page.

An entity's communities are its own and those of the entities its relations reach; it is a
bridge when that makes two or more. Its strength is the weight (confidence × mentions, as the
community detection weighs an edge) of its relations that leave its own community. Ranked by
communities joined, then strength. Communities are per project and hold shared entities only,
so a bridge is too; it is computed from the communities last stored (the maintenance worker
recomputes them, or `POST /api/repair/cluster-entities`).
"""

from __future__ import annotations

from typing import Any

from mnemonist.store import graph_communities as store


def bridges(conn: Any, limit: int, project: str | None = None) -> list[dict[str, Any]]:
    if limit <= 0:
        return []
    rows = store.cross_community_relations(conn, project)
    joined: dict[str, set[int]] = {}
    strength: dict[str, float] = {}
    for source, target, sc, tc, weight in rows:
        for me, mine, theirs in ((source, sc, tc), (target, tc, sc)):
            found = joined.setdefault(me, set())
            found.update(c for c in (mine, theirs) if c is not None)
            strength[me] = strength.get(me, 0.0) + float(weight)
    ranked = sorted((e for e, cs in joined.items() if len(cs) >= 2),
                    key=lambda e: (-len(joined[e]), -strength[e], e))[:limit]
    if not ranked:
        return []
    names = store.entity_communities_of(conn, ranked)
    communities = sorted({c for e in ranked for c in joined[e]})
    labels = store.community_labels(conn, communities)
    return [{"id": e, "name": names[e][0], "project": names[e][1] or None,
             "community": names[e][2], "connects": len(joined[e]),
             "communities": [{"id": c, "label": labels.get(c)} for c in sorted(joined[e])],
             "strength": round(strength[e], 4)}
            for e in ranked if e in names]
