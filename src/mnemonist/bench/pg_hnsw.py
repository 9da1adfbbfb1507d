"""`mnemonist bench hnsw`: how close pgvector's HNSW comes to the exact scan, per `ef_search`.

The PostgreSQL vector leg answers from an HNSW index above `EXACT_BELOW` live vectors
(store/postgres/vectors.py). HNSW is approximate: `hnsw.ef_search` is the size of the
candidate list a search keeps, and recall@10 against the exact top 10 rises with it. This
measures that curve on generated vectors (quality, not time: the numbers do not depend on
the machine's load).

With `generated`, most vectors are made instead (see `_generated`): quick, and harder for
HNSW than real ones (the noise spreads them over every dimension).

The vectors: the default embedding model's (all-MiniLM-L6-v2, 384 dimensions) for `n`
memories of the scale benchmark's synthetic corpus, and for `queries` of its queries (half
words of a memory, half paraphrases), so that the clusters, near-duplicates and intrinsic
dimension are those of real sentence embeddings (uniform random vectors in 384 dimensions are
all nearly orthogonal: the hardest case, and not the one a memory store meets). They live in a
scratch table of the given database, with the production index's definition
(`vector_cosine_ops`, pgvector's default `m` 16 and `ef_construction` 64), dropped at the end.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

DIMENSIONS = 384
TABLE = "mnemonist_hnsw_probe"
EF_VALUES = (20, 40, 64, 100, 200, 400)
POOL = 2000  # real vectors behind the generated ones


def _literal(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


def _embed(texts: list[str], progress: bool) -> np.ndarray:
    from mnemonist.model.config import EmbeddingConfig
    from mnemonist.providers.embedding import create_embedding_provider

    provider = create_embedding_provider(EmbeddingConfig())
    assert provider is not None
    out = []
    for start in range(0, len(texts), 256):
        out.append(np.asarray(provider.embed(texts[start:start + 256]), dtype=np.float32))
        if progress and (start // 256) % 20 == 0:
            print(f"hnsw: embedded {start + 256}/{len(texts)}", file=sys.stderr, flush=True)
    v = np.concatenate(out)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _generated(corpus: Any, n: int, seed: int, progress: bool) -> np.ndarray:
    """`bench scale --generated-vectors`'s kind: a pool of real vectors, each other vector a
    pool vector plus Gaussian noise of relative norm 0.9 (cosine about 0.74 to it)."""
    rng = np.random.default_rng(seed)
    pool = _embed([corpus.memory(i).content for i in range(min(POOL, n))], progress)
    noise = rng.standard_normal((n, DIMENSIONS)).astype(np.float32)
    noise *= 0.9 / np.linalg.norm(noise, axis=1, keepdims=True)
    v = pool[np.arange(n) % len(pool)] + noise
    v[: len(pool)] = pool
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def run_hnsw(url: str, *, n: int = 50_000, queries: int = 200, k: int = 10, seed: int = 7,
             ef_values: tuple[int, ...] = EF_VALUES, progress: bool = True,
             generated: bool = False) -> dict[str, Any]:
    import psycopg

    from mnemonist.bench.synthetic import SyntheticCorpus

    corpus = SyntheticCorpus(seed)
    if generated:
        data = _generated(corpus, n, seed, progress)
    else:
        data = _embed([m.content for m in corpus.generate(n)], progress)
    qs = _embed([q.text for q in corpus.queries(queries, n)], False)
    # the exact top k, computed here (cosine = dot product of unit vectors)
    truth = [set(np.argsort(-(data @ q), kind="stable")[:k].tolist()) for q in qs]
    out: dict[str, Any] = {"n": n, "queries": queries, "k": k, "dimensions": DIMENSIONS,
                           "seed": seed, "vectors": "generated" if generated else "real",
                           "ef_search": {}}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        conn.execute(f"CREATE TABLE {TABLE} (id BIGINT PRIMARY KEY,"
                     f" embedding vector({DIMENSIONS}))")
        try:
            started = time.perf_counter()
            with conn.cursor().copy(f"COPY {TABLE} (id, embedding) FROM STDIN") as copy:
                for i, v in enumerate(data):
                    copy.write_row((i, _literal(v)))
            out["load_s"] = round(time.perf_counter() - started, 1)
            started = time.perf_counter()
            conn.execute("SET maintenance_work_mem = '1GB'")
            conn.execute(f"CREATE INDEX {TABLE}_hnsw ON {TABLE}"
                         " USING hnsw (embedding vector_cosine_ops)")
            out["build_s"] = round(time.perf_counter() - started, 1)
            version = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            out["pgvector"] = version[0] if version else None
            for ef in ef_values:
                hits = 0
                with conn.transaction():
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                    conn.execute("SET LOCAL enable_seqscan = off")
                    plan = "\n".join(r[0] for r in conn.execute(
                        f"EXPLAIN SELECT id FROM {TABLE} ORDER BY embedding <=> %s::vector"
                        " LIMIT %s", (_literal(qs[0]), k)))
                    for q, want in zip(qs, truth, strict=True):
                        got = {r[0] for r in conn.execute(
                            f"SELECT id FROM {TABLE} ORDER BY embedding <=> %s::vector"
                            " LIMIT %s", (_literal(q), k))}
                        hits += len(got & want)
                out["ef_search"][str(ef)] = {
                    "recall_at_k": round(hits / (k * queries), 4),
                    "index_used": f"{TABLE}_hnsw" in plan}
        finally:
            conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = [f"HNSW vs exact: {report['n']} {report['vectors']} vectors of"
             f" {report['dimensions']} dimensions,"
             f" {report['queries']} queries, recall@{report['k']} against the exact scan"
             f" (pgvector {report.get('pgvector')}, build {report.get('build_s')} s)", "",
             "| ef_search | recall@k |", "|---|---|"]
    for ef, row in report["ef_search"].items():
        lines.append(f"| {ef} | {row['recall_at_k']:.4f} |")
    return "\n".join(lines)
