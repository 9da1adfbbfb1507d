"""Hybrid recall: keyword and vector legs, fusion, importance decay, threshold, ordering."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from mnemonist.model.config import MemoryConfig, SearchConfig
from mnemonist.model.memory import Memory, format_ts, parse_ts
from mnemonist.model.requests import RecallFilters
from mnemonist.search.filters import only_project, where_clause
from mnemonist.search.fusion import fuse, normalize_bm25
from mnemonist.search.keyword import keyword_search
from mnemonist.search.vector_index import VectorIndex
from mnemonist.store import memories
from mnemonist.text.timeexpr import TimeWindow, find_time_window

QueryEmbedder = Callable[[str], "np.ndarray | None"]


@dataclass
class Hit:
    memory: Memory
    score: float
    source: str
    keyword_score: float | None
    vector_score: float | None


@dataclass
class SearchOutcome:
    hits: list[Hit]
    method: str  # hybrid | keyword
    degraded: list[str] = field(default_factory=list)
    window: TimeWindow | None = None


def narrow(filters: RecallFilters | None, window: TimeWindow) -> RecallFilters:
    """The filters with since/until narrowed to the window (end is exclusive)."""
    start = format_ts(window.start)
    end = format_ts(window.end - timedelta(milliseconds=1))
    base = filters or RecallFilters()
    since = max(base.since, start) if base.since else start
    until = min(base.until, end) if base.until else end
    return base.model_copy(update={"since": since, "until": until})


def effective_importance(m: Memory, decay_rate: float, now: datetime) -> float:
    """importance × decay_rate^days since last access (or creation); pinned never decays."""
    if m.pinned:
        return 1.0
    anchor = m.last_accessed or m.created_at
    try:
        days = max(0.0, (now - parse_ts(anchor)).total_seconds() / 86400.0)
    except ValueError:
        days = 0.0
    return m.importance * (decay_rate**days)


class HybridSearch:
    def __init__(
        self,
        index: VectorIndex | None,
        embed_query: QueryEmbedder,
        search_config: SearchConfig,
        memory_config: MemoryConfig,
    ) -> None:
        self.index = index
        self.embed_query = embed_query
        self.cfg = search_config
        self.mem_cfg = memory_config

    def search(
        self,
        conn: sqlite3.Connection,
        query: str,
        filters: RecallFilters | None,
        limit: int,
        min_score: float | None = None,
        *,
        now: datetime | None = None,
        time_filter: bool = False,
    ) -> SearchOutcome:
        """Time named in the query ("last week") becomes a preference for memories whose
        event time falls inside (or a filter with `time_filter`); its words leave both legs."""
        cfg = self.cfg
        window = find_time_window(query, now) if cfg.time_aware else None
        if window is not None:
            query = window.strip_from(query) or query
            if time_filter:
                filters = narrow(filters, window)
        outcome = self._search(conn, query, filters, limit, min_score, window, time_filter)
        outcome.window = window
        return outcome

    def _search(
        self,
        conn: sqlite3.Connection,
        query: str,
        filters: RecallFilters | None,
        limit: int,
        min_score: float | None,
        window: TimeWindow | None,
        time_filter: bool,
    ) -> SearchOutcome:
        cfg = self.cfg
        degraded: list[str] = []
        raw_kw = dict(keyword_search(conn, query, filters, cfg.top_k))
        keyword = normalize_bm25(raw_kw, cfg.keyword_norm)

        qvec = None
        if self.index is None:
            degraded.append("vector_index_unavailable")
        else:
            qvec = self.embed_query(query)
            if qvec is None:
                degraded.append("query_embedding_failed")

        vector_hits: set[int] = set()
        cosines: dict[int, float] = {}
        if qvec is not None and self.index is not None:
            allowed = None
            if not only_project(filters):
                where, args = where_clause(filters)
                sql = f"SELECT m.seq FROM memories m WHERE {where}"
                allowed = {r[0] for r in conn.execute(sql, args)}
            project = filters.project if filters else None
            top = self.index.search(
                qvec, cfg.top_k, project=project, filter_project=project is not None,
                allowed=allowed,
            )
            vector_hits = {seq for seq, _ in top}
            cosines = dict(top)
            cosines.update(self.index.scores(qvec, [s for s in keyword if s not in cosines]))

        fused = fuse(keyword, vector_hits, cosines, cfg.alpha)
        rows = memories.get_many_by_seq(conn, [f.seq for f in fused])
        now = datetime.now(UTC)
        threshold = cfg.min_score if min_score is None else min_score
        weight = cfg.importance_weight
        boost = 1.0 + cfg.time_weight if window is not None and not time_filter else 1.0
        lo = format_ts(window.start) if window else ""
        hi = format_ts(window.end) if window else ""
        hits: list[Hit] = []
        for f in fused:
            m = rows.get(f.seq)
            if m is None or m.is_deleted:
                continue
            imp = effective_importance(m, self.mem_cfg.decay_rate, now)
            score = f.score * ((1.0 - weight) + weight * imp)
            if boost != 1.0 and lo <= m.occurred_at < hi:
                score *= boost
            if score < threshold:
                continue
            hits.append(Hit(m, score, f.source, f.keyword, f.vector))
        hits.sort(key=lambda h: (-h.score, -h.memory.seq))
        method = "hybrid" if qvec is not None else "keyword"
        return SearchOutcome(hits[:limit], method, degraded)
