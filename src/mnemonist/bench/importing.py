"""Import throughput: the synchronous write of N memories through bulk import.

Memories are posted in chunks of 1,000 (as `mnemonist import` does) to the in-process service;
the clock covers validation, scrubbing, normalisation, dedup, history, job rows and the
context index — everything before the answer — while the background embedder runs as it
would in production (it is niced and writes in its own short transactions). A re-run of the
same items measures the idempotent path.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from mnemonist.bench.synthetic import SyntheticCorpus
from mnemonist.model.requests import ImportRequest, RememberRequest
from mnemonist.providers.embedding.local_onnx import available_cores

CHUNK = 1000


def run_import(n: int = 10_000, seed: int = 7, home: Path | None = None) -> dict[str, Any]:
    from mnemonist.daemon import open_memory

    corpus = SyntheticCorpus(seed)
    items = []
    for i, m in enumerate(corpus.generate(n)):
        body = m.request_body()
        body["source_id"] = f"bench-source-{i // 50}"  # ordered sources, as chat exports are
        items.append(RememberRequest(**body))
    home = home or Path(tempfile.mkdtemp(prefix="mnemonist-import-"))
    with open_memory(home) as daemon:
        svc = daemon.service
        timings = {}
        embedding: dict[str, Any] = {}
        for label in ("first import", "re-run (idempotent)"):
            started = time.perf_counter()
            created = 0
            for start in range(0, n, CHUNK):
                out = svc.carry.import_memories(ImportRequest(items=items[start : start + CHUNK]))
                created += out["created"]
            elapsed = time.perf_counter() - started
            timings[label] = {"seconds": round(elapsed, 2), "per_s": round(n / elapsed, 1),
                              "created": created}
            if not embedding and svc.core.embedder is not None:
                embedding = _embedding_rate(svc, created, started)
    return {"n": n, "seed": seed, "chunk": CHUNK, "results": timings, "embedding": embedding,
            "cores": available_cores()}


def _embedding_rate(svc: Any, created: int, started: float) -> dict[str, Any]:
    """Background embedding: from the first chunk posted until every imported memory has its
    vector (the embedder starts while the import still runs, as in production)."""
    done = svc.flush(timeout=max(600.0, created / 20.0))
    elapsed = time.perf_counter() - started
    return {"memories": created, "seconds": round(elapsed, 2),
            "per_s": round(created / elapsed, 1), "complete": done,
            "threads": getattr(svc.core.embedder.provider, "_threads", None)}


def markdown(report: dict[str, Any]) -> str:
    lines = [f"import of {report['n']:,} synthetic memories in chunks of {report['chunk']}", "",
             "| run | seconds | memories/s | created |", "|---|---|---|---|"]
    for label, r in report["results"].items():
        lines.append(f"| {label} | {r['seconds']} | {r['per_s']:,} | {r['created']:,} |")
    emb = report.get("embedding") or {}
    if emb:
        lines += ["", f"background embedding: {emb['memories']:,} memories in {emb['seconds']} s"
                  f" from the first chunk = **{emb['per_s']:,} memories/s**"
                  f" ({emb['threads']} embedding threads, {report['cores']} cores"
                  f"{'' if emb['complete'] else ', NOT complete: timed out'})"]
    return "\n".join(lines)
