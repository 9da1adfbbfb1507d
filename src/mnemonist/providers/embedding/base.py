"""The embedding provider contract and the helpers every provider shares.

All providers return float32 arrays of shape (n, d) with L2-normalised rows; a row whose raw
vector has zero norm stays all zeros (never NaN). Every `embed()` and `available()` call checks
`guards/write_tx.py` first: a provider call inside the write transaction is a bug, reported with
`WriteLockViolation` even when the call would not do I/O, so that the bug shows up every time.
That check is the one exception to "`available()` never raises".
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar, runtime_checkable

import httpx
import numpy as np

from mnemonist.guards.write_tx import assert_not_in_write_tx
from mnemonist.model.config import EmbeddingConfig

HEALTH_TTL_S = 30.0
HEALTH_TIMEOUT_S = 3.0


class EmbeddingError(RuntimeError):
    """Any embedding failure: timeout, HTTP error, bad payload, dimension mismatch."""


@runtime_checkable
class EmbeddingProvider(Protocol):
    model_id: str
    """Stable id stored next to each vector, e.g. "local/all-MiniLM-L6-v2-int8"."""
    dimensions: int | None
    """Known up front (local model, or configured); otherwise set by the first call."""

    def embed(self, texts: list[str]) -> np.ndarray:
        """Shape (len(texts), d), float32, rows L2-normalised; raises EmbeddingError.
        An HTTP provider's wait can be shortened for the calling thread with
        `request_timeout(provider, seconds)`."""
        ...

    def available(self) -> bool:
        """Cheap health check, cached for 30 s; never raises EmbeddingError."""
        ...

    def close(self) -> None: ...


_Item = TypeVar("_Item")


def batched(texts: Sequence[_Item], size: int) -> Iterator[Sequence[_Item]]:
    for start in range(0, len(texts), size):
        yield texts[start : start + size]


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation to float32; zero rows stay zero."""
    out = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    safe = np.where(norms > 0.0, norms, np.float32(1.0))
    return (out / safe).astype(np.float32, copy=False)


def to_matrix(rows: object, expected_rows: int, source: str) -> np.ndarray:
    """Validate a decoded JSON list of vectors and turn it into a float32 matrix."""
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise EmbeddingError(f"{source}: embeddings are not a list of lists")
    if len(rows) != expected_rows:
        raise EmbeddingError(f"{source}: asked for {expected_rows} vectors, got {len(rows)}")
    if expected_rows == 0:
        return np.zeros((0, 0), dtype=np.float32)
    widths = {len(r) for r in rows}
    if len(widths) != 1 or 0 in widths:
        raise EmbeddingError(f"{source}: vectors have inconsistent or zero length {sorted(widths)}")
    try:
        matrix = np.array(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source}: vectors are not numeric: {exc}") from None
    if not np.all(np.isfinite(matrix)):
        raise EmbeddingError(f"{source}: vectors contain NaN or infinity")
    return matrix


class DimensionGuard:
    """Checks every batch against the configured dimension, or the first one seen.

    Without a configured value the first successful batch fixes the dimension; a later batch
    of another width (the server switched models) is an error rather than a silently mixed
    vector space.
    """

    def __init__(self, configured: int | None) -> None:
        self.configured = configured
        self.dimensions: int | None = configured
        self._lock = threading.Lock()

    def check(self, matrix: np.ndarray, source: str) -> int:
        """Raise EmbeddingError on a mismatch; return the (possibly just learned) dimension."""
        got = int(matrix.shape[1])
        with self._lock:
            if self.configured is not None and got != self.configured:
                raise EmbeddingError(
                    f"{source}: configured dimensions {self.configured}, "
                    f"but the vectors have {got}"
                )
            if self.dimensions is None:
                self.dimensions = got
            elif got != self.dimensions:
                raise EmbeddingError(
                    f"{source}: expected {self.dimensions} dimensions (from earlier calls), "
                    f"but the vectors have {got}"
                )
            return got


