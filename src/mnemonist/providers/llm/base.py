"""The LLM provider contract, its errors, and what the HTTP providers share.

`generate()` returns the model's text and token counts. Failures are `LlmError`; the subclass
`LlmUnavailable` means "cannot be reached or refused to serve now" (connection refused, 503,
429, a missing key, no binary): the job waits without burning an attempt. `LlmTimeout` is a
call that ran past its timeout: an ordinary failure, retried with backoff.

Every `generate()` and `available()` call asserts it is not inside the write transaction: an
LLM call under the write lock would stall every writer (the daemon's first rule: raw first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from mnemonist.guards.write_tx import assert_not_in_write_tx
from mnemonist.providers.embedding.base import HEALTH_TTL_S, HealthCache

HEALTH_TIMEOUT_S = 3.0
#: HTTP answers that mean "not now" rather than "this request is bad": the job waits.
UNAVAILABLE_STATUSES = frozenset({401, 403, 404, 408, 429, 502, 503, 504, 529})


@dataclass(frozen=True)
class LlmResult:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LlmError(RuntimeError):
    """Any LLM failure."""


class LlmUnavailable(LlmError):
    """The provider cannot serve now (down, refused, rate-limited, unconfigured): wait."""


class LlmTimeout(LlmError):
    """The call ran past its timeout."""


class LlmHttpError(LlmError):
    def __init__(self, message: str, status: int, body: str) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class LlmProvider:
    """Subclasses set `name` and `model` and implement `_generate()` and `_probe()`."""

    name = "llm"

    def __init__(self, model: str, *, timeout_s: float, health_ttl_s: float = HEALTH_TTL_S):
        self.model = model
        self.timeout_s = timeout_s
        self.probe_error: str | None = None
        self._health = HealthCache(self._checked_probe, ttl=health_ttl_s)

    @property
    def model_id(self) -> str:
        """What derived memories store as their `extraction_model`."""
        return f"{self.name}/{self.model}"

    def generate(
        self,
        prompt: str,
        *,
        system: str | None = None,
        json_mode: bool = False,
        timeout_s: float | None = None,
    ) -> LlmResult:
        assert_not_in_write_tx("llm")
        return self._generate(
            prompt, system=system, json_mode=json_mode,
            timeout_s=self.timeout_s if timeout_s is None else timeout_s,
        )

    def available(self) -> bool:
        """Cheap health check, cached for 30 s; never raises LlmError."""
        assert_not_in_write_tx("llm")
        return self._health.get()

    def unavailable_reason(self) -> str | None:
        """None when available, else a sentence saying why not."""
        if self.available():
            return None
        return self.probe_error or f"{self.name} model {self.model} is not available"

    def invalidate(self) -> None:
        self._health.invalidate()

    def close(self) -> None:
        pass

    def _checked_probe(self) -> bool:
        try:
            ok, why = self._probe()
        except Exception as exc:  # a health check answers, whatever happened
            ok, why = False, f"{type(exc).__name__}: {exc}"
        self.probe_error = None if ok else why
        return ok

    def _generate(
        self, prompt: str, *, system: str | None, json_mode: bool, timeout_s: float
    ) -> LlmResult:
        raise NotImplementedError

    def _probe(self) -> tuple[bool, str | None]:
        raise NotImplementedError


def as_int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


class HttpLlmProvider(LlmProvider):
    """One thread-safe httpx client and the mapping of transport and HTTP errors."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        timeout_s: float,
        headers: dict[str, str] | None = None,
        health_ttl_s: float = HEALTH_TTL_S,
    ) -> None:
        super().__init__(model, timeout_s=timeout_s, health_ttl_s=health_ttl_s)
        self.base_url = base_url.rstrip("/")
        self._client = httpx.Client(headers=headers or {})

    def close(self) -> None:
        self._client.close()

    def _request(
        self, method: str, path: str, body: Any = None, *, timeout_s: float
    ) -> Any:
        """One request; returns the decoded JSON or raises an LlmError subclass."""
        url = self.base_url + path
        what = f"{self.name} {method} {url}"
        try:
            resp = self._client.request(method, url, json=body, timeout=timeout_s)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise LlmUnavailable(f"{what}: cannot connect ({type(exc).__name__}: {exc})") from exc
        except httpx.TimeoutException as exc:
            raise LlmTimeout(f"{what} timed out after {timeout_s * 1000:.0f} ms") from exc
        except httpx.HTTPError as exc:
            raise LlmError(f"{what} failed: {type(exc).__name__}: {exc}") from exc
        if not resp.is_success:
            text = resp.text[:200]
            message = f"{what} returned HTTP {resp.status_code}: {text}"
            if resp.status_code in UNAVAILABLE_STATUSES:
                raise LlmUnavailable(message)
            raise LlmHttpError(message, resp.status_code, resp.text[:2000])
        try:
            return resp.json()
        except ValueError as exc:
            raise LlmError(f"{what} returned malformed JSON: {resp.text[:200]!r}") from exc

    def _get_ok(self, path: str) -> tuple[bool, str | None]:
        """Probe helper: True when GET path answers 2xx within the health timeout."""
        try:
            self._request("GET", path, timeout_s=HEALTH_TIMEOUT_S)
        except LlmError as exc:
            return False, str(exc)
        return True, None
