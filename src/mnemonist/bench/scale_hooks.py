"""The prompt hook at scale: what `mnemonist hook user-prompt-submit` costs the daemon.

After the recall phase of `bench scale`, each measured query is sent as a prompt through the
service call the HTTP route makes (`hook_user_prompt_submit`), each in a session of its own
(a session's first prompt: nothing held yet) in the project of the memory it is about, so
every call searches, scores relevance, drops stale statements, builds the block and records
what it injected. Latency per call, and how many memories the calls injected.
"""

from __future__ import annotations

import time
from array import array
from typing import Any

from mnemonist.bench.stats import summarize_ms
from mnemonist.bench.synthetic import SyntheticCorpus
from mnemonist.model.hooks import PromptSubmitRequest


def hook_phase(service: Any, corpus: SyntheticCorpus, n: int, queries: int,
               run: dict[str, Any]) -> None:
    # other queries than the recall phase's, so that no query embedding is cached already
    measured = corpus.queries(queries, n, seed=corpus.seed + 1)
    took = array("d")
    injected = array("d")
    for i, q in enumerate(measured):
        project = corpus.memory(q.target).project
        req = PromptSubmitRequest(session_id=f"bench-scale-hook-{n}-{i}", prompt=q.text,
                                  project=project, harness="bench")
        started = time.perf_counter()
        out = service.hooks.hook_user_prompt_submit(req)
        took.append(time.perf_counter() - started)
        injected.append(len(out["memories"]))
    run["prompt_hook"] = {
        "calls": len(measured),
        "latency_ms": summarize_ms(took),
        "memories_per_prompt": round(sum(injected) / max(1, len(injected)), 2),
        "prompts_with_none": sum(1 for x in injected if x == 0),
    }

