"""`bench scale`'s ranker phase: what the learned ranker costs recall, in the same run.

The recall phase's queries are asked again, each once with the ranker off and once on, the
order alternating from one query to the next so that neither side always goes first (and
every query's embedding is cached by then for both). The ratio of the two p95s is the cost.
"""

from __future__ import annotations

import time
from array import array
from typing import Any

from mnemonist.bench.ablation import Variant, applied
from mnemonist.bench.stats import summarize_ms
from mnemonist.bench.synthetic import SyntheticCorpus
from mnemonist.model.requests import RecallRequest

OFF = Variant("ranker-off", (("predictor.enabled", False),))


def ranker_phase(service: Any, corpus: SyntheticCorpus, n: int, queries: int, warmup: int,
                 limit: int, run: dict[str, Any]) -> None:
    measured = corpus.queries(warmup + queries, n)[warmup:]
    took: dict[bool, array] = {True: array("d"), False: array("d")}
    same_first = 0
    for i, q in enumerate(measured):
        firsts: dict[bool, str | None] = {}
        for on in ((True, False) if i % 2 else (False, True)):
            request = RecallRequest(query=q.text, limit=limit)
            if on:
                started = time.perf_counter()
                out = service.reads.recall(request)
                took[on].append(time.perf_counter() - started)
            else:
                with applied(service, OFF):
                    started = time.perf_counter()
                    out = service.reads.recall(request)
                    took[on].append(time.perf_counter() - started)
            firsts[on] = out["results"][0]["id"] if out["results"] else None
        same_first += firsts[True] == firsts[False]
    on_ms, off_ms = summarize_ms(took[True]), summarize_ms(took[False])
    p95_on, p95_off = on_ms.get("p95"), off_ms.get("p95")
    run["ranker"] = {
        "queries": len(measured),
        "on_ms": on_ms,
        "off_ms": off_ms,
        "p95_on_over_off": round(p95_on / p95_off, 3) if p95_on and p95_off else None,
        "same_first_result": same_first,
    }
