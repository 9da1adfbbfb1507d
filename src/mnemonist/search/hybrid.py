"""Hybrid recall: keyword and vector legs, fusion, importance decay and access boost
(`search/signals.py`), graph boost, threshold, ordering."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mnemonist.graph.boost import graph_boost
from mnemonist.graph.channel import SEED_MEMORIES
from mnemonist.graph.channel import candidates as traversal_candidates
from mnemonist.graph.walks import Limits
from mnemonist.model.config import MemoryConfig, PredictorConfig, SearchConfig
from mnemonist.model.memory import format_ts
from mnemonist.model.requests import RecallFilters
from mnemonist.search import relevance
from mnemonist.search.adaptation import moved
from mnemonist.search.authors import KnownAuthors
from mnemonist.search.corroboration import corroboration_factor
from mnemonist.search.dampening import Needed, dampen
from mnemonist.search.feedback import expansion_terms, rocchio, top_seqs
from mnemonist.search.filters import hidden_private, historical, only_project, where_clause
from mnemonist.search.fusion import Fused, fuse, normalize_bm25
from mnemonist.search.hits import Hit, SearchOutcome, complete, narrow
from mnemonist.search.keyword import keyword_search, phrase_search
from mnemonist.search.keyword_mirror_keeper import KeywordMirrorKeeper
from mnemonist.search.newest_first import newest_first
from mnemonist.search.overlap import started
from mnemonist.search.relevance import shipped_relevance_model
from mnemonist.search.relevance_features import RELEVANCE_DEPTH
from mnemonist.search.rerank import Reranker, make_reranker, rerank_head
from mnemonist.search.score_lifts import boost_by_source, boost_named_authors, named_author_lifts
from mnemonist.search.session_expansion import SessionExpansion, expand_sessions, spread_sessions
from mnemonist.search.signals import access_boost, effective_importance
from mnemonist.search.sparse_leg import SparseLeg, blend
from mnemonist.search.stages import StageClock, lap_of
from mnemonist.search.vector_index import VectorIndex
from mnemonist.store import embeddings, memories, recall_reads
from mnemonist.text.timeexpr import TimeWindow, find_time_window

log = logging.getLogger(__name__)

QueryEmbedder = Callable[[str], "np.ndarray | None"]
FeedbackPaths = Callable[[sqlite3.Connection, list[str], "np.ndarray | None"], dict[str, float]]


class HybridSearch:
    def __init__(
        self,
        index: VectorIndex | None,
        embed_query: QueryEmbedder,
        search_config: SearchConfig,
        memory_config: MemoryConfig,
    ) -> None:
        self.index = index
        self.context_index: VectorIndex | None = None
        self.sparse: SparseLeg | None = None  # learned sparse leg (sparse.enabled)
        #: the in-memory copy of the context keyword index (a started SQLite service)
        self.keyword_mirror: KeywordMirrorKeeper | None = None
        self.reranker: Reranker | None = make_reranker(memory_config.pipeline_v2.reranker)
        self.embed_query = embed_query
        self.cfg = search_config
        self.mem_cfg = memory_config
        self.authors = KnownAuthors()
        self.turn_weight: Callable[[], float] = lambda: 1.0  # session turns' multiplier
        #: the clock decay reads (the LoCoMo bench moves it to ask "N days later")
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)
        #: the calibrated relevance model (None: unreadable; relevance stays unset)
        self.relevance_model: Callable[[], relevance.RelevanceModel | None] = (
            shipped_relevance_model)
        #: the learned ranker's settings (the service reads them from its live config)
        self.predictor: Callable[[], PredictorConfig] = PredictorConfig
        #: the feedback paths of a home (search/adaptation.py): memory id -> -1..1 for the
        #: memories rated for this question asked before in any words
        self.feedback_paths: FeedbackPaths | None = None
        #: each recall's time per stage (search/stages.py; `bench scale` sets it)
        self.stages: StageClock | None = None

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
        min_relevance: float = 0.0,
        min_answerable: float = 0.0,
    ) -> SearchOutcome:
        """Time named in the query ("last week") becomes a preference for memories whose
        event time falls inside (or a filter with `time_filter`); its words leave both legs.
        `min_relevance` drops hits less likely than that to answer the query;
        `min_answerable` returns nothing when the store is less likely than that to answer it
        at all (`search/relevance.py`)."""
        cfg = self.cfg
        window = find_time_window(query, now) if cfg.time_aware else None
        if window is not None:
            query = window.strip_from(query) or query
            if time_filter:
                filters = narrow(filters, window)
        outcome = self._search(conn, query, filters, limit, min_score, window, time_filter,
                               min_relevance, min_answerable)
        outcome.window = window
        return outcome

    def _keyword(
        self, conn: sqlite3.Connection, query: str, filters: RecallFilters | None,
        hint_matched: set[int] | None = None, strengths: dict[int, float] | None = None,
    ) -> dict[int, float]:
        """Normalised keyword scores from the content index, the context index, or the better
        of the two per memory (each index normalised on its own); with hints on, the hints
        index joins them the same way (max, never a sum: a memory matched by its text and by
        a hint is not counted twice). The memories the hints index matched are added to
        `hint_matched` when given. A memory holding one of the query's two-word phrases gets
        `phrase_weight` × its phrase match (normalised to the best) on top, capped at 1.
        `strengths` (when given) gets each memory's raw BM25 strength, the best over the
        content and context indexes: an absolute measure the relevance model reads."""
        cfg = self.cfg
        fields = cfg.keyword_fields if cfg.context_window > 0 else "content"
        names = ("content", "context") if fields == "both" else (fields,)
        if self.mem_cfg.pipeline_v2.hints.enabled:
            names = (*names, "hints")
        scores: dict[int, float] = {}
        keeper = self.keyword_mirror
        mirror = keeper.usable() if keeper is not None and "context" in names else None
        for name in names:
            raw = dict(keyword_search(conn, query, filters, cfg.top_k, index=name,
                                      mirror=mirror))
            if name == "hints" and hint_matched is not None:
                hint_matched.update(raw)
            if strengths is not None and name != "hints":
                for seq, value in raw.items():
                    strengths[seq] = max(-value, strengths.get(seq, 0.0))
            for seq, value in normalize_bm25(raw, cfg.keyword_norm).items():
                scores[seq] = max(value, scores.get(seq, 0.0))
        if cfg.phrase_weight > 0:
            index = "content" if fields == "content" else "context"
            phrases = dict(phrase_search(conn, query, filters, cfg.top_k, index=index,
                                         mirror=mirror))
            for seq, value in normalize_bm25(phrases, "max").items():
                scores[seq] = min(1.0, scores.get(seq, 0.0) + cfg.phrase_weight * value)
        return scores

    def _visible(
        self, conn: sqlite3.Connection, filters: RecallFilters | None
    ) -> tuple[set[int] | None, set[int]]:
        """(allowed, hidden): the seqs the filters allow when they are more than a project
        (None: any), and others' private memories, which never take a place in the top k."""
        if not only_project(filters):
            where, args = where_clause(filters)
            return recall_reads.allowed_seqs(conn, where, args), set()
        return None, hidden_private(conn, filters)

    def _index_filters(
        self, filters: RecallFilters | None, visible: tuple[set[int] | None, set[int]]
    ) -> dict[str, Any]:
        """The vector index's own filters for the recall's (`visible`: `_visible`'s)."""
        allowed, hidden = visible
        project = filters.project if filters else None
        return {"project": project, "filter_project": project is not None, "allowed": allowed,
                "scope": filters.scope if filters else None, "hidden": hidden}

    def _vector_side(
        self, dense: str, filters: RecallFilters | None,
        visible: tuple[set[int] | None, set[int]],
    ) -> tuple[np.ndarray | None, list[tuple[int, float]] | None]:
        """The query vector, and the in-process index's first pass over every row for it
        (None for an index that has none): the part of the vector leg that reads nothing
        from the store, run on another thread while this recall runs its keyword leg."""
        qvec = self.embed_query(dense)
        first_pass = getattr(self.index, "first_pass", None)
        if qvec is None or first_pass is None:
            return qvec, None
        return qvec, first_pass(qvec, self.cfg.top_k, **self._index_filters(filters, visible))

    def _vector(
        self, conn: sqlite3.Connection, qvec: np.ndarray, filters: RecallFilters | None,
        keyword: dict[int, float],
        visible: tuple[set[int] | None, set[int]] | None = None,
        first: list[tuple[int, float]] | None = None,
    ) -> tuple[set[int], dict[int, float]]:
        """The vector leg's own candidates, and the cosine of every candidate of both legs
        (`visible`: `_visible`'s answer when the caller has it already; `first`: the
        index's `first_pass` for this vector and these filters, when it ran already)."""
        cfg, index = self.cfg, self.index
        assert index is not None
        if visible is None:
            visible = self._visible(conn, filters)
        allowed, hidden = visible
        project = filters.project if filters else None
        scope = filters.scope if filters else None
        index_filters = self._index_filters(filters, visible)
        if first is not None:
            index_filters["first"] = first
        top, of_keyword = index.search_and_score(qvec, cfg.top_k, keyword, **index_filters)
        old: dict[int, float] = {}
        if historical(filters):  # superseded rows are scored from their stored vectors
            where, args = where_clause(filters)
            for seq, vec in embeddings.superseded_vectors(conn, where, args, index.dimensions):
                old[seq] = float(vec @ np.asarray(qvec, dtype=np.float32))
            top = sorted([*top, *old.items()], key=lambda t: -t[1])[: cfg.top_k]
        vector_hits = {seq for seq, _ in top}
        cosines = {**old, **dict(top)}
        cosines.update({s: v for s, v in of_keyword.items() if s not in cosines})
        ctx, weight = self.context_index, cfg.context_vector_weight
        if ctx is not None and weight > 0 and cfg.context_window > 0:
            ctx_top = ctx.search(qvec, cfg.top_k, project=project,
                                 filter_project=project is not None, allowed=allowed,
                                 scope=scope, hidden=hidden)
            vector_hits |= {seq for seq, _ in ctx_top}
            candidates = vector_hits | set(keyword)
            cosines.update(index.scores(qvec, [s for s in candidates if s not in cosines]))
            around = ctx.scores(qvec, candidates)
            for seq in candidates:  # a memory's vector score: its text, and its context
                if seq in cosines and seq in around:
                    cosines[seq] = (1 - weight) * cosines[seq] + weight * around[seq]
        return vector_hits, cosines

    def _keyword_leg(
        self, conn: sqlite3.Connection, query: str, filters: RecallFilters | None,
        hint_matched: set[int], strengths: dict[int, float] | None = None,
    ) -> dict[int, float]:
        """The keyword leg's normalised scores (`_keyword`), blended with the learned sparse
        leg's when it is on."""
        keyword = self._keyword(conn, query, filters, hint_matched, strengths)
        if self.sparse is not None and self.cfg.sparse_weight > 0:
            keyword = blend(keyword, self.sparse.scores(query, filters, self.cfg.top_k,
                                                        self.cfg.sparse_fields),
                            self.cfg.sparse_weight, self.cfg.sparse_blend)
        return keyword

    def _fused(
        self, conn: sqlite3.Connection, query: str, qvec: np.ndarray | None,
        filters: RecallFilters | None, hint_matched: set[int],
        strengths: dict[int, float] | None = None, keyword: dict[int, float] | None = None,
        visible: tuple[set[int] | None, set[int]] | None = None,
        first: list[tuple[int, float]] | None = None,
    ) -> list[Fused]:
        """Both legs fused (`keyword`: the keyword leg's scores, `visible` and `first`: see
        `_vector`, when the caller has them)."""
        if keyword is None:
            keyword = self._keyword_leg(conn, query, filters, hint_matched, strengths)
        vector_hits: set[int] = set()
        cosines: dict[int, float] = {}
        if qvec is not None and self.index is not None:
            if visible is None:
                visible = self._visible(conn, filters)
            vector_hits, cosines = self._vector(conn, qvec, filters, keyword, visible, first)
        fused = fuse(keyword, vector_hits, cosines, self.cfg.alpha)
        return self._second_round(conn, query, qvec, filters, keyword, fused, visible)

    def _second_round(
        self, conn: sqlite3.Connection, query: str, qvec: np.ndarray | None,
        filters: RecallFilters | None, keyword: dict[int, float], fused: list[Fused],
        visible: tuple[set[int] | None, set[int]] | None = None,
    ) -> list[Fused]:
        """Pseudo-relevance feedback (`search/feedback.py`) and session expansion
        (`search/session_expansion.py`), each off unless its weight is set."""
        cfg = self.cfg
        if not fused:
            return fused
        if cfg.expansion_terms > 0:
            terms = expansion_terms(conn, query, fused, cfg.feedback_depth, cfg.expansion_terms)
            if terms:
                more = self._keyword(conn, " ".join(terms), filters)
                w = cfg.expansion_weight
                keyword = {s: (1 - w) * keyword.get(s, 0.0) + w * more.get(s, 0.0)
                           for s in set(keyword) | set(more)}
        vec = qvec
        if qvec is not None and self.index is not None and cfg.feedback_weight > 0:
            moved = rocchio(self.index, qvec, top_seqs(fused, cfg.feedback_depth),
                            cfg.feedback_weight)
            vec = qvec if moved is None else moved
        if vec is not qvec or cfg.expansion_terms > 0:
            vector_hits: set[int] = set()
            cosines: dict[int, float] = {}
            if vec is not None and self.index is not None:
                vector_hits, cosines = self._vector(conn, vec, filters, keyword, visible)
            fused = fuse(keyword, vector_hits, cosines, cfg.alpha)
        if cfg.session_weight > 0 and vec is not None and self.index is not None:
            index = self.index
            other = None
            if cfg.session_signal != "fused" and self.sparse is not None:
                other = self.sparse.session_view(conn, query, filters, cfg.session_splade_pool)
            fused = expand_sessions(
                conn, fused, keyword, lambda seqs: index.scores(vec, seqs), cfg.alpha, filters,
                SessionExpansion(cfg.session_weight, cfg.session_top, cfg.session_pool,
                                 cfg.session_signal, cfg.session_splade_share, cfg.session_find),
                other,
            )
        return fused

    def _dense_query(self, conn: sqlite3.Connection, query: str) -> str:
        cfg = self.cfg
        if cfg.who_strip and cfg.who_weight > 0:
            return self.authors.strip(conn, query)
        return query

    def _boost_by_graph(
        self, conn: sqlite3.Connection, hits: list[Hit], query: str,
        filters: RecallFilters | None,
    ) -> bool:
        """score += boostWeight × share for hits linked to an entity the query names (share 1)
        or to its neighbour (share hopWeight); part of fusion, so before dampening and the
        threshold. True when the lookup ran out of time (the boost is then partial)."""
        gcfg = self.mem_cfg.pipeline_v2.graph
        if not (gcfg.enabled and gcfg.boost_weight > 0 and hits):
            return False
        boost = graph_boost(conn, query, filters, timeout_ms=gcfg.boost_timeout_ms,
                            hop_weight=gcfg.hop_weight, candidates=[h.memory.id for h in hits],
                            phrases=gcfg.boost_phrases)
        for h in hits:
            share = boost.weights.get(h.memory.id)
            if share:
                h.score += gcfg.boost_weight * share
        return boost.timed_out

    def _traversal_channel(
        self, conn: sqlite3.Connection, fused: list[Fused], qvec: np.ndarray | None,
        filters: RecallFilters | None,
    ) -> list[Fused]:
        """Memories the graph reaches from the best candidates (`graph/channel.py`), new
        to fusion, scored alpha·cosine × path confidence × the channel's weight."""
        gcfg = self.mem_cfg.pipeline_v2.graph
        t = gcfg.traversal
        seeds = [f.seq for f in sorted(fused, key=lambda f: -f.score)[:SEED_MEMORIES]]
        limits = Limits(t.min_confidence, t.max_branching, t.max_paths, min(2, t.max_hops),
                        t.timeout_ms)
        try:
            reached = traversal_candidates(conn, seeds, filters, limits)
        except sqlite3.Error as exc:  # a channel only adds: recall goes on without it
            log.warning("traversal channel failed: %s", exc)
            return []
        seen = {f.seq for f in fused}
        new = [s for s in reached if s not in seen]
        if not new or qvec is None or self.index is None:
            return []
        cosines = self.index.scores(qvec, new)
        alpha, weight = self.cfg.alpha, gcfg.traversal_channel_weight
        return [Fused(s, weight * reached[s] * alpha * max(cos, 0.0), "graph", None, cos)
                for s, cos in cosines.items()]

    def _search(
        self,
        conn: sqlite3.Connection,
        query: str,
        filters: RecallFilters | None,
        limit: int,
        min_score: float | None,
        window: TimeWindow | None,
        time_filter: bool,
        min_relevance: float = 0.0,
        min_answerable: float = 0.0,
    ) -> SearchOutcome:
        cfg = self.cfg
        lap = lap_of(self.stages)
        degraded: list[str] = []
        qvec = None
        first: list[tuple[int, float]] | None = None
        visible: tuple[set[int] | None, set[int]] | None = None
        vector: Callable[[], tuple[np.ndarray | None, list[tuple[int, float]] | None]] | None
        vector = None
        if self.index is None:
            degraded.append("vector_index_unavailable")
        else:  # embedded (and searched) on another thread while this one runs the keyword leg
            dense = self._dense_query(conn, query)
            seen = visible = self._visible(conn, filters)
            vector = started(lambda: self._vector_side(dense, filters, seen))

        lap("start")
        hint_matched: set[int] = set()
        strengths: dict[int, float] = {}
        keyword = self._keyword_leg(conn, query, filters, hint_matched, strengths)
        lap("keyword")
        if vector is not None:
            qvec, first = vector()
            if qvec is None:
                degraded.append("query_embedding_failed")
        lap("vector_wait")
        fused = self._fused(conn, query, qvec, filters, hint_matched, strengths, keyword,
                            visible, first)
        lap("fusion")
        if window is not None and not time_filter and cfg.time_candidates > 0:
            # the time named may be all the query says about what it wants ("what did we
            # discuss on 11 December?"): that time's best memories join the candidates
            taken = {f.seq for f in fused}
            for f in self._fused(conn, query, qvec, narrow(filters, window), hint_matched,
                                 strengths):
                if f.seq not in taken:
                    f.score *= cfg.time_candidates
                    fused.append(f)
        gcfg = self.mem_cfg.pipeline_v2.graph
        if gcfg.enabled and gcfg.traversal_channel and fused:
            fused += self._traversal_channel(conn, fused, qvec, filters)
        lap("more_candidates")
        # every candidate passes the filters here, whichever index proposed it (an in-memory
        # index may lag a commit by a moment; the table never does)
        where, args = where_clause(filters)
        rows = memories.ranking_rows(conn, [f.seq for f in fused], where, args)
        lap("ranking_rows")
        now = self.clock()
        mem_cfg = self.mem_cfg
        threshold = cfg.min_score if min_score is None else min_score
        weight = cfg.importance_weight
        turn_weight = self.turn_weight()
        boost = 1.0 + cfg.time_weight if window is not None and not time_filter else 1.0
        lo = format_ts(window.start) if window else ""
        hi = format_ts(window.end) if window else ""
        hits: list[Hit] = []
        boost_weight, boost_cap = mem_cfg.access_boost_weight, mem_cfg.access_boost_cap
        corroboration = cfg.corroboration_weight
        for f in fused:
            m = rows.get(f.seq)
            if m is None or m.is_deleted:
                continue
            imp = effective_importance(m, mem_cfg, now)
            score = f.score * ((1.0 - weight) + weight * imp)
            if boost_weight > 0:  # else 1.0
                score *= access_boost(m.recall_count, boost_weight, boost_cap)
            if boost != 1.0 and lo <= m.occurred_at < hi:
                score *= boost
            if m.source_type == "session":
                score *= turn_weight
            if m.observation_count > 1:  # else 1.0
                score *= corroboration_factor(m.observation_count, corroboration)
            hits.append(Hit(m, score, f.source, f.keyword, f.vector,
                            strengths.get(f.seq, 0.0), fused=f.score))
        lap("signals")
        if self._boost_by_graph(conn, hits, query, filters):
            degraded.append("graph_timeout")
        lap("graph_boost")
        pcfg = self.predictor()
        depth = max(limit, RELEVANCE_DEPTH, pcfg.depth if pcfg.enabled else 0)
        rcfg = self.mem_cfg.pipeline_v2.reranker
        reranking = self.reranker is not None and (rcfg.enabled or cfg.reranking)
        lifts = named_author_lifts(hits, query, cfg.who_weight)
        # what is read of the order below: the first `depth` hits passing the threshold
        # (unless a later step reads further: the source boost, the cap per source, a reranker)
        needed = (Needed(depth, threshold, lifts, lifts)
                  if cfg.source_boost <= 0 and cfg.session_cap <= 0 and not reranking else None)
        dampen(conn, hits, query, self.mem_cfg.pipeline_v2.dampening, hint_matched=hint_matched,
               needed=needed)
        boost_named_authors(hits, query, cfg.who_weight, lifts)
        if cfg.source_boost > 0:
            boost_by_source(hits, cfg.source_boost)
        lap("dampening")
        hits = [h for h in hits if h.score >= threshold]
        hits.sort(key=lambda h: (-h.score, -h.memory.seq))
        hits = spread_sessions(hits, cfg.session_cap)
        reranked = False  # a configured reranker's order stands: the learned one keeps it
        if reranking:
            assert self.reranker is not None
            hits, rerank_outcome = rerank_head(self.reranker, query, hits, rcfg.top_n,
                                               rcfg.timeout_ms / 1000.0)
            reranked = rerank_outcome == "reranked"
            if not reranked:
                degraded.append(f"reranker_{rerank_outcome}")
        lap("order")
        method = "hybrid" if qvec is not None else "keyword"
        shown = hits[:depth]  # the ranking rows hold all the features read
        features, answerable, ranking = self._relevance(conn, query, shown, qvec, degraded)
        if ranking is not None and self.feedback_paths is not None:
            self._follow_paths(conn, shown, qvec, ranking, pcfg.feedback_weight)
        if pcfg.enabled and not reranked and ranking is not None and features is not None:
            ranked = min(pcfg.depth, len(shown))
            order = sorted(range(ranked), key=lambda i: -ranking[i] * shown[i].lift)
            order += list(range(ranked, len(shown)))
            shown = [shown[i] for i in order]
            features = features[order]
        lap("relevance")
        # the head, read in full (what is returned, and what newest-first reads); a hit whose
        # row went away meanwhile is dropped with its feature row
        head = shown[:max(limit, RELEVANCE_DEPTH)]
        alive = {id(h) for h in complete(conn, head)}
        kept = [i for i, h in enumerate(head) if id(h) in alive]
        shown = [head[i] for i in kept]
        if features is not None:
            features = features[kept]
        lap("complete")
        if window is None and not historical(filters) and cfg.newest_first_share > 0:
            order = newest_first(query, shown, cfg.newest_first_share)
            if features is not None:
                features = features[order]
        lap("newest_first")
        keep = list(range(len(shown)))
        if answerable is not None and answerable < min_answerable:
            keep = []  # nothing in scope answers the query: nothing is returned
        elif min_relevance > 0:
            keep = [i for i in keep if (relevance := shown[i].relevance) is None
                    or relevance >= min_relevance]
        keep = keep[:limit]
        outcome = SearchOutcome([shown[i] for i in keep], method, degraded)
        outcome.features = features[keep] if features is not None else None
        outcome.answerable = answerable
        outcome.query_vector = qvec
        lap("finish")
        return outcome

    def _follow_paths(self, conn: sqlite3.Connection, hits: list[Hit],
                      qvec: np.ndarray | None, ranking: np.ndarray, weight: float) -> None:
        """Memories rated for this question asked before move up (helped) or down (did not):
        their relevance (`search/adaptation.py`), and their place: a memory rated helpful by
        all who rated it goes above every memory nobody rated (what a person said was the
        answer comes first), one rated unhelpful sinks by its relevance."""
        assert self.feedback_paths is not None
        paths = self.feedback_paths(conn, [h.memory.id for h in hits], qvec)
        for i, h in enumerate(hits):
            path = paths.get(h.memory.id)
            if path:
                ranking[i] = moved(float(ranking[i]), path, weight) + weight * max(path, 0.0)
                if h.relevance is not None:
                    h.relevance = moved(h.relevance, path, weight)

    def _relevance(
        self, conn: sqlite3.Connection, query: str, hits: list[Hit], qvec: np.ndarray | None,
        degraded: list[str],
    ) -> tuple[np.ndarray | None, float | None, np.ndarray | None]:
        """Each hit's calibrated relevance (`search/relevance.py`), the feature rows (the
        benchmark fits the model on them), P(the store answers the query) (0 when nothing
        was found) and the learned ranker's P(this hit is an answer) per hit (None when it
        cannot judge). A model that cannot be read leaves relevance unset, answerability None,
        and says so in `degraded`."""
        model = self.relevance_model()
        if model is None:
            degraded.append("relevance_model_unavailable")
        if not hits:
            return None, None if model is None else 0.0, None
        cosines: dict[int, float] = {}
        context: dict[int, float] = {}
        seqs = [h.memory.seq for h in hits]
        if qvec is not None and self.index is not None:
            cosines = self.index.scores(qvec, seqs)
            if self.context_index is not None and self.cfg.context_window > 0:
                context = self.context_index.scores(qvec, seqs)
        x = relevance.features(query, hits, cosines, context)
        if model is None or not cosines:
            # no query vector, or none of the hits embedded yet (just remembered): the model
            # reads cosines, so it cannot judge; recall goes on as it ranked
            return x, None, None
        ranking, probability = model.hit_and_relevance(x)
        for h, p in zip(hits, probability.tolist(), strict=True):
            # a memory not embedded yet has no cosine: its relevance is unknown, not low
            h.relevance = float(p) if h.memory.seq in cosines else None
        return x, model.answerable_of(x), ranking
