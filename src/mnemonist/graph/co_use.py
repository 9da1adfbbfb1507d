"""Desire paths: edges worn by use. When the memories sessions used name two entities together
more often than chance, the graph learns an edge between them, so that a later question about
one finds the memories of the other through the graph boost and walks.

At the end of a session (`service/graph_feedback.py`) the memories it used — handed over and
surfaced again, or rated helpful in it — are read for the entities they name. Per scope (the
entities of one project and owner), at most `max_entities` of them count, the least mentioned
first (the specific ones: a name every memory holds says nothing about this session); each
counts one session, and so does each pair. A pair used together in at least `min_sessions`
sessions whose normalised pointwise mutual information

    NPMI = ln(p(a, b) / (p(a) p(b))) / -ln p(a, b),   p = sessions / sessions counted

reaches `min_npmi` (0 is independence, 1 always together) gets a `related_to` edge, reason
`co-use`, confidence 0.5, its NPMI as strength and the sessions as mentions — unless a relation
joins the two already (then feedback on its memories strengthens that one). Homeostasis: an
entity holds at most `max_edges` co-use edges; a stronger new one displaces its weakest, a
weaker one is not made. Counts are per scope, so a private memory never teaches a shared edge.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from itertools import combinations

from mnemonist.model.config_pipeline import CoUseConfig
from mnemonist.store import graph, graph_co_use
from mnemonist.store.row_ids import time_ordered_id

STATE_KEY = "co_use"
CONFIDENCE = graph.REASONS[graph_co_use.REASON]


@dataclass
class CoUseOutcome:
    """What one session taught."""

    entities: int = 0
    pairs: int = 0
    created: int = 0
    refreshed: int = 0
    displaced: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"entities": self.entities, "pairs": self.pairs, "edges_created": self.created,
                "edges_refreshed": self.refreshed, "edges_displaced": self.displaced}


def npmi(both: int, a: int, b: int, total: int) -> float:
    """Normalised PMI of two events seen `a` and `b` times, `both` together, in `total`."""
    if both <= 0 or a <= 0 or b <= 0 or total <= 0:
        return -1.0
    p_ab, p_a, p_b = both / total, a / total, b / total
    if p_ab >= 1.0:
        return 1.0
    return math.log(p_ab / (p_a * p_b)) / -math.log(p_ab)


def learn(conn: sqlite3.Connection, memory_ids: list[str], cfg: CoUseConfig,
          now: str) -> CoUseOutcome:
    """Count one session that used these memories, and learn the edges it makes worth it
    (inside the caller's write transaction)."""
    out = CoUseOutcome()
    rows = graph_co_use.entities_of(conn, sorted(set(memory_ids)))
    if not rows:
        return out
    scopes: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    for entity_id, mentions, project, agent_id, user_id in rows:
        scopes.setdefault((project, agent_id, user_id), []).append((mentions, entity_id))
    state = graph.load_graph_state(conn, STATE_KEY) or {}
    totals: dict[str, int] = state.get("sessions", {})
    for scope, members in scopes.items():
        key = "\x1f".join(scope)
        totals[key] = total = totals.get(key, 0) + 1
        chosen = sorted(e for _, e in sorted(members)[: cfg.max_entities])
        out.entities += len(chosen)
        graph_co_use.count_use(conn, chosen, now)
        pairs = list(combinations(chosen, 2))
        out.pairs += len(pairs)
        graph_co_use.count_co_use(conn, pairs, now)
        used = graph_co_use.use_counts(conn, chosen)
        for a, b in pairs:
            both = graph_co_use.co_use_count(conn, a, b)
            if both < cfg.min_sessions:
                continue
            strength = npmi(both, used.get(a, 0), used.get(b, 0), total)
            if strength >= cfg.min_npmi:
                _wear(conn, a, b, strength, both, cfg, now, out)
    graph.save_graph_state(conn, STATE_KEY, {**state, "sessions": totals}, now)
    return out


def _wear(conn: sqlite3.Connection, a: str, b: str, strength: float, sessions: int,
          cfg: CoUseConfig, now: str, out: CoUseOutcome) -> None:
    """Make or refresh the co-use edge a–b, keeping each end within `max_edges`."""
    note = f"used together in {sessions} sessions (NPMI {strength:.2f})"
    existing = graph_co_use.relation_between(conn, a, b)
    if existing is not None:
        relation_id, reason = existing
        if reason == graph_co_use.REASON:
            graph_co_use.refresh_learned_edge(conn, relation_id, strength, sessions, note, now)
            out.refreshed += 1
        return
    doomed: list[str] = []
    for end in (a, b):
        edges = graph_co_use.learned_edges_at(conn, end)
        if len(edges) >= cfg.max_edges:
            weakest_id, weakest = edges[0]
            if weakest >= strength:
                return  # every edge it holds is stronger: this one is not made
            doomed.append(weakest_id)
    for relation_id in dict.fromkeys(doomed):
        graph_co_use.delete_relation(conn, relation_id)
        out.displaced += 1
    graph_co_use.insert_learned_edge(conn, time_ordered_id(), a, b, strength, sessions,
                                     CONFIDENCE, note, now)
    out.created += 1
