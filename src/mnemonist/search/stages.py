"""Where a recall's time goes: the wall time of each of its stages, for `bench scale`.

The benchmark times each leg alone (the query embedding, the keyword leg, the vector leg) and
the whole recall; what lies between is the ranking's own work and the legs' cost when they
run together (recall embeds the query on another thread while it runs the keyword leg, and on
two cores the keyword leg then runs slower than alone). With a `StageClock` set on the
searcher, each recall records how long each stage took, so the report can say which.

Off (None) in the daemon: recall then pays one attribute test per stage.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: the stages in the order a recall passes them (`HybridSearch._search`)
STAGES = (
    "start",          # the time words, the filters' visible set, the query's vector started
    "keyword",        # the keyword leg, while the query is embedded on the other thread
    "vector_wait",    # what is left of the embedding and the index's first pass
    "fusion",         # the vector leg's scores, fusion, session expansion
    "more_candidates",  # a named time's own candidates, the graph traversal channel
    "ranking_rows",   # the candidates' rows (and the filters checked on them)
    "signals",        # importance, decay, access, time, corroboration per candidate
    "graph_boost",
    "dampening",      # hub dampening and the named authors' lifts
    "order",          # the threshold, the sort, a configured reranker
    "relevance",      # the features, the calibrated relevance, the learned ranker's order
    "complete",       # the head's full rows
    "newest_first",
    "finish",
)

Lap = Callable[[str], None]


def _no_lap(stage: str) -> None:
    return None


class StageClock:
    """Seconds per stage of each recall, kept per thread until `take` hands them over."""

    def __init__(self) -> None:
        self._local = threading.local()

    def begin(self) -> Lap:
        """Start a recall's clock; returns what marks the end of each stage."""
        laps: dict[str, float] = {}
        self._local.laps = laps
        last = [time.perf_counter()]

        def lap(stage: str) -> None:
            now = time.perf_counter()
            laps[stage] = laps.get(stage, 0.0) + now - last[0]
            last[0] = now

        return lap

    def take(self) -> dict[str, float]:
        """The stages of this thread's last recall (empty when none ran), then forgotten."""
        laps: dict[str, float] = getattr(self._local, "laps", {})
        self._local.laps = {}
        return laps


def lap_of(clock: StageClock | None) -> Lap:
    """The clock's lap for a new recall, or a mark that does nothing."""
    return clock.begin() if clock is not None else _no_lap
