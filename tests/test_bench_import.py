"""`mnemonist bench import`: the synchronous import, its idempotent re-run, and the background
embedding rate, on a small real run (times are reported, never asserted)."""

from __future__ import annotations

from mnemonist.bench.importing import markdown, run_import
from mnemonist.providers.embedding.local_onnx import available_cores


def test_import_report_carries_the_embedding_rate(tmp_path) -> None:
    report = run_import(n=120, home=tmp_path)
    first, again = report["results"]["first import"], report["results"]["re-run (idempotent)"]
    assert first["created"] == 120 and again["created"] == 0
    emb = report["embedding"]
    assert emb["memories"] == 120 and emb["complete"] is True
    assert emb["per_s"] > 0 and emb["seconds"] > 0
    # default: every core (the helpers only while no request is in flight)
    assert emb["threads"] == report["cores"] == available_cores()
    assert "memories/s" in markdown(report) and "background embedding" in markdown(report)
