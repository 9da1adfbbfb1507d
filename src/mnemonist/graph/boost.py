"""Graph-augmented search: memories linked to an entity the
query names, or to a neighbour of one, get a score boost in hybrid recall.

1. Seeds: entities whose canonical name the query names, in the scopes the recall may see
   (`graph/scope.py`), at most 20, most mentioned first. Names are looked up exactly on the
   `canonical_name` index: each query token that is
   not a stop word, and each run of 2-4 query tokens joined by a space ("john smith", "bank of
   america"), a pair also by "." or "-" ("next.js", "github.com"); a technology alias adds its
   canonical form ("postgres" -> "postgresql"). The document's `canonical_name LIKE %token%`
   makes "art" match "party" and "heart" and scans every entity per token; an exact match is
   right more often and stays an index lookup. The cost: a name must be written out in full
   ("rails" does not find "ruby on rails").
2. The seeds' memories (full boost).
3. Neighbours: entities one relation away in either direction, strongest first (summed
   relation mentions), at most 50.
4. The neighbours' memories (`hop_weight` of the boost).

Memories are live (not deleted, not superseded) and pass the recall's own filters (the same
`where_clause`), at most 200 in all. Given `candidates` (the ids being ranked), only those are
looked up: the boost can touch nothing else, and a hub entity's thousands of memories no
longer decide which 200 make the cut.

Bounded by a deadline, checked after each step; SQLite's progress handler also interrupts a
statement that runs past it. What was found by then is returned with `timed_out`. Any other
error returns nothing: the boost only ever adds, so recall without it is still correct.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from mnemonist.graph.scope import entity_scope_clause
from mnemonist.model.requests import RecallFilters
from mnemonist.store import graph_recall
from mnemonist.store.deadline import statements_until
from mnemonist.store.filters import where_clause
from mnemonist.text.entities import canonical_name
from mnemonist.text.entity_words import TECH_ALIASES
from mnemonist.text.tokens import STOP_WORDS, tokenize

log = logging.getLogger(__name__)

MAX_SEEDS = 20
MAX_NEIGHBOURS = 50
MAX_MEMORIES = 200
MAX_TOKENS = 32
MAX_RUN = 4


@dataclass
class GraphBoost:
    #: memory id -> share of the boost weight (1.0 for a seed's memory, hop_weight one hop out)
    weights: dict[str, float] = field(default_factory=dict)
    timed_out: bool = False
    seeds: list[str] = field(default_factory=list)
    neighbours: list[str] = field(default_factory=list)


def query_names(query: str) -> list[str]:
    """The canonical names a query could be naming (see step 1)."""
    tokens = tokenize(query)[:MAX_TOKENS]
    names: dict[str, None] = {}

    def add(name: str) -> None:
        names[name] = None
        alias = TECH_ALIASES.get(name)
        if alias is not None:
            names[canonical_name(alias)] = None

    for i, token in enumerate(tokens):
        if token not in STOP_WORDS:
            add(token)
        for n in range(2, MAX_RUN + 1):
            run = tokens[i : i + n]
            if len(run) < n:
                break
            if all(t in STOP_WORDS for t in run):
                continue
            add(" ".join(run))
            names[".".join(run)] = None
            if n == 2:
                names["-".join(run)] = None
    return list(names)


class _Deadline(Exception):
    pass


def graph_boost(
    conn: sqlite3.Connection,
    query: str,
    filters: RecallFilters | None,
    *,
    timeout_ms: int,
    hop_weight: float = 0.5,
    candidates: Collection[str] | None = None,
    phrases: bool = False,
) -> GraphBoost:
    """The memories to boost for `query`, each with its share of the boost. `phrases`: noun
    phrase entities ("checkout API") seed and relay the boost too; off, only names,
    technologies, domains and quoted names do (what LoCoMo measured: docs/graph.md)."""
    out = GraphBoost()
    if candidates is not None and not candidates:
        return out
    deadline = time.monotonic() + timeout_ms / 1000.0
    try:
        with statements_until(conn, deadline):
            _lookup(conn, query, filters, hop_weight, candidates, deadline, out, phrases)
    except (_Deadline, sqlite3.OperationalError) as exc:
        if not isinstance(exc, _Deadline) and time.monotonic() <= deadline:
            log.warning("graph boost failed: %s", exc)
            return GraphBoost()
        out.timed_out = True
    except Exception as exc:  # the boost is optional: recall goes on without it
        log.warning("graph boost failed: %s", exc)
        return GraphBoost()
    return out


def _lookup(
    conn: sqlite3.Connection,
    query: str,
    filters: RecallFilters | None,
    hop_weight: float,
    candidates: Collection[str] | None,
    deadline: float,
    out: GraphBoost,
    phrases: bool = False,
) -> None:
    def check() -> None:
        if time.monotonic() > deadline:
            raise _Deadline

    names = query_names(query)
    if not names:
        return
    out.seeds = _seeds(conn, names, filters, phrases)
    check()
    if not out.seeds:
        return
    where, args = where_clause(filters)
    for memory_id in _memories(conn, out.seeds, where, args, candidates, MAX_MEMORIES):
        out.weights[memory_id] = 1.0
    check()
    if hop_weight <= 0 or len(out.weights) >= MAX_MEMORIES:
        return
    out.neighbours = _neighbours(conn, out.seeds, phrases)
    check()
    if not out.neighbours:
        return
    room = MAX_MEMORIES - len(out.weights)
    for memory_id in _memories(conn, out.neighbours, where, args, candidates, room,
                               exclude=list(out.weights)):
        out.weights.setdefault(memory_id, hop_weight)
    check()


def _seeds(conn: sqlite3.Connection, names: list[str],
           filters: RecallFilters | None, phrases: bool = False) -> list[str]:
    """Entities of these names in the scopes the recall may see (each project and private
    owner has its own: another project's hub must not take a seed's place)."""
    scope, args = entity_scope_clause(filters)
    return graph_recall.entities_named(conn, names, scope, args, phrases, MAX_SEEDS)


def _neighbours(conn: sqlite3.Connection, seeds: list[str], phrases: bool = False) -> list[str]:
    return graph_recall.strongest_neighbours(conn, seeds, phrases, MAX_NEIGHBOURS)


def _memories(
    conn: sqlite3.Connection,
    entity_ids: list[str],
    where: str,
    args: list[Any],
    candidates: Collection[str] | None,
    limit: int,
    exclude: list[str] | None = None,
) -> list[str]:
    return graph_recall.memories_linked_to(conn, entity_ids, where, args, candidates, limit,
                                           exclude)
