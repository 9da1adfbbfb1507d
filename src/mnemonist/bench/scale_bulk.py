"""`bench scale --generated-vectors`: a million memories without hours of embedding.

The memories are written through bulk import (`service.carry.import_memories`, chunks of
1,000, as `mnemonist import` posts them), timed per block. Embedding a million texts on a laptop
takes hours, so most vectors are GENERATED, not embedded:

- every memory a measured query was made from, and a pool of others, are embedded for real
  by the configured provider;
- every other memory gets a generated vector: a pool vector (chosen by its index) plus
  Gaussian noise, normalised (cosine about 0.75 to its pool vector), so the scores a query
  sees spread like real ones rather than being near zero.

Queries are embedded for real, so the recall timings and the targets-in-top-10 check are real
searches over a store of the given size in which only the distractors' vectors are made up.
The report says how many vectors were generated. Nothing here runs in production code.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mnemonist.bench.stats import Progress, rss_mib
from mnemonist.bench.synthetic import SyntheticCorpus
from mnemonist.model.requests import ImportRequest, RememberRequest
from mnemonist.store import embeddings

CHUNK = 1000
BLOCK = 100_000
POOL = 2000
NOISE = 0.9  # noise norm relative to the pool vector's: cosine ≈ 1 / sqrt(1 + 0.81) ≈ 0.74
WRITE_BATCH = 5000


def bulk_phase(service: Any, corpus: SyntheticCorpus, n: int, targets: set[int], seed: int,
               run: dict[str, Any], progress: bool) -> int:
    """Import n memories, give each a vector (real for `targets` and the pool, generated for
    the rest) and index them; the embedder is stopped meanwhile and started again after.
    Returns how many memories are indexed."""
    embedder = service.core.embedder
    if embedder is not None:
        embedder.stop()
    run["import"] = _import(service, corpus, n, progress)
    run["rss_after_import_mib"] = round(rss_mib(), 1)
    run["vectors"] = _vectors(service, corpus, n, targets, seed, progress)
    if embedder is not None:
        # each imported memory was queued for embedding on commit; its vector is written now
        run["vectors"]["queued_notifications_dropped"] = embedder.discard_queued()
        embedder.start()
    return run["vectors"]["indexed"]


def _import(service: Any, corpus: SyntheticCorpus, n: int, progress: bool) -> dict[str, Any]:
    """Import n memories in chunks of `CHUNK`, timed per block of `BLOCK`. The import rate
    counts what the route does (request validation and `import_memories`); making up the
    synthetic texts is timed apart (`generation_s`) and only the wall rate includes it."""
    bar = Progress(f"import {n:,}", n, enabled=progress)
    blocks: list[dict[str, Any]] = []
    generated = corpus.generate(n)
    created = done = 0
    started = time.perf_counter()
    busy = generation = 0.0
    block_busy = block_wall = 0.0
    block_done = 0
    while done < n:
        t0 = time.perf_counter()
        bodies = [next(generated).request_body() for _ in range(min(CHUNK, n - done))]
        t1 = time.perf_counter()
        items = [RememberRequest.model_validate(body) for body in bodies]
        created += service.carry.import_memories(ImportRequest(items=items))["created"]
        t2 = time.perf_counter()
        done += len(items)
        generation += t1 - t0
        busy += t2 - t1
        block_busy += t2 - t1
        block_wall += t2 - t0
        bar.update(done)
        if done - block_done >= BLOCK or done == n:
            count = done - block_done
            blocks.append({"up_to": done, "memories": count, "seconds": round(block_busy, 2),
                           "per_s": round(count / block_busy, 1) if block_busy else None,
                           "wall_per_s": round(count / block_wall, 1) if block_wall else None})
            block_done, block_busy, block_wall = done, 0.0, 0.0
    bar.finish()
    total = time.perf_counter() - started
    return {"created": created, "chunk": CHUNK, "seconds": round(busy, 2),
            "per_s": round(n / busy, 1) if busy else None,
            "wall_s": round(total, 2), "wall_per_s": round(n / total, 1) if total else None,
            "generation_s": round(generation, 2),
            "sources": "none (as `bench scale` remembers them)", "blocks": blocks,
            "note": "per_s: request validation + import_memories (what the HTTP route does);"
                    " wall_per_s also counts generating the synthetic texts"}


def _vectors(service: Any, corpus: SyntheticCorpus, n: int, targets: set[int], seed: int,
             progress: bool) -> dict[str, Any]:
    provider = service.core.provider
    if provider is None:
        return {"indexed": 0, "embedded": 0, "generated": 0}
    rng = np.random.default_rng(seed)
    pool_ids = sorted(set(rng.choice(n, size=min(POOL, n), replace=False).tolist()) | targets)
    t = time.perf_counter()
    real = {i: v for i, v in zip(
        pool_ids, provider.embed([corpus.memory(i).content for i in pool_ids]), strict=True)}
    embed_s = time.perf_counter() - t
    pool = np.stack([real[i] for i in pool_ids])
    model = provider.model_id
    conn = service.core.db.reader()
    bar = Progress("vectors", n, enabled=progress)
    t = time.perf_counter()
    indexed = generated = 0
    last = 0
    while True:
        rows = conn.execute(
            "SELECT seq, content_hash, project FROM memories WHERE seq > ? AND is_deleted = 0"
            " AND superseded_at IS NULL ORDER BY seq LIMIT ?", (last, WRITE_BATCH)).fetchall()
        if not rows:
            break
        last = rows[-1][0]
        vectors = np.empty((len(rows), pool.shape[1]), dtype=np.float32)
        for k, row in enumerate(rows):
            index = row[0] - 1  # seq of the i-th imported memory is i + 1
            if index in real:
                vectors[k] = real[index]
            else:
                base = pool[index % len(pool)]
                noise = rng.standard_normal(int(pool.shape[1])).astype(np.float32)
                vectors[k] = base + NOISE * noise / np.linalg.norm(noise)
                generated += 1
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with service.core.db.write_tx() as wconn:
            for row, vec in zip(rows, vectors, strict=True):
                embeddings.upsert(wconn, row[1], model, vec)
            wconn.executemany("UPDATE memories SET embedding_model = ? WHERE seq = ?",
                              [(model, row[0]) for row in rows])
        service.core.get_index(pool.shape[1]).add_many(
            [(row[0], row[2], vec) for row, vec in zip(rows, vectors, strict=True)])
        indexed += len(rows)
        bar.update(indexed)
    bar.finish()
    return {"indexed": indexed, "embedded": len(real), "generated": generated,
            "embed_s": round(embed_s, 2), "write_and_index_s": round(time.perf_counter() - t, 2),
            "generated_how": f"pool of {len(pool_ids):,} real vectors (query targets included)"
                             f" + Gaussian noise of relative norm {NOISE}, normalised"}
