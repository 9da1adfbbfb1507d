"""Session expansion: rank the sources (conversation sessions, documents) that the first
round's candidates come from as wholes, then lift their turns and bring in the turns of the
best ones that neither leg proposed.

A question is often answered by a turn that shares few words with it but sits in a session
that, taken as a whole, is clearly about the question (the turns before and after name the
topic). A session's relevance is pooled from its turns' fused scores (each turn scored on
both legs: alpha·cosine + (1 − alpha)·keyword, a turn the keyword leg did not return counting
0 there): `top3` is the mean of its three best turns, `mean` the mean over every turn (the
session's centroid seen through the query), `max` its best turn.

With `search.session_signal: splade` (or `both`) and the sparse leg on, a session is also
ranked by its pooled SPLADE expansion against the query's (`search/session_splade.py`), and
the `session_find` sessions that match best join even when none of the first round's
candidates came from them: their turns are scored as fusion would score them and lifted by
their session's relevance like any other.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mnemonist.model.requests import RecallFilters
from mnemonist.search.filters import where_clause
from mnemonist.search.fusion import Fused
from mnemonist.store import recall_reads

#: sessions of the best candidates that are pooled (bounds the turns read per recall)
MAX_SESSIONS = 12
#: candidates whose sessions are pooled
SEED_CANDIDATES = 40
#: a session longer than this is a document, not a conversation: left out
MAX_TURNS = 200

Cosines = Callable[[list[int]], dict[int, float]]


Key = tuple[str, str]  # (project or "", source_id)


class SessionScores(Protocol):
    """Sessions ranked as wholes by another signal than the fused scores (SPLADE)."""

    def find(self, k: int) -> list[tuple[Key, float]]: ...

    def scores(self, keys: list[Key]) -> dict[Key, float]: ...


@dataclass(frozen=True)
class SessionExpansion:
    weight: float  # lift × (1 + weight · relevance), relevance 1 for the best session
    top: int  # sessions whose turns join the candidates
    pool: str  # top3 | mean | max
    signal: str = "fused"  # fused | splade | both: what a session's relevance is
    share: float = 0.5  # with `both`: relevance = (1 − share) · fused + share · splade
    find: int = 0  # sessions found by the other signal alone whose turns join


def _pooled(values: list[float], pool: str) -> float:
    if not values:
        return 0.0
    values = sorted(values, reverse=True)
    if pool == "max":
        return values[0]
    if pool == "mean":
        return sum(values) / len(values)
    head = values[:3]
    return sum(head) / 3.0  # a session of one strong turn is not a strong session


def _relative(values: dict[Key, float]) -> dict[Key, float]:
    """Each value relative to the largest (all 0 when none is positive)."""
    best = max(values.values(), default=0.0)
    return {k: v / best for k, v in values.items()} if best > 0 else dict.fromkeys(values, 0.0)


def _sessions_of(conn: sqlite3.Connection, seqs: list[int]) -> dict[int, tuple[str, str]]:
    """seq → (project, source_id) for the candidates that have a source."""
    if not seqs:
        return {}
    rows = recall_reads.sources_of(conn, seqs)
    return {seq: (project or "", source) for seq, project, source in rows}


def _members(
    conn: sqlite3.Connection, sessions: list[tuple[str, str]], filters: RecallFilters | None
) -> dict[tuple[str, str], list[int]]:
    """Every live turn of the sessions that passes the recall's filters."""
    where, args = where_clause(filters)
    sources = sorted({s for _, s in sessions})
    rows = recall_reads.source_members(conn, sources, where, args)
    wanted = set(sessions)
    out: dict[tuple[str, str], list[int]] = {}
    for seq, project, source in rows:
        key = (project or "", source)
        if key in wanted:
            out.setdefault(key, []).append(seq)
    return {k: v for k, v in out.items() if len(v) <= MAX_TURNS}


