"""The local model's optimised graph: saved on the first load, read as is on the next."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnemonist.model.config import EmbeddingConfig
from mnemonist.providers.embedding import LocalOnnxEmbedding, graph_cache

TEXTS = ["The cat sits on the mat", "Caroline went to the support group on 7 May 2023"]


def _embed(products: str = "int8") -> np.ndarray:
    provider = LocalOnnxEmbedding(EmbeddingConfig(products=products))
    try:
        return provider.embed(TEXTS)
    finally:
        provider.close()


def _saved(folder: Path) -> list[Path]:
    return sorted((folder / "onnx").glob("minilm-*.onnx"))


def test_first_load_saves_the_graph_and_the_next_reads_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(graph_cache.CACHE_ENV, str(tmp_path))
    first = _embed()
    saved = _saved(tmp_path)
    assert len(saved) == 1 and saved[0].with_suffix(".sha256").is_file()
    assert not list((tmp_path / "onnx").glob("*.partial"))
    inode = saved[0].stat().st_ino
    second = _embed()
    assert saved[0].stat().st_ino == inode  # read, not saved again (a save replaces the file)
    np.testing.assert_array_equal(first, second)


def test_each_variant_has_its_own_graph(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(graph_cache.CACHE_ENV, str(tmp_path))
    _embed("int8")
    _embed("float")
    assert len(_saved(tmp_path)) == 2


def test_a_damaged_graph_is_rebuilt(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(graph_cache.CACHE_ENV, str(tmp_path))
    good = _embed()
    (saved,) = _saved(tmp_path)
    saved.write_bytes(b"not a model")
    np.testing.assert_array_equal(_embed(), good)
    assert saved.stat().st_size > 1_000_000  # written again, and its checksum with it
    assert graph_cache._sha256_file(saved) == saved.with_suffix(".sha256").read_text().strip()


def test_an_unwritable_cache_is_no_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv(graph_cache.CACHE_ENV, str(blocker))
    vectors = _embed()
    assert vectors.shape == (2, 384)
    assert blocker.read_text().startswith("a file")


def test_the_key_covers_what_the_graph_depends_on() -> None:
    import onnxruntime as ort

    base = graph_cache.graph_key(ort, "sha", "int8", "code")
    assert base == graph_cache.graph_key(ort, "sha", "int8", "code")
    others = {graph_cache.graph_key(ort, "sha2", "int8", "code"),
              graph_cache.graph_key(ort, "sha", "float", "code"),
              graph_cache.graph_key(ort, "sha", "int8", "code2")}
    assert base not in others and len(others) == 3
    assert len(graph_cache.rewrite_source()) == 64


def test_graphs_unused_for_a_month_go_when_one_is_saved(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import os
    import time

    monkeypatch.setenv(graph_cache.CACHE_ENV, str(tmp_path))
    folder = tmp_path / "onnx"
    folder.mkdir()
    stale, recent = folder / "minilm-stale.onnx", folder / "minilm-recent.onnx"
    for path in (stale, recent):
        path.write_bytes(b"an old graph")
        path.with_suffix(".sha256").write_text("0" * 64)
    month = time.time() - (graph_cache.STALE_DAYS + 1) * 86400
    os.utime(stale, (month, month))
    _embed()
    assert not stale.exists() and not stale.with_suffix(".sha256").exists()
    assert recent.exists()
    assert len(_saved(tmp_path)) == 2  # the recent one and the graph just saved
