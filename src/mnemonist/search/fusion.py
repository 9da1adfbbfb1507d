"""Score fusion: per-query keyword normalisation and the alpha blend.

BM25 scores are normalised per query (min-max by default). The documents' `1/(1+|bm25|)` is
not offered: it gives the strongest keyword match the smallest bonus (measured 0.335
Recall@10 on LoCoMo against 0.651 for min-max; docs/decisions.md).
"""

from __future__ import annotations

from dataclasses import dataclass


def normalize_bm25(raw: dict[int, float], mode: str = "minmax") -> dict[int, float]:
    """Map raw FTS5 bm25 (negative, lower is better) to [0, 1], 1 for the best match."""
    if not raw:
        return {}
    strength = {seq: -score for seq, score in raw.items()}
    hi = max(strength.values())
    lo = min(strength.values())
    if mode == "max":
        return {s: (v / hi if hi > 0 else 1.0) for s, v in strength.items()}
    if hi - lo <= 1e-12:
        return dict.fromkeys(strength, 1.0)
    return {s: (v - lo) / (hi - lo) for s, v in strength.items()}


@dataclass
class Fused:
    seq: int
    score: float
    source: str  # keyword | vector | hybrid
    keyword: float | None
    vector: float | None


def fuse(
    keyword: dict[int, float],
    vector_hits: set[int],
    cosines: dict[int, float],
    alpha: float,
) -> list[Fused]:
    """Blend every candidate: alpha·cosine + (1-alpha)·keyword.

    Each leg contributes its own candidates. A candidate with a vector (all embedded memories
    have one in the index) is scored on both signals, a missing keyword score counting as 0;
    a memory not embedded yet keeps its keyword score alone, so it stays findable.
    """
    out: list[Fused] = []
    for seq in set(keyword) | vector_hits:
        kw = keyword.get(seq)
        cos = cosines.get(seq)
        if cos is None:
            score = kw or 0.0
        else:
            score = alpha * max(cos, 0.0) + (1.0 - alpha) * (kw or 0.0)
        in_kw, in_vec = seq in keyword, seq in vector_hits
        source = "hybrid" if in_kw and in_vec else ("keyword" if in_kw else "vector")
        out.append(Fused(seq, score, source, kw, cos))
    return out