def expand_sessions(
    conn: sqlite3.Connection,
    fused: list[Fused],
    keyword: dict[int, float],
    cosines: Cosines,
    alpha: float,
    filters: RecallFilters | None,
    params: SessionExpansion,
    other: SessionScores | None = None,
) -> list[Fused]:
    """The candidates lifted by their session's relevance, with the turns of the `top` best
    sessions that were not candidates added (scored as fusion would have scored them).

    With `other` (the SPLADE session vectors) and `params.signal` splade or both, relevance
    comes from (or also from) `other`, and the `params.find` sessions it ranks best join the
    pooled ones and bring in all their turns, whether or not a candidate came from them."""
    if params.weight <= 0 or not fused:
        return fused
    signal = params.signal if other is not None else "fused"
    seeds = [f.seq for f in sorted(fused, key=lambda f: (-f.score, -f.seq))[:SEED_CANDIDATES]]
    of_seed = _sessions_of(conn, seeds)
    order: list[tuple[str, str]] = []
    for seq in seeds:
        key = of_seed.get(seq)
        if key is not None and key not in order:
            order.append(key)
    order = order[:MAX_SESSIONS]
    found: list[Key] = []
    if other is not None and signal != "fused" and params.find > 0:
        found = [k for k, _ in other.find(params.find)]
    if not order and not found:
        return fused
    members = _members(conn, order + [k for k in found if k not in order], filters)
    if not members:
        return fused
    by_seq = {f.seq: f for f in fused}
    every = [s for turns in members.values() for s in turns]
    missing = [s for s in every if s not in by_seq or by_seq[s].vector is None]
    cos = cosines(missing) if missing else {}

    def base(seq: int) -> tuple[float, float | None, float | None]:
        f = by_seq.get(seq)
        if f is not None and f.vector is not None:
            return f.score, f.keyword, f.vector
        kw = keyword.get(seq)
        c = cos.get(seq)
        if c is None:
            return (f.score if f else (kw or 0.0)), kw, None
        return alpha * max(c, 0.0) + (1.0 - alpha) * (kw or 0.0), kw, c

    relevance = _relative({key: _pooled([base(s)[0] for s in turns], params.pool)
                           for key, turns in members.items()})
    if other is not None and signal != "fused":
        splade = _relative(other.scores(list(members)))
        w = 1.0 if signal == "splade" else params.share
        relevance = {k: (1.0 - w) * relevance.get(k, 0.0) + w * splade.get(k, 0.0)
                     for k in members}
    if not relevance or max(relevance.values()) <= 0:
        return fused
    session_of = {s: key for key, turns in members.items() for s in turns}
    out: list[Fused] = []
    for f in fused:
        key = session_of.get(f.seq)
        if key is not None:
            f.score *= 1.0 + params.weight * relevance[key]
        out.append(f)
    chosen = sorted(relevance, key=lambda k: -relevance[k])[: params.top]
    chosen += [k for k in found if k in members and k not in chosen]
    for key in chosen:
        lift = 1.0 + params.weight * relevance[key]
        for seq in members[key]:
            if seq in by_seq:
                continue
            score, kw, c = base(seq)
            if c is None:
                continue
            out.append(Fused(seq, score * lift, "session", kw, c))
    return out



def spread_sessions(hits: list[Any], cap: int, head: int = 10) -> list[Any]:
    """The ranked hits with at most `cap` memories of one source among the first `head`: a
    memory over the cap waits until the head is full and then keeps its order among the rest
    (memories without a source are never held back)."""
    if cap <= 0:
        return hits
    out: list[Any] = []
    rest: list[Any] = []
    count: dict[tuple[str | None, str], int] = {}
    for h in hits:
        if len(out) >= head:
            rest.append(h)
            continue
        source = h.memory.source_id
        if source:
            key = (h.memory.project, source)
            if count.get(key, 0) >= cap:
                rest.append(h)
                continue
            count[key] = count.get(key, 0) + 1
        out.append(h)
    return out + rest
