"""Optional reranking of the head of the result list, bounded by a timeout.

A reranker reorders the top `topN` hits; the tail is appended untouched. If it is slower than
`timeoutMs` or fails, the original order stands (no second attempt) and the outcome says so.
Two rerankers ship:
- `EmbeddingReranker` (no network): 0.7 × the fused score + 0.3 × the cosine of the memory's
  own vector with the query — the documents' embedding re-ranker;
- `HttpReranker`: any server with a Cohere/Jina-style `POST {base}/rerank` (llama.cpp's server,
  TEI, vLLM, Jina, Cohere): `{"model", "query", "documents", "top_n"}` →
  `{"results": [{"index", "relevance_score"}]}` — the way to use a stronger cross-encoder.
"""

from __future__ import annotations

import copy
import logging
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Protocol

import httpx

from mnemonist.guards.write_tx import assert_not_in_write_tx
from mnemonist.model.config import RerankerConfig

log = logging.getLogger(__name__)

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mnemonist-rerank")


class Reranker(Protocol):
    name: str

    def rerank(self, query: str, hits: list[Any]) -> list[Any]:
        """The same hits, reordered (scores may be replaced)."""
        ...


class EmbeddingReranker:
    name = "embedding"

    def __init__(self, weight: float = 0.3) -> None:
        self.weight = weight

    def rerank(self, query: str, hits: list[Any]) -> list[Any]:
        for h in hits:
            if h.vector_score is not None:
                h.score = (1 - self.weight) * h.score + self.weight * max(h.vector_score, 0.0)
        return sorted(hits, key=lambda h: -h.score)


class HttpReranker:
    def __init__(self, base_url: str, model: str = "", api_key: str = "") -> None:
        self.name = f"http:{model or 'default'}"
        base = base_url.rstrip("/")
        self.url = base + ("/rerank" if base.endswith("/v1") else "/v1/rerank")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(headers=headers)

    def rerank(self, query: str, hits: list[Any]) -> list[Any]:
        assert_not_in_write_tx("reranker")
        body: dict[str, Any] = {"query": query, "documents": [h.memory.content for h in hits],
                                "top_n": len(hits)}
        if self.model:
            body["model"] = self.model
        resp = self._http.post(self.url, json=body, timeout=30.0)
        resp.raise_for_status()
        results = resp.json()["results"]
        scored = {int(r["index"]): float(r["relevance_score"]) for r in results}
        order = sorted(range(len(hits)), key=lambda i: -scored.get(i, float("-inf")))
        return [hits[i] for i in order]


def rerank_head(
    reranker: Reranker, query: str, hits: list[Any], top_n: int, timeout_s: float
) -> tuple[list[Any], str]:
    """(hits, outcome): outcome is "reranked", "timeout" or "error"."""
    if len(hits) < 2:
        return hits, "reranked"
    head, tail = hits[:top_n], hits[top_n:]
    copies = [copy.copy(h) for h in head]  # a late reranker must not touch what we return
    future = _POOL.submit(reranker.rerank, query, list(copies))
    try:
        ranked = future.result(timeout=timeout_s)
    except FutureTimeout:
        return hits, "timeout"
    except Exception as exc:
        log.warning("reranker %s failed, keeping the original order: %s", reranker.name, exc)
        return hits, "error"
    if sorted(map(id, ranked)) != sorted(map(id, copies)):
        return hits, "error"
    return [*ranked, *tail], "reranked"


def make_reranker(cfg: RerankerConfig) -> Reranker:
    """An HTTP reranker when a server is configured, else the embedding reranker."""
    if cfg.base_url:
        return HttpReranker(cfg.base_url, cfg.model, cfg.api_key)
    return EmbeddingReranker()
