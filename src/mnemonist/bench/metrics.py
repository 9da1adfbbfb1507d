"""Retrieval metrics for one question with binary relevance, and their summaries."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

# -- metrics (one question, binary relevance) ----------------------------------------------


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Fraction of the relevant items among the top k."""
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def hit_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """1 when any relevant item is among the top k."""
    return 1.0 if relevant.intersection(ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: set[str]) -> float:
    """1 / rank of the first relevant item (0 when none was retrieved)."""
    for rank, item in enumerate(ranked, start=1):
        if item in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    """Binary-relevance NDCG@k; the ideal ranking puts min(#relevant, k) hits first."""
    dcg = sum(1.0 / math.log2(i + 2) for i, item in enumerate(ranked[:k]) if item in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def session_recall_at(
    ranked_sessions: Sequence[Iterable[int]], relevant: set[int], k: int
) -> tuple[float, float]:
    """(any, all): do the sessions of the top-k turns hold ≥1 / every relevant session?"""
    found: set[int] = set()
    for sessions in ranked_sessions[:k]:
        found.update(sessions)
    hit = relevant & found
    return (1.0 if hit else 0.0), (1.0 if relevant and hit == relevant else 0.0)


def question_metrics(
    ranked: Sequence[str],
    relevant: set[str],
    sessions_of: dict[str, set[int]],
    relevant_sessions: set[int],
    ks: Sequence[int],
) -> dict[str, float]:
    """Every metric of one ranking. Items are memory ids: evidence turns that became one
    memory (identical text) count once; a memory belongs to the sessions of its turns."""
    ranked = list(dict.fromkeys(ranked))
    ranked_sessions = [sessions_of.get(item, set()) for item in ranked]
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = recall_at(ranked, relevant, k)
    for k in ks:
        out[f"hit@{k}"] = hit_at(ranked, relevant, k)
    out["mrr"] = reciprocal_rank(ranked, relevant)
    out["ndcg@10"] = ndcg_at(ranked, relevant, 10)
    for k in ks:
        any_k, all_k = session_recall_at(ranked_sessions, relevant_sessions, k)
        out[f"session_any@{k}"] = any_k
        out[f"session_all@{k}"] = all_k
    return out


def first_rank(ranked: Sequence[str], relevant: set[str]) -> int | None:
    for rank, item in enumerate(ranked, start=1):
        if item in relevant:
            return rank
    return None


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]}


def latency_summary(seconds: list[float]) -> dict[str, float | int]:
    if not seconds:
        return {"n": 0}
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {
        "n": len(seconds),
        "p50": round(float(np.percentile(ms, 50)), 3),
        "p95": round(float(np.percentile(ms, 95)), 3),
        "mean": round(float(ms.mean()), 3),
        "max": round(float(ms.max()), 3),
    }


# -- the run -------------------------------------------------------------------------------
