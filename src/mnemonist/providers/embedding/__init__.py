"""Embedding providers: the local ONNX model (default, offline), Ollama and OpenAI-compatible
HTTP servers. `create_embedding_provider(cfg)` picks one from the `embedding:` config section.
"""

from __future__ import annotations

import os

from mnemonist.model.config import EmbeddingConfig
from mnemonist.providers.embedding.base import EmbeddingError, EmbeddingProvider
from mnemonist.providers.embedding.local_onnx import LocalOnnxEmbedding
from mnemonist.providers.embedding.ollama import OllamaEmbedding
from mnemonist.providers.embedding.openai_compat import OpenAICompatEmbedding

__all__ = [
    "EmbeddingError",
    "EmbeddingProvider",
    "LocalOnnxEmbedding",
    "OllamaEmbedding",
    "OpenAICompatEmbedding",
    "create_embedding_provider",
]


def create_embedding_provider(cfg: EmbeddingConfig, *, home: str | os.PathLike[str] | None = None,
                              ) -> EmbeddingProvider | None:
    """The provider named by cfg.provider, or None for "none". Nothing is loaded or contacted
    here: the local model loads on first use (or `warm()`), HTTP servers on the first call.
    `home`: the mnemonist home, whose `cache/` keeps what the local model saves."""
    if cfg.provider == "local":
        return LocalOnnxEmbedding(cfg, home=home)
    if cfg.provider == "ollama":
        return OllamaEmbedding(cfg)
    if cfg.provider == "openai":
        return OpenAICompatEmbedding(cfg)
    if cfg.provider == "none":
        return None
    raise ValueError(f"unknown embedding provider {cfg.provider!r}")
