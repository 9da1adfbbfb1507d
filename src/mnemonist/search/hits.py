"""What a recall hands back: its hits (a memory, its scores, its calibrated relevance) and the
outcome around them; the time window a query names applied to its filters; the hits' full rows
read once ranking is done."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from mnemonist.model.memory import Memory, format_ts
from mnemonist.model.requests import RecallFilters
from mnemonist.store import memories
from mnemonist.text.timeexpr import TimeWindow


@dataclass
class Hit:
    memory: Memory
    score: float
    source: str
    keyword_score: float | None
    vector_score: float | None
    #: the raw BM25 strength (-bm25, absolute) of the memory's best keyword index; 0 when only
    #: the vector leg found it (search/relevance.py reads it)
    strength: float = 0.0
    #: the calibrated probability that the memory answers the query (search/relevance.py)
    relevance: float | None = None
    #: the fused score, before what recall's signals did to it (see `lift`)
    fused: float = 0.0

    @property
    def lift(self) -> float:
        """What recall's own signals multiplied the fused score by: importance and decay, the
        access boost, corroboration, a named time or person, the graph, dampening. The
        learned ranker's order keeps it: the ranker judges how well the memory matches the
        query, these say what else is known about the memory (and no benchmark can teach
        them: its memories are equally fresh, unused, said once)."""
        return self.score / self.fused if self.fused > 0 else 1.0


@dataclass
class SearchOutcome:
    hits: list[Hit]
    method: str  # hybrid | keyword
    degraded: list[str] = field(default_factory=list)
    window: TimeWindow | None = None
    #: the relevance model's feature rows of `hits` (search/relevance.py), when computed
    features: np.ndarray | None = None
    #: P(the store answers the query at all); None without a relevance model
    answerable: float | None = None
    #: the vector the query was searched with (training pairs keep it for feedback paths)
    query_vector: np.ndarray | None = None


def narrow(filters: RecallFilters | None, window: TimeWindow) -> RecallFilters:
    """The filters with since/until narrowed to the window (end is exclusive)."""
    start = format_ts(window.start)
    end = format_ts(window.end - timedelta(milliseconds=1))
    base = filters or RecallFilters()
    since = max(base.since, start) if base.since else start
    until = min(base.until, end) if base.until else end
    return base.model_copy(update={"since": since, "until": until})


def complete(conn: sqlite3.Connection, hits: list[Hit]) -> list[Hit]:
    """The hits with their full rows (ranking read only `RANKING_COLUMNS`); a hit whose row
    went away in between is dropped."""
    full = memories.get_many_by_seq(conn, [h.memory.seq for h in hits])
    out = []
    for h in hits:
        m = full.get(h.memory.seq)
        if m is not None:
            h.memory = m
            out.append(h)
    return out
