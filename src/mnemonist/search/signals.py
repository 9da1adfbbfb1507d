"""Ranking signals that follow a memory's life rather than its text: confidence decay by type
and the access boost (docs/ranking.md).

Both multiply into the fused score in `HybridSearch`:

    score = fused × ((1 − w) + w × effective_importance) × access_boost

with w = `search.importance_weight`.
"""

from __future__ import annotations

import math
from datetime import datetime

from mnemonist.model.config import MemoryConfig
from mnemonist.model.memory import Memory, parse_ts


def days_since_use(m: Memory, now: datetime) -> float:
    """Days since the memory was last accessed (recalled or injected), or since it was
    written when it never was; never negative."""
    anchor = m.last_accessed or m.created_at
    try:
        return max(0.0, (now - parse_ts(anchor)).total_seconds() / 86400.0)
    except ValueError:
        return 0.0


def decays(m: Memory, cfg: MemoryConfig) -> bool:
    """Whether the memory's confidence fades: never when pinned, never for a decision (it
    holds until a newer decision supersedes it, whatever the decay settings); with
    `decay_by_type` only for the `decay_types` (facts and statuses go stale, events do not)."""
    if m.pinned or m.type == "decision":
        return False
    return not cfg.decay_by_type or m.type in cfg.decay_types


def effective_importance(m: Memory, cfg: MemoryConfig, now: datetime) -> float:
    """importance × decay_rate^days since last use for a decaying memory; a pinned memory
    counts as 1.0, any other memory as its importance."""
    if m.pinned:
        return 1.0
    if not decays(m, cfg):
        return m.importance
    return m.importance * (cfg.decay_rate ** days_since_use(m, now))


def access_boost(recall_count: int, weight: float, cap: float) -> float:
    """1 + weight × log2(1 + recall_count), at most `cap`; 1.0 when the weight is 0.

    Counts explicit recalls only; the cap keeps a memory that was recalled often from
    outranking better matches forever."""
    if weight <= 0 or recall_count <= 0:
        return 1.0
    return min(cap, 1.0 + weight * math.log2(1 + recall_count))
