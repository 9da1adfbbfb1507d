"""Bounded walks over the entity graph: best path first, with every limit a walk honours.

- Edges below `min_confidence` are never followed.
- Out of each entity at most `max_branching` edges, the most confident first
  (confidence × strength, then mentions).
- At most `max_paths` paths in all (each edge followed is one path), at most `max_hops` long.
- A deadline: checked before each entity is expanded, and a statement that runs past it is
  interrupted (`store.deadline`: SQLite's progress handler, PostgreSQL's statement_timeout);
  what was reached by then is returned with `timed_out`.

A path's confidence is the product of its edges' confidences; each entity keeps its most
confident path. `direction` says which edges lead on: `both` (a neighbourhood), or
`dependents` (impact: who depends on the entity — the source of a dependency edge whose target
is the current entity). In a `dependents` walk an association (co-occurrence, or a relation
whose type states no dependency) is followed either way at `association_factor` of its
confidence: it says two things go together, not that one breaks with the other.

`supported(edge)` decides whether an edge may be used at all: the service passes a check that
some memory the caller may see (recall filters, `where_clause`) supports it, so a walk never
crosses an edge only other projects' memories know.
"""

from __future__ import annotations

import heapq
import itertools
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from mnemonist.store import graph
from mnemonist.store.deadline import statements_until

#: relation types that state "source depends on target"
DEPENDENCY_TYPES = frozenset({
    "depends_on", "uses", "requires", "calls", "reads_from", "writes_to", "runs_on",
    "built_on", "imports", "consumes", "relies_on", "connects_to",
})
Direction = Literal["both", "dependents"]


@dataclass(frozen=True)
class Edge:
    id: str
    source: str
    target: str
    relation_type: str
    reason: str
    confidence: float
    strength: float
    mentions: int
    note: str | None = None  # why a person or agent stated it, or what an inference used

    def other(self, entity_id: str) -> str:
        return self.target if entity_id == self.source else self.source


@dataclass
class Reach:
    entity_id: str
    hops: int
    confidence: float
    path: list[str]  # entity ids from the start to this one
    edges: list[Edge]
    weights: list[float]  # the confidence each edge counted for on this path


@dataclass
class Walk:
    reached: dict[str, Reach] = field(default_factory=dict)
    paths: int = 0
    timed_out: bool = False
    limited_by: list[str] = field(default_factory=list)

    def ordered(self) -> list[Reach]:
        return sorted(self.reached.values(), key=lambda r: (-r.confidence, r.hops, r.entity_id))


@dataclass(frozen=True)
class Limits:
    min_confidence: float
    max_branching: int
    max_paths: int
    max_hops: int
    timeout_ms: int


class _Deadline(Exception):
    pass


def _edges(conn: sqlite3.Connection, entity_id: str, min_confidence: float,
           direction: Direction, fetch: int) -> list[tuple[Edge, bool]]:
    """(edge, leads_out) pairs at the entity, most confident first. `leads_out`: the edge's
    far end is a step in the walk's direction."""
    return _edges_many(conn, [entity_id], min_confidence, direction, fetch)[entity_id]


#: entities whose edges one statement reads: the one expanded next and the best of those
#: waiting in the walk's queue (each statement is a round trip on PostgreSQL)
EDGE_BATCH = 16


def _edges_many(conn: sqlite3.Connection, entity_ids: list[str], min_confidence: float,
                direction: Direction, fetch: int) -> dict[str, list[tuple[Edge, bool]]]:
    """`_edges` of several entities in one statement: the same edges in the same order."""
    out: dict[str, list[tuple[Edge, bool]]] = {e: [] for e in entity_ids}
    for r in graph.best_edges_at(conn, entity_ids, min_confidence, fetch):
        at = r[0]
        edge = Edge(r[1], r[2], r[3], r[4], r[5], float(r[6]), float(r[7]), int(r[8]), r[9])
        if direction == "dependents" and edge.relation_type in DEPENDENCY_TYPES:
            out[at].append((edge, edge.target == at))  # the source depends on us
        else:
            out[at].append((edge, True))
    return out


