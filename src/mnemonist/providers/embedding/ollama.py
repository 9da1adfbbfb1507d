"""Embeddings from an Ollama server (`POST /api/embed`)."""

from __future__ import annotations

import numpy as np

from mnemonist.model.config import EmbeddingConfig
from mnemonist.providers.embedding.base import (
    HEALTH_TIMEOUT_S,
    EmbeddingError,
    HttpEmbeddingProvider,
    to_matrix,
)

DEFAULT_BASE_URL = "http://localhost:11434"
DEFAULT_MODEL = "nomic-embed-text"


def _with_tag(name: str) -> str:
    """`name` with Ollama's implicit ":latest" tag made explicit.

    Only the last path segment can carry a tag: "host:5000/ns/model" has no tag.
    """
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class OllamaEmbedding(HttpEmbeddingProvider):
    """`model_id` is "ollama/<model>" with a ":latest" tag dropped, so that "nomic-embed-text"
    and "nomic-embed-text:latest" (the same model) store the same id."""

    name = "ollama"

    def __init__(self, cfg: EmbeddingConfig) -> None:
        self.model = cfg.model or DEFAULT_MODEL
        model_id = "ollama/" + self.model.removesuffix(":latest")
        super().__init__(
            cfg, base_url=cfg.base_url or DEFAULT_BASE_URL, model_id=model_id, headers={}
        )

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        payload = self._request("POST", "/api/embed", {"model": self.model, "input": texts})
        if not isinstance(payload, dict) or "embeddings" not in payload:
            raise EmbeddingError(f"ollama {self.model}: response has no 'embeddings' field")
        return to_matrix(payload["embeddings"], len(texts), f"ollama {self.model}")

    def _probe(self) -> bool:
        """True when the server answers and lists the model (":latest" may be left out)."""
        payload = self._request("GET", "/api/tags", timeout_s=HEALTH_TIMEOUT_S)
        if not isinstance(payload, dict) or not isinstance(payload.get("models"), list):
            return False
        wanted = _with_tag(self.model)
        for entry in payload["models"]:
            if not isinstance(entry, dict):
                continue
            names = (entry.get("name"), entry.get("model"))
            if any(isinstance(n, str) and _with_tag(n) == wanted for n in names):
                return True
        return False
