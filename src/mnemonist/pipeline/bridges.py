"""Bridges of the entity graph: entities whose relations join two or more communities
(`pipeline/communities.py`), for `/api/diagnostics/graph` and the dashboard's graph page.

An entity's communities are its own and those of the entities its relations reach; it is a
bridge when that makes two or more. Its strength is the weight (confidence × mentions, as the
community detection weighs an edge) of its relations that leave its own community. Ranked by
communities joined, then strength. Communities are per project and hold shared entities only,
so a bridge is too; it is computed from the communities last stored (the maintenance worker
recomputes them, or `POST /api/repair/cluster-entities`).
"""

from __future__ import annotations

from typing import Any


def bridges(conn: Any, limit: int, project: str | None = None) -> list[dict[str, Any]]:
    if limit <= 0:
        return []
    scope, args = ("AND s.project = ?", [project]) if project is not None else ("", [])
    rows = conn.execute(
        "SELECT r.source_entity_id, r.target_entity_id, s.community_id, t.community_id,"
        " r.confidence * r.mentions FROM relations r"
        " JOIN entities s ON s.id = r.source_entity_id"
        " JOIN entities t ON t.id = r.target_entity_id"
        " WHERE (s.community_id IS NOT NULL OR t.community_id IS NOT NULL)"
        " AND COALESCE(s.community_id, -1) != COALESCE(t.community_id, -1)"
        f" AND s.project = t.project {scope}", args).fetchall()
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
    marks = ",".join("?" * len(ranked))
    names = {r[0]: (r[1], r[2], r[3]) for r in conn.execute(
        f"SELECT id, name, project, community_id FROM entities WHERE id IN ({marks})", ranked)}
    communities = sorted({c for e in ranked for c in joined[e]})
    marks = ",".join("?" * len(communities))
    labels = {r[0]: r[1] for r in conn.execute(
        f"SELECT id, label FROM entity_communities WHERE id IN ({marks})", communities)}
    return [{"id": e, "name": names[e][0], "project": names[e][1] or None,
             "community": names[e][2], "connects": len(joined[e]),
             "communities": [{"id": c, "label": labels.get(c)} for c in sorted(joined[e])],
             "strength": round(strength[e], 4)}
            for e in ranked if e in names]