def walk(
    conn: sqlite3.Connection,
    starts: Iterable[str],
    limits: Limits,
    *,
    direction: Direction = "both",
    association_factor: float = 0.5,
    supported: Callable[[Edge], bool] | None = None,
    prefetch: Callable[[str, list[Edge]], None] | None = None,
) -> Walk:
    """`supported(edge)`: whether the walk may take the edge; `prefetch(entity, edges)`
    answers that for all the edges of one step at once first (one statement, not one per
    edge: a round trip each on PostgreSQL)."""
    out = Walk()
    deadline = time.monotonic() + limits.timeout_ms / 1000.0
    try:
        with statements_until(conn, deadline):
            _walk(conn, list(starts), limits, direction, association_factor, supported,
                  deadline, out, prefetch)
    except (_Deadline, sqlite3.OperationalError) as exc:
        if not isinstance(exc, _Deadline) and time.monotonic() <= deadline:
            raise
        out.timed_out = True
        out.limited_by.append("deadline")
    return out


def _walk(conn: sqlite3.Connection, starts: list[str], limits: Limits, direction: Direction,
          association_factor: float, supported: Callable[[Edge], bool] | None,
          deadline: float, out: Walk,
          prefetch: Callable[[str, list[Edge]], None] | None = None) -> None:
    start_set = set(starts)
    order = itertools.count()  # ties never compare two Reach objects
    heap: list[tuple[float, int, int, str, Reach | None]] = [
        (-1.0, 0, next(order), s, None) for s in starts]
    heapq.heapify(heap)
    expanded: set[str] = set()
    fetch = limits.max_branching * 4  # room for edges the direction or support turn away
    known: dict[str, list[tuple[Edge, bool]]] = {}  # edges read ahead, by entity
    while heap:
        if time.monotonic() > deadline:
            raise _Deadline
        _, hops, _, entity_id, reach = heapq.heappop(heap)
        if entity_id in expanded:
            continue
        expanded.add(entity_id)
        if hops >= limits.max_hops:
            if "max_hops" not in out.limited_by:
                out.limited_by.append("max_hops")
            continue
        best_edge: dict[str, tuple[float, Edge]] = {}  # one edge per neighbour: its best
        if entity_id not in known:  # with it, the edges of the best of those waiting
            ahead = [e for _, _, _, e, _ in heapq.nsmallest(4 * EDGE_BATCH, heap)
                     if e not in expanded and e not in known and e != entity_id]
            batch = [entity_id, *dict.fromkeys(ahead)][:EDGE_BATCH]
            known.update(_edges_many(conn, batch, limits.min_confidence, direction, fetch))
        steps = [edge for edge, leads_out in known.pop(entity_id)
                 if leads_out and (nxt := edge.other(entity_id)) not in start_set
                 and nxt not in expanded and not (reach and nxt in reach.path)]
        if prefetch is not None and supported is not None:
            prefetch(entity_id, steps)
        for edge in steps:
            nxt = edge.other(entity_id)
            weight = edge.confidence
            if direction == "dependents" and edge.relation_type not in DEPENDENCY_TYPES:
                weight *= association_factor
            better = nxt not in best_edge or weight > best_edge[nxt][0]
            if better and (supported is None or supported(edge)):
                best_edge[nxt] = (weight, edge)
        ranked = sorted(best_edge.items(), key=lambda kv: (-kv[1][0], -kv[1][1].mentions,
                                                           kv[1][1].id))
        if len(ranked) > limits.max_branching and "max_branching" not in out.limited_by:
            out.limited_by.append("max_branching")
        for nxt, (weight, edge) in ranked[:limits.max_branching]:
            base = reach.confidence if reach else 1.0
            path = reach.path if reach else [entity_id]
            candidate = Reach(nxt, hops + 1, base * weight, [*path, nxt],
                              [*(reach.edges if reach else []), edge],
                              [*(reach.weights if reach else []), weight])
            out.paths += 1
            best = out.reached.get(nxt)
            if best is None or candidate.confidence > best.confidence:
                out.reached[nxt] = candidate
                heapq.heappush(heap, (-candidate.confidence, hops + 1, next(order), nxt,
                                      candidate))
            if out.paths >= limits.max_paths:
                out.limited_by.append("max_paths")
                return
