"""Embeddings from the OpenAI API or any server that speaks its `/embeddings` protocol.

Base URL rule: a `base_url` with no path ("http://host:port") gets "/v1" appended; one with a
path ("http://host:port/v1", "https://openrouter.ai/api/v1", "https://host/openai") is used as
given. Requests go to "{base}/embeddings" and the health check to "{base}/models".
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import numpy as np

from mnemonist.model.config import EmbeddingConfig
from mnemonist.providers.embedding.base import (
    HEALTH_TIMEOUT_S,
    EmbeddingError,
    HttpEmbeddingProvider,
    to_matrix,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"


def resolve_base_url(base_url: str) -> str:
    """Apply the base URL rule of the module docstring."""
    url = (base_url or DEFAULT_BASE_URL).strip().rstrip("/")
    return url if urlsplit(url).path else url + "/v1"


def resolve_api_key(cfg: EmbeddingConfig) -> str:
    """cfg.api_key, else the environment variable named by cfg.api_key_env, else ""."""
    if cfg.api_key:
        return cfg.api_key
    return os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""


class OpenAICompatEmbedding(HttpEmbeddingProvider):
    name = "openai"

    def __init__(self, cfg: EmbeddingConfig) -> None:
        self.model = cfg.model or DEFAULT_MODEL
        self._request_dimensions = cfg.dimensions
        key = resolve_api_key(cfg)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        super().__init__(
            cfg,
            base_url=resolve_base_url(cfg.base_url),
            model_id=f"openai/{self.model}",
            headers=headers,
        )

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        body: dict[str, object] = {"model": self.model, "input": texts}
        if self._request_dimensions is not None:
            body["dimensions"] = self._request_dimensions
        payload = self._request("POST", "/embeddings", body)
        source = f"openai {self.model}"
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
            raise EmbeddingError(f"{source}: response has no 'data' list")
        try:
            ordered = sorted(data, key=lambda d: d["index"])
            indices = [d["index"] for d in ordered]
            rows = [d["embedding"] for d in ordered]
        except (KeyError, TypeError) as exc:
            raise EmbeddingError(f"{source}: malformed 'data' entry: {exc!r}") from exc
        if indices != list(range(len(texts))):
            raise EmbeddingError(
                f"{source}: expected indices 0..{len(texts) - 1}, got {indices[:10]}"
            )
        return to_matrix(rows, len(texts), source)

    def _probe(self) -> bool:
        self._request("GET", "/models", timeout_s=HEALTH_TIMEOUT_S)
        return True
