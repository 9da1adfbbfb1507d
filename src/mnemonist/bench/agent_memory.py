"""`mnemonist bench agent-memory`: recall on a small labelled agent-memory set (not LoCoMo).

The corpus and questions are `agent_memory_set.py`. The memories are remembered through the
service in one project, the questions recalled with the default settings, then each variant
(`--variant`, the same runtime settings as `bench locomo`) on the same memories.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from typing import Any

from mnemonist.bench.ablation import Variant, applied
from mnemonist.bench.agent_memory_set import MEMORIES, QUESTIONS
from mnemonist.bench.metrics import recall_at, reciprocal_rank
from mnemonist.daemon import open_memory
from mnemonist.model.requests import RecallRequest, RememberRequest

PROJECT = "agent-memory-bench"


def _score(service: Any, ids: dict[str, str]) -> dict[str, float]:
    r1 = r5 = r10 = mrr = 0.0
    for question, keys in QUESTIONS:
        relevant = {ids[k] for k in keys}
        got = service.reads.recall(RecallRequest(query=question, limit=10, project=PROJECT,
                                                 min_score=0.0))
        ranked = [r["id"] for r in got["results"]]
        r1 += recall_at(ranked, relevant, 1)
        r5 += recall_at(ranked, relevant, 5)
        r10 += recall_at(ranked, relevant, 10)
        mrr += reciprocal_rank(ranked, relevant)
    n = len(QUESTIONS)
    return {"n": n, "recall@1": r1 / n, "recall@5": r5 / n, "recall@10": r10 / n, "mrr": mrr / n}


def run_agent_memory(overrides: dict[str, Any] | None = None,
                     variants: Sequence[Variant] = ()) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mnemonist-agentmem-") as home:
        daemon = open_memory(home, overrides)
        try:
            service = daemon.service
            ids: dict[str, str] = {}
            for key, (kind, content) in MEMORIES.items():
                out = service.memories.remember(RememberRequest(content=content, type=kind,
                                                                project=PROJECT))
                ids[key] = out["id"]
            service.flush(timeout=600.0)
            rows = [{"name": "default", "settings": {}, **_score(service, ids)}]
            for variant in variants:
                with applied(service, variant):
                    rows.append({"name": variant.name, "settings": dict(variant.settings),
                                 **_score(service, ids)})
        finally:
            daemon.stop()
    return {"memories": len(MEMORIES), "questions": len(QUESTIONS), "rows": rows}


def markdown(report: dict[str, Any]) -> str:
    lines = [f"{report['memories']} memories, {report['questions']} questions", "",
             "| variant | settings | R@1 | R@5 | R@10 | MRR |", "|---|---|---|---|---|---|"]
    for row in report["rows"]:
        settings = ", ".join(f"`{k}={v}`" for k, v in row["settings"].items()) or "—"
        lines.append(f"| {row['name']} | {settings} | {row['recall@1']:.3f} | "
                     f"{row['recall@5']:.3f} | "
                     f"{row['recall@10']:.3f} | {row['mrr']:.3f} |")
    return "\n".join(lines)
