"""`bench scale --storage` and `bench hnsw` on the throwaway PostgreSQL, at small sizes: the
plumbing end to end (what the numbers are is the benchmarks' business, never asserted)."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner

from conftest import run_daemon
from mnemonist.bench.pg_hnsw import TABLE, run_hnsw
from mnemonist.bench.scale import run_scale
from mnemonist.cli.main import cli


def test_bench_scale_runs_on_postgresql(postgres_url: str) -> None:
    report = run_scale([60], queries=5, warmup=2, progress=False, out_dir=None,
                       storage=postgres_url)
    assert report["params"]["storage"].startswith("postgresql://")
    run = report["runs"][0]
    assert run["config"]["storage"] == "postgresql"
    assert run["remember"]["created"] + run["remember"]["deduplicated"] == 60
    assert run["recall"]["indexed_vectors"] == 60
    assert run["recall"]["latency_ms"]["count"] == 5
    # the daemon's in-memory copy of the vectors answered (float32 at this size), not pgvector
    assert run["memory"]["vector_index_precision"] == "float32"
    assert run["database"]["while_open"]["db_mib"] > 0
    # the consolidation phase remembers new memories beside its pass
    during = run["consolidation"]["remember"]["created"]
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 60 + during


def test_bench_scale_storage_refuses_several_sizes_and_a_database_in_use(
    postgres_url: str, tmp_path,
) -> None:
    out = CliRunner().invoke(cli, ["bench", "scale", "--n", "10,20", "--storage", postgres_url])
    assert out.exit_code == 2 and "one size" in out.output
    with run_daemon(tmp_path / "a", {"storage": {"url": postgres_url}}) as a:
        a.remember("A memory the benchmark must not touch")
    out = CliRunner().invoke(cli, ["bench", "scale", "--n", "10", "--storage", postgres_url])
    assert out.exit_code == 2 and "already holds memories" in out.output
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1


def test_bench_hnsw_compares_the_index_with_the_exact_scan(postgres_url: str) -> None:
    report = run_hnsw(postgres_url, n=400, queries=20, ef_values=(10, 400), progress=False)
    low, high = report["ef_search"]["10"], report["ef_search"]["400"]
    assert low["index_used"] and high["index_used"]
    assert 0 < low["recall_at_k"] <= high["recall_at_k"] <= 1
    with psycopg.connect(postgres_url) as conn:  # the scratch table is gone
        assert conn.execute("SELECT to_regclass(%s)", (TABLE,)).fetchone()[0] is None


@pytest.mark.parametrize("url", ["sqlite:///x.db", "mysql://db/x"])
def test_bench_hnsw_wants_a_postgresql_url(url: str) -> None:
    out = CliRunner().invoke(cli, ["bench", "hnsw", "--storage", url])
    assert out.exit_code == 2 and "postgresql://" in out.output
