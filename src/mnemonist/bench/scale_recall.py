"""`bench scale`'s recall phase: the recalls timed through the service, each leg alone (query
embedding, keyword leg as recall runs it, vector leg), the legs in sequence, and a sanity check
that the memory a query was made from comes back (bench/scale.py runs it)."""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from typing import Any

from mnemonist.bench.stats import Progress, SchedSample, summarize_ms
from mnemonist.bench.synthetic import SyntheticCorpus
from mnemonist.model.requests import RecallRequest
from mnemonist.search import keyword
from mnemonist.search.filters import where_clause
from mnemonist.search.keyword import keyword_search, phrase_search
from mnemonist.search.stages import STAGES, StageClock
from mnemonist.store.backend import is_postgres
from mnemonist.text.tokens import fts_match_query

RECALL_LIMIT = 10


def timed(fn: Callable[..., Any]) -> tuple[float, Any]:
    """`fn()` and the seconds it took (`fn` may bind loop values as defaults: `lambda t=t:`)."""
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def recall_phase(
    service: Any,
    corpus: SyntheticCorpus,
    n: int,
    queries: int,
    warmup: int,
    run: dict[str, Any],
    progress: bool,
) -> None:
    qs = corpus.queries(warmup + queries, n)
    warm, measured = qs[:warmup], qs[warmup:]
    for q in warm:
        service.reads.recall(RecallRequest(query=q.text, limit=RECALL_LIMIT))

    bar = Progress("recall", len(measured), enabled=progress, unit="queries")
    recall_s = array("d")
    sched = SchedSample()
    methods: dict[str, int] = {}
    result_ids: list[list[str]] = []
    searcher = service.core.searcher
    clock = searcher.stages = StageClock()  # where each recall's time goes (search/stages.py)
    stage_s: dict[str, array] = {stage: array("d") for stage in STAGES}
    for i, q in enumerate(measured, 1):
        body = {"query": q.text, "limit": RECALL_LIMIT}
        sched.before()
        took, out = timed(lambda b=body: service.reads.recall(RecallRequest.model_validate(b)))
        sched.after()
        recall_s.append(took)
        laps = clock.take()
        for stage, seconds in stage_s.items():
            seconds.append(laps.get(stage, 0.0))
        methods[out["method"]] = methods.get(out["method"], 0) + 1
        result_ids.append([r["id"] for r in out["results"]])
        bar.update(i)
    bar.finish()
    searcher.stages = None

    conn = service.core.db.reader()
    top_k = service.core.config.search.top_k
    embed_s, kw_s, vec_s = array("d"), array("d"), array("d")
    vectors = []
    if service.core.provider is not None:
        for q in measured:
            took, matrix = timed(lambda t=q.text: service.core.provider.embed([t]))
            embed_s.append(took)
            vectors.append(matrix[0])
    ctx_s, joined_s, leg_s = array("d"), array("d"), array("d")
    mirror_ctx_s, mirror_leg_s = array("d"), array("d")
    keeper = service.core.searcher.keyword_mirror
    mirror = keeper.usable() if keeper is not None else None
    where, args = where_clause(None)
    for q in measured:
        if mirror is not None:  # the leg as recall runs it once the mirror is built
            mirror_ctx_s.append(timed(lambda t=q.text: keyword_search(
                conn, t, None, top_k, index="context", mirror=mirror))[0])
            mirror_leg_s.append(mirror_ctx_s[-1] + timed(lambda t=q.text: phrase_search(
                conn, t, None, top_k, index="context", mirror=mirror))[0])
        kw_s.append(timed(lambda t=q.text: keyword_search(conn, t, None, top_k))[0])
        ctx_s.append(timed(lambda t=q.text: keyword_search(conn, t, None, top_k,
                                                           index="context"))[0])
        # the whole leg as recall runs it by default: the context index, then its phrases
        leg_s.append(ctx_s[-1] + timed(lambda t=q.text: phrase_search(
            conn, t, None, top_k, index="context"))[0])
        match = fts_match_query(q.text) if not is_postgres(conn) else None
        if match is not None:  # the same search with the filters inside the FTS5 query
            joined_s.append(timed(lambda m=match: keyword._joined(
                conn, keyword.INDEXES["context"], m, where, args, top_k))[0])
    index = service.core.index
    if index is not None:
        for v in vectors:
            vec_s.append(timed(lambda v=v: index.search(v, top_k))[0])
    in_sequence = _legs_in_sequence(service, conn, measured, top_k, mirror)

    recall = summarize_ms(recall_s)
    legs = {
        "query_embedding_ms": summarize_ms(embed_s),
        "keyword_ms": summarize_ms(kw_s),
        "vector_ms": summarize_ms(vec_s),
    }
    extra_legs = {
        "keyword_context_ms": summarize_ms(ctx_s),
        "keyword_context_joined_ms": summarize_ms(joined_s),
        "keyword_context_and_phrase_ms": summarize_ms(leg_s),
        "keyword_context_mirror_ms": summarize_ms(mirror_ctx_s),
        "keyword_context_and_phrase_mirror_ms": summarize_ms(mirror_leg_s),
    }
    p50 = recall.get("p50")
    parts = [legs[k].get("p50") for k in ("query_embedding_ms", "keyword_ms", "vector_ms")]
    rest = p50 - sum(x for x in parts if x is not None) if p50 is not None else None
    # the legs as recall runs them: the keyword leg over the context index with its phrase
    # query, from the keyword mirror when recall reads it (FTS5, or PostgreSQL, otherwise)
    as_recall = ("keyword_context_and_phrase_mirror_ms" if mirror_leg_s
                 else "keyword_context_and_phrase_ms")
    own = [legs["query_embedding_ms"].get("p50"), extra_legs[as_recall].get("p50"),
           legs["vector_ms"].get("p50")]
    legs_sum = sum(own) if all(x is not None for x in own) else None  # type: ignore[arg-type]
    run["recall"] = {
        "queries": len(measured),
        "warmup_queries": len(warm),
        "distinct_query_strings": len({q.text for q in qs}) == len(qs),
        "indexed_vectors": len(index) if index is not None else 0,
        "methods": methods,
        "latency_ms": recall,
        **sched.report(),
        "legs": legs,
        "keyword_variants": extra_legs,
        "ratios_p50": {
            "recall_over_keyword": ratio(p50, legs["keyword_ms"].get("p50")),
            "recall_over_vector": ratio(p50, legs["vector_ms"].get("p50")),
            "recall_over_query_embedding": ratio(p50, legs["query_embedding_ms"].get("p50")),
            "rest_ms": round(rest, 3) if rest is not None else None,
            "keyword_leg_as_recall": as_recall,
            "legs_sum_ms": round(legs_sum, 3) if legs_sum is not None else None,
            "recall_over_legs": ratio(p50, legs_sum),
            "rest_as_recall_ms": (round(p50 - legs_sum, 3)
                                  if p50 is not None and legs_sum is not None else None),
            "recall_over_legs_in_sequence": ratio(p50, in_sequence.get("sum_p50_ms")),
        },
        "legs_in_sequence": in_sequence,
        "stages": _stages(stage_s, extra_legs[as_recall].get("p50")),
        "target_in_top": _target_hits(conn, corpus, measured, result_ids),
    }


