"""Corroboration as a ranking signal: a memory that several agents stored independently is
more likely to hold. score × (1 + weight × log2(observation_count)); a memory stored by one
agent (count 1) is unchanged, two agents lift it by `weight`, four by 2 × `weight`."""

from __future__ import annotations

import math


def corroboration_factor(observation_count: int, weight: float) -> float:
    """The multiplier of a memory stored `observation_count` times by different agents."""
    if weight <= 0 or observation_count <= 1:
        return 1.0
    return 1.0 + weight * math.log2(observation_count)
