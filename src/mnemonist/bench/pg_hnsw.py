"""`mnemonist bench hnsw`: how close pgvector's HNSW comes to the exact scan, per `ef_search`.

The PostgreSQL vector leg answers from an HNSW index above `EXACT_BELOW` live vectors
(store/postgres/vectors.py). HNSW is approximate: `hnsw.ef_search` is the size of the
candidate list a search keeps, and recall@10 against the exact top 10 rises with it. This
measures that curve on generated vectors (quality, not time: the numbers do not depend on
the machine's load).

The vectors: `n` unit vectors of 384 dimensions (the default model's) drawn around
`n / 100` random centres (embeddings of real texts are clustered, and uniform random vectors
in 384 dimensions would all be nearly orthogonal, the hardest and least realistic case);
each query is a stored vector moved by noise of the same size (a paraphrase of a memory).
They live in a scratch table of the given database, with the production index's definition
(`vector_cosine_ops`, pgvector's default `m` and `ef_construction`), dropped at the end.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

DIMENSIONS = 384
TABLE = "mnemonist_hnsw_probe"
EF_VALUES = (20, 40, 64, 100, 200, 400)


def _literal(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


def _vectors(n: int, rng: np.random.Generator) -> np.ndarray:
    centres = rng.standard_normal((max(1, n // 100), DIMENSIONS)).astype(np.float32)
    which = rng.integers(0, len(centres), n)
    v = centres[which] + 0.9 * rng.standard_normal((n, DIMENSIONS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def run_hnsw(url: str, *, n: int = 50_000, queries: int = 200, k: int = 10, seed: int = 7,
             ef_values: tuple[int, ...] = EF_VALUES) -> dict[str, Any]:
    import psycopg

    rng = np.random.default_rng(seed)
    data = _vectors(n, rng)
    picks = rng.integers(0, n, queries)
    noise = 0.9 * rng.standard_normal((queries, DIMENSIONS)).astype(np.float32)
    qs = data[picks] + noise / np.sqrt(DIMENSIONS) * 8
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    # the exact top k, computed here (cosine = dot product of unit vectors)
    truth = [set(np.argsort(-(data @ q), kind="stable")[:k].tolist()) for q in qs]
    out: dict[str, Any] = {"n": n, "queries": queries, "k": k, "dimensions": DIMENSIONS,
                           "seed": seed, "ef_search": {}}
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
            out["pgvector"] = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
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
    lines = [f"HNSW vs exact: {report['n']} vectors of {report['dimensions']} dimensions,"
             f" {report['queries']} queries, recall@{report['k']} against the exact scan"
             f" (pgvector {report.get('pgvector')}, build {report.get('build_s')} s)", "",
             "| ef_search | recall@k |", "|---|---|"]
    for ef, row in report["ef_search"].items():
        lines.append(f"| {ef} | {row['recall_at_k']:.4f} |")
    return "\n".join(lines)