def _legs_in_sequence(service: Any, conn: Any, measured: list[Any], top_k: int,
                      mirror: Any) -> dict[str, Any]:
    """The three legs one after another for each query, as a recall runs them: each finds the
    CPU caches the other two left (the loops above run each leg warm, query after query)."""
    index, provider = service.core.index, service.core.provider
    if index is None or provider is None:
        return {}
    embed_s, kw_s, vec_s = array("d"), array("d"), array("d")
    for q in measured:
        took, matrix = timed(lambda t=q.text: provider.embed([t]))
        embed_s.append(took)
        kw_s.append(timed(lambda t=q.text: (
            keyword_search(conn, t, None, top_k, index="context", mirror=mirror),
            phrase_search(conn, t, None, top_k, index="context", mirror=mirror)))[0])
        vec_s.append(timed(lambda v=matrix[0]: index.search(v, top_k))[0])
    out: dict[str, Any] = {"query_embedding_ms": summarize_ms(embed_s),
                           "keyword_ms": summarize_ms(kw_s), "vector_ms": summarize_ms(vec_s)}
    parts = [out[k].get("p50") for k in ("query_embedding_ms", "keyword_ms", "vector_ms")]
    out["sum_p50_ms"] = (round(sum(parts), 3) if all(x is not None for x in parts)
                         else None)
    return out


def _stages(stage_s: dict[str, array], keyword_alone_p50: float | None) -> dict[str, Any]:
    """Each stage of the recalls (search/stages.py): its mean and p50 in ms, the stages' means
    summed, and the keyword leg inside recall (beside the query embedding on the other
    thread) over the same leg alone."""
    out: dict[str, Any] = {}
    for stage, seconds in stage_s.items():
        summary = summarize_ms(seconds)
        out[stage] = {"mean": summary.get("mean"), "p50": summary.get("p50")}
    means = [v["mean"] for v in out.values() if v["mean"] is not None]
    out["sum_of_means_ms"] = round(sum(means), 3)
    inside = out["keyword"]["p50"]
    out["keyword_inside_over_alone_p50"] = ratio(inside, keyword_alone_p50)
    return out


def _target_hits(conn, corpus, measured, result_ids) -> dict[str, Any]:
    """A sanity check, not a quality benchmark: how often the memory a query was made from
    is among the first results, per query kind."""
    found: dict[str, list[int]] = {}
    for q, ids in zip(measured, result_ids, strict=True):
        content = corpus.memory(q.target).content
        row = conn.execute("SELECT id, content FROM memories WHERE seq = ?", (q.target + 1,))
        row = row.fetchone()
        if row is None or row["content"] != content:  # seq mapping broken: look it up
            row = conn.execute("SELECT id FROM memories WHERE content = ?", (content,)).fetchone()
        hit = row is not None and row["id"] in ids
        stats = found.setdefault(q.kind, [0, 0])
        stats[0] += int(hit)
        stats[1] += 1
    out: dict[str, Any] = {"limit": RECALL_LIMIT}
    for kind, (hits, total) in sorted(found.items()):
        out[kind] = round(hits / total, 3) if total else None
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return round(a / b, 2)