class HealthCache:
    """Caches a boolean probe for `ttl` seconds; one probe runs at a time.

    Callers that arrive while a probe runs wait for it (at most the probe's own timeout)
    instead of starting a second one.
    """

    def __init__(self, probe: Callable[[], bool], ttl: float = HEALTH_TTL_S) -> None:
        self._probe = probe
        self._ttl = ttl
        self._lock = threading.Lock()
        self._value: bool | None = None
        self._at = 0.0

    def get(self) -> bool:
        with self._lock:
            if self._value is not None and time.monotonic() - self._at < self._ttl:
                return self._value
            try:
                value = bool(self._probe())
            except Exception:
                value = False
            self._value, self._at = value, time.monotonic()
            return value

    def invalidate(self) -> None:
        with self._lock:
            self._value = None


def request_timeout(provider: object, seconds: float) -> contextlib.AbstractContextManager[None]:
    """Within the block, the calling thread's requests of an HTTP provider wait at most
    `seconds` per phase (connect, read) instead of `embedding.timeout_ms`: what recall uses
    for its query's vector. Nothing for the local model (no network to wait for)."""
    bound = getattr(provider, "request_timeout", None)
    return bound(seconds) if callable(bound) else contextlib.nullcontext()


class HttpEmbeddingProvider:
    """What the HTTP providers share: one thread-safe httpx.Client, batching, error mapping,
    dimension checks, normalisation and the cached health probe.

    Subclasses set `name` and implement `_embed_batch()` (one request, raw matrix back) and
    `_probe()` (the uncached health check).
    """

    name = "http"

    def __init__(
        self, cfg: EmbeddingConfig, *, base_url: str, model_id: str, headers: dict[str, str]
    ) -> None:
        self.model_id = model_id
        self.base_url = base_url.rstrip("/")
        self._batch_size = cfg.batch_size
        self._timeout_ms = cfg.timeout_ms
        self._guard = DimensionGuard(cfg.dimensions)
        self.dimensions: int | None = cfg.dimensions
        # httpx timeouts apply per phase (connect, each read, write), not to the whole call.
        self._client = httpx.Client(timeout=cfg.timeout_ms / 1000.0, headers=headers)
        self._health = HealthCache(self._probe)
        self._call = threading.local()  # this thread's shorter timeout (request_timeout)
        #: time.monotonic() of the last request that got no answer (timed out, refused,
        #: dropped) and of the last that got one: recall skips a server known not to answer
        self.unreachable_at: float | None = None
        self.answered_at: float | None = None

    @contextlib.contextmanager
    def request_timeout(self, seconds: float) -> Iterator[None]:
        before = getattr(self._call, "timeout_s", None)
        self._call.timeout_s = seconds
        try:
            yield
        finally:
            self._call.timeout_s = before

    def embed(self, texts: list[str]) -> np.ndarray:
        assert_not_in_write_tx("embedding")
        if not texts:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        parts = []
        for chunk in batched(texts, self._batch_size):
            matrix = self._embed_batch(list(chunk))
            self.dimensions = self._guard.check(matrix, f"{self.name} {self.model_id}")
            parts.append(matrix)
        return l2_normalize(np.concatenate(parts))

    def available(self) -> bool:
        assert_not_in_write_tx("embedding")
        return self._health.get()

    def close(self) -> None:
        self._client.close()

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def _probe(self) -> bool:
        raise NotImplementedError

    def _request(
        self, method: str, path: str, body: object = None, timeout_s: float | None = None
    ) -> object:
        """One request; any failure becomes EmbeddingError. Returns the decoded JSON."""
        url = self.base_url + path
        what = f"{self.name} {method} {url}"
        if timeout_s is None:
            timeout_s = getattr(self._call, "timeout_s", None)
        timeout = self._timeout_ms / 1000.0 if timeout_s is None else timeout_s
        try:
            resp = self._client.request(method, url, json=body, timeout=timeout)
        except httpx.TimeoutException as exc:
            self.unreachable_at = time.monotonic()
            raise EmbeddingError(f"{what} timed out after {timeout * 1000:.0f} ms") from exc
        except httpx.HTTPError as exc:
            if isinstance(exc, httpx.TransportError):
                self.unreachable_at = time.monotonic()
            raise EmbeddingError(f"{what} failed: {type(exc).__name__}: {exc}") from exc
        self.answered_at = time.monotonic()
        if not resp.is_success:
            raise EmbeddingError(f"{what} returned HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            return resp.json()
        except ValueError as exc:
            raise EmbeddingError(f"{what} returned malformed JSON: {resp.text[:200]!r}") from exc
