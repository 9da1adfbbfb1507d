"""Recall's query vector: a bounded wait, and a provider known to be down skipped at once.

A remote embedder that accepts connections and never answers would otherwise hold every recall
for `embedding.timeout_ms` (30 s). A recall waits at most `embedding.query_timeout_ms` for its
vector; once the provider is known down — a query embedding failed, or any request of the
provider (the background embedder's, the health probe's) got no answer since its last answer —
recalls skip it at once and answer keyword-only (`degraded: ["query_embedding_failed"]`) for
`embedding.query_retry_ms`, doubling while it stays down (at most ten times that). Then one
recall tries again (the others keep skipping while it does); its success ends the back-off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mnemonist.model.config import EmbeddingConfig
from mnemonist.providers.embedding.base import (
    EmbeddingError,
    EmbeddingProvider,
    request_timeout,
)

log = logging.getLogger(__name__)

MAX_BACKOFF_FACTOR = 10


class QueryEmbedder:
    def __init__(self, provider: EmbeddingProvider, cfg: EmbeddingConfig,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.provider = provider
        self.timeout_s = cfg.query_timeout_ms / 1000.0
        self.retry_s = cfg.query_retry_ms / 1000.0
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0  # in a row, own or seen on the provider
        self._retry_at = 0.0
        self._down_at = 0.0  # when the last failure happened
        self._probing = False
        self._seen_unreachable: float | None = None
        self.failed = 0  # query embeddings that failed
        self.skipped = 0  # recalls that skipped a provider known down
        self.last_error: str | None = None

    def embed(self, text: str, what: str = "a query") -> np.ndarray | None:
        """The text's vector, or None (a keyword-only recall) on failure or while down."""
        probing = self._may_try()
        if probing is None:
            return None
        try:
            with request_timeout(self.provider, self.timeout_s):
                vec = self.provider.embed([text])[0]
        except EmbeddingError as exc:
            self._failed(str(exc))
            log.warning("embedding %s failed, recall is keyword-only for %.0f s: %s",
                        what, self.retry_in(), exc)
            return None
        finally:
            if probing:
                with self._lock:
                    self._probing = False
        with self._lock:
            self._failures, self._retry_at = 0, 0.0
        return vec

    def _may_try(self) -> bool | None:
        """None: skip (known down); else whether this call is the one retry after a back-off."""
        with self._lock:
            now = self._clock()
            self._note_provider_outage()
            if self._failures == 0:
                return False
            if now < self._retry_at or self._probing:
                self.skipped += 1
                return None
            self._probing = True
            return True

    def _note_provider_outage(self) -> None:
        """What the provider's other requests saw (lock held): one that got no answer, newer
        than its last answer and not seen yet, counts as a failure from when it happened; an
        answer after the last failure ends the back-off."""
        unreachable = getattr(self.provider, "unreachable_at", None)
        answered = getattr(self.provider, "answered_at", None)
        if self._failures and answered is not None and answered > self._down_at:
            self._failures, self._retry_at = 0, 0.0
        if unreachable is None or unreachable == self._seen_unreachable:
            return
        self._seen_unreachable = unreachable
        if answered is None or unreachable > answered:
            self._down(unreachable)

    def _down(self, since: float) -> None:
        self._failures += 1
        self._down_at = max(self._down_at, since)
        backoff = self.retry_s * min(2 ** (self._failures - 1), MAX_BACKOFF_FACTOR)
        self._retry_at = max(self._retry_at, since + backoff)

    def _failed(self, error: str) -> None:
        with self._lock:
            self.failed += 1
            self.last_error = error
            self._down(self._clock())
            # this failure's own trace on the provider is counted already
            self._seen_unreachable = getattr(self.provider, "unreachable_at", None)

    def retry_in(self) -> float:
        """Seconds until a recall tries the provider again (0: it is not known down)."""
        with self._lock:
            return max(0.0, self._retry_at - self._clock()) if self._failures else 0.0

    def status(self) -> dict[str, Any]:
        with self._lock:
            down = self._failures > 0
            retry = max(0.0, self._retry_at - self._clock()) if down else 0.0
            return {"timeout_ms": round(self.timeout_s * 1000), "skipping": down,
                    "retry_in_s": round(retry, 1), "failed": self.failed,
                    "skipped": self.skipped, "last_error": self.last_error}
