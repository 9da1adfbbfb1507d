"""The Ollama and OpenAI-compatible providers against a real local HTTP server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from embedding_servers import ZERO_TEXT, FakeEmbeddingServer, raw_vector
from mnemonist.guards import write_tx as txguard
from mnemonist.model.config import EmbeddingConfig
from mnemonist.providers.embedding import (
    EmbeddingError,
    EmbeddingProvider,
    LocalOnnxEmbedding,
    OllamaEmbedding,
    OpenAICompatEmbedding,
    create_embedding_provider,
)
from mnemonist.providers.embedding.base import l2_normalize
from mnemonist.providers.embedding.openai_compat import resolve_base_url

Factory = Callable[..., OllamaEmbedding | OpenAICompatEmbedding]


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as srv:
        yield srv


@pytest.fixture(params=["ollama", "openai"])
def make(request: pytest.FixtureRequest, server: FakeEmbeddingServer) -> Iterator[Factory]:
    """Builds a provider of the parametrised kind pointed at `server`; closes them after."""
    made: list[OllamaEmbedding | OpenAICompatEmbedding] = []

    def factory(**kw: object) -> OllamaEmbedding | OpenAICompatEmbedding:
        kw.setdefault("base_url", server.url)
        cfg = EmbeddingConfig(provider=request.param, **kw)
        provider = create_embedding_provider(cfg)
        assert isinstance(provider, OllamaEmbedding | OpenAICompatEmbedding)
        made.append(provider)
        return provider

    yield factory
    for p in made:
        p.close()


def expected(texts: list[str], dim: int = 8) -> np.ndarray:
    return l2_normalize(np.stack([raw_vector(t, dim) for t in texts]))


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# --- both providers ---------------------------------------------------------------------------


def test_vectors_normalised_in_order(make: Factory, server: FakeEmbeddingServer) -> None:
    p = make()
    assert p.dimensions is None
    texts = ["alpha", "beta", "gamma"]
    out = p.embed(texts)
    assert out.dtype == np.float32 and out.shape == (3, 8)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(out, expected(texts), atol=1e-6)
    assert p.dimensions == 8


def test_batching(make: Factory, server: FakeEmbeddingServer) -> None:
    texts = ["t1", "t2", "t3", "t4", "t5"]
    out = make(batch_size=2).embed(texts)
    assert [r.body["input"] for r in server.posts()] == [["t1", "t2"], ["t3", "t4"], ["t5"]]
    np.testing.assert_allclose(out, expected(texts), atol=1e-6)


def test_zero_vector_stays_zero(make: Factory) -> None:
    out = make().embed(["x", ZERO_TEXT])
    assert not np.isnan(out).any()
    assert np.all(out[1] == 0.0)
    assert np.linalg.norm(out[0]) == pytest.approx(1.0, rel=1e-6)


def test_empty_input(make: Factory, server: FakeEmbeddingServer) -> None:
    p = make()
    assert p.embed([]).shape == (0, 0)
    assert server.requests == []
    p.embed(["a"])
    assert p.embed([]).shape == (0, 8)


def test_http_500(make: Factory, server: FakeEmbeddingServer) -> None:
    server.fail_status, server.fail_body = 500, "model exploded: " + "y" * 300 + "TAIL"
    with pytest.raises(EmbeddingError) as err:
        make().embed(["a"])
    assert "500" in str(err.value) and "model exploded: yyy" in str(err.value)
    assert "TAIL" not in str(err.value)


def test_timeout(make: Factory, server: FakeEmbeddingServer) -> None:
    server.delay_s = 30.0
    start = time.monotonic()
    with pytest.raises(EmbeddingError, match="timed out after 1000 ms"):
        make(timeout_ms=1000).embed(["a"])
    assert time.monotonic() - start < 15  # cut off, not waited out (the server takes 30 s)


def test_malformed_json(make: Factory, server: FakeEmbeddingServer) -> None:
    server.malformed = True
    with pytest.raises(EmbeddingError, match="malformed JSON"):
        make().embed(["a"])


def test_configured_dimension_mismatch(make: Factory, server: FakeEmbeddingServer) -> None:
    server.wrong_dim = 16
    p = make(dimensions=8)
    assert p.dimensions == 8
    with pytest.raises(EmbeddingError, match=r"configured dimensions 8, but the vectors have 16"):
        p.embed(["a"])


def test_learned_dimension_change(make: Factory, server: FakeEmbeddingServer) -> None:
    p = make()
    p.embed(["a"])
    server.wrong_dim = 12
    with pytest.raises(EmbeddingError, match=r"expected 8 dimensions .* have 12"):
        p.embed(["b"])


def test_server_down(make: Factory) -> None:
    p = make(base_url=dead_url())
    with pytest.raises(EmbeddingError, match="failed"):
        p.embed(["a"])
    assert p.available() is False


def test_txguard(make: Factory, server: FakeEmbeddingServer) -> None:
    p = make()
    txguard.enter()
    try:
        with pytest.raises(txguard.WriteLockViolation):
            p.embed(["a"])
        with pytest.raises(txguard.WriteLockViolation):
            p.available()
    finally:
        txguard.leave()
    assert server.requests == []


def test_concurrent_embeds(make: Factory) -> None:
    p = make(batch_size=3)
    texts = [f"text {i}" for i in range(10)]
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(p.embed(texts))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    for r in results:
        np.testing.assert_array_equal(r, results[0])
    np.testing.assert_allclose(results[0], expected(texts), atol=1e-6)


def test_available_cached(make: Factory, server: FakeEmbeddingServer) -> None:
    p = make()
    assert p.available() is True
    server.fail_status = 503
    assert p.available() is True  # cached for 30 s
    assert len(server.requests) == 1


# --- Ollama -----------------------------------------------------------------------------------


def ollama(server: FakeEmbeddingServer, **kw: object) -> OllamaEmbedding:
    return OllamaEmbedding(EmbeddingConfig(provider="ollama", base_url=server.url, **kw))


def test_ollama_request(server: FakeEmbeddingServer) -> None:
    p = ollama(server)
    p.embed(["hello", "world"])
    (req,) = server.posts()
    assert req.path == "/api/embed"
    assert req.body == {"model": "nomic-embed-text", "input": ["hello", "world"]}
    assert p.model_id == "ollama/nomic-embed-text"
    assert "authorization" not in req.headers


def test_ollama_model_id_drops_latest(server: FakeEmbeddingServer) -> None:
    p = ollama(server, model="mxbai-embed-large:latest")
    p.embed(["a"])
    assert server.posts()[0].body["model"] == "mxbai-embed-large:latest"
    assert p.model_id == "ollama/mxbai-embed-large"


@pytest.mark.parametrize(
    ("listed", "model", "ok"),
    [
        (["nomic-embed-text:latest"], "", True),
        (["nomic-embed-text:latest"], "nomic-embed-text:latest", True),
        (["nomic-embed-text"], "nomic-embed-text:latest", True),
        (["nomic-embed-text:v1.5"], "nomic-embed-text", False),
        (["llama3:8b", "all-minilm:latest"], "nomic-embed-text", False),
        ([], "", False),
    ],
)
def test_ollama_available(
    server: FakeEmbeddingServer, listed: list[str], model: str, ok: bool
) -> None:
    server.ollama_models = listed
    assert ollama(server, model=model).available() is ok
    assert [r.path for r in server.requests] == ["/api/tags"]


def test_ollama_default_base_url() -> None:
    assert OllamaEmbedding(EmbeddingConfig(provider="ollama")).base_url == "http://localhost:11434"


# --- OpenAI-compatible ------------------------------------------------------------------------


def openai(server: FakeEmbeddingServer, **kw: object) -> OpenAICompatEmbedding:
    kw.setdefault("base_url", server.url)
    return OpenAICompatEmbedding(EmbeddingConfig(provider="openai", **kw))


def test_openai_request_body(server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    p = openai(server)
    p.embed(["a", "b"])
    openai(server, model="custom-embed", dimensions=8).embed(["c"])
    first, second = server.posts()
    assert first.path == "/v1/embeddings"
    assert first.body == {"model": "text-embedding-3-small", "input": ["a", "b"]}
    assert second.body == {"model": "custom-embed", "input": ["c"], "dimensions": 8}
    assert "authorization" not in first.headers
    assert p.model_id == "openai/text-embedding-3-small"


def test_openai_reorders_by_index(server: FakeEmbeddingServer) -> None:
    texts = ["first", "second", "third", "fourth"]
    assert server.reverse_openai_order
    np.testing.assert_allclose(openai(server).embed(texts), expected(texts), atol=1e-6)


def test_bearer_from_api_key(server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    server.required_key = "sk-config"
    openai(server, api_key="sk-config").embed(["a"])
    assert server.posts()[0].headers["authorization"] == "Bearer sk-config"


def test_bearer_from_env(server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMONIST_TEST_KEY", "sk-from-env")
    server.required_key = "sk-from-env"
    p = openai(server, api_key_env="MNEMONIST_TEST_KEY")
    assert p.embed(["a"]).shape == (1, 8)
    assert p.available() is True
    assert {r.headers["authorization"] for r in server.requests} == {"Bearer sk-from-env"}


def test_missing_key_is_http_error(
    server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.required_key = "sk-x"
    p = openai(server)
    with pytest.raises(EmbeddingError, match=r"HTTP 401.*invalid api key"):
        p.embed(["a"])
    assert p.available() is False


@pytest.mark.parametrize(
    ("suffix", "path"),
    [("", "/v1/embeddings"), ("/", "/v1/embeddings"), ("/v1", "/v1/embeddings"),
     ("/v1/", "/v1/embeddings"), ("/proxy/openai", "/proxy/openai/embeddings")],
)
def test_openai_base_url(server: FakeEmbeddingServer, suffix: str, path: str) -> None:
    p = openai(server, base_url=server.url + suffix)
    assert p.embed(["a"]).shape == (1, 8)
    assert p.available() is True
    assert [r.path for r in server.requests] == [path, path.replace("embeddings", "models")]


def test_resolve_base_url_default() -> None:
    assert resolve_base_url("") == "https://api.openai.com/v1"
    assert resolve_base_url("https://openrouter.ai/api/v1/") == "https://openrouter.ai/api/v1"


# --- factory and helpers ----------------------------------------------------------------------


def test_factory() -> None:
    assert create_embedding_provider(EmbeddingConfig(provider="none")) is None
    kinds = [("local", LocalOnnxEmbedding), ("ollama", OllamaEmbedding)]
    for name, cls in [*kinds, ("openai", OpenAICompatEmbedding)]:
        provider = create_embedding_provider(EmbeddingConfig(provider=name))
        assert type(provider) is cls
        assert isinstance(provider, EmbeddingProvider)
        provider.close()


@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(1, 6)),
        elements=st.one_of(st.just(0.0), st.floats(-1e6, 1e6).filter(lambda x: abs(x) > 1e-3)),
    )
)
def test_l2_normalize(matrix: np.ndarray) -> None:
    out = l2_normalize(matrix)
    assert out.dtype == np.float32 and not np.isnan(out).any()
    norms = np.linalg.norm(out, axis=1)
    zero_rows = ~matrix.any(axis=1)
    assert np.all(norms[zero_rows] == 0.0)
    np.testing.assert_allclose(norms[~zero_rows], 1.0, rtol=1e-5)
