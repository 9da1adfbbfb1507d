"""`GuardedLlm`: what every pipeline LLM call goes through.

It bounds concurrency (a semaphore), enforces a per-hour call budget (past it the call raises
`LlmUnavailable`, so jobs wait instead of spending), remembers an outage for a short while
(so the worker waits instead of hammering a dead server), and counts calls, failures,
timeouts and tokens for `/api/pipeline/status`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from mnemonist.guards.write_tx import assert_not_in_write_tx
from mnemonist.model.memory import utcnow
from mnemonist.providers.llm.base import (
    LlmError,
    LlmProvider,
    LlmResult,
    LlmTimeout,
    LlmUnavailable,
)

HOUR_S = 3600.0


@dataclass
class LlmStats:
    calls: int = 0
    failures: int = 0
    timeouts: int = 0
    unavailable: int = 0
    budget_rejections: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    in_flight: int = 0
    last_error: str | None = None
    last_error_at: str | None = None
    last_call_at: str | None = None


class GuardedLlm:
    def __init__(
        self,
        provider: LlmProvider,
        *,
        max_concurrency: int = 2,
        hourly_budget: int = 500,
        down_for_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.provider = provider
        self.max_concurrency = max_concurrency
        self.hourly_budget = hourly_budget
        self.down_for_s = down_for_s
        self.stats = LlmStats()
        self._clock = clock
        self._sem = threading.BoundedSemaphore(max_concurrency)
        self._lock = threading.Lock()
        self._calls: deque[float] = deque()
        self._down_until = 0.0
        self._down_reason: str | None = None

    @property
    def name(self) -> str:
        return self.provider.name

    @property
    def model(self) -> str:
        return self.provider.model

    @property
    def model_id(self) -> str:
        return self.provider.model_id

    # -- budget --------------------------------------------------------------------------
    def _used_last_hour(self, now: float) -> int:
        while self._calls and now - self._calls[0] >= HOUR_S:
            self._calls.popleft()
        return len(self._calls)

    def _take_budget(self) -> None:
        with self._lock:
            now = self._clock()
            if self._used_last_hour(now) >= self.hourly_budget:
                self.stats.budget_rejections += 1
                raise LlmUnavailable(self._budget_message())
            self._calls.append(now)

    def _budget_message(self) -> str:
        return (f"hourly budget of {self.hourly_budget} LLM calls is used up"
                " (memory.pipelineV2.extraction.hourlyBudget)")

    # -- calls ---------------------------------------------------------------------------
    def generate(
        self,
        prompt: str,
        *,
        system: str | None = None,
        json_mode: bool = False,
        timeout_s: float | None = None,
    ) -> LlmResult:
        assert_not_in_write_tx("llm")
        self._take_budget()
        with self._sem:
            with self._lock:
                self.stats.calls += 1
                self.stats.in_flight += 1
                self.stats.last_call_at = utcnow()
            try:
                result = self.provider.generate(
                    prompt, system=system, json_mode=json_mode, timeout_s=timeout_s
                )
            except LlmError as exc:
                self._failed(exc)
                raise
            finally:
                with self._lock:
                    self.stats.in_flight -= 1
        with self._lock:
            self.stats.prompt_tokens += result.prompt_tokens
            self.stats.completion_tokens += result.completion_tokens
            self._down_until = 0.0
        return result

    def _failed(self, exc: LlmError) -> None:
        with self._lock:
            self.stats.failures += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"[:500]
            self.stats.last_error_at = utcnow()
            if isinstance(exc, LlmTimeout):
                self.stats.timeouts += 1
            elif isinstance(exc, LlmUnavailable):
                self.stats.unavailable += 1
                self._down_until = self._clock() + self.down_for_s
                self._down_reason = str(exc)
        if isinstance(exc, LlmUnavailable):
            self.provider.invalidate()

    # -- health --------------------------------------------------------------------------
    def unavailable_reason(self) -> str | None:
        """None when a call may go out now, else why not (the worker shows it and waits)."""
        with self._lock:
            now = self._clock()
            if self._used_last_hour(now) >= self.hourly_budget:
                return self._budget_message()
            if now < self._down_until:
                return self._down_reason
        return self.provider.unavailable_reason()

    def available(self) -> bool:
        return self.unavailable_reason() is None

    def status(self) -> dict[str, Any]:
        with self._lock:
            used = self._used_last_hour(self._clock())
            stats = asdict(self.stats)
        return {
            "name": self.name,
            "model": self.model,
            "base_url": getattr(self.provider, "base_url", None),
            "max_concurrency": self.max_concurrency,
            "budget": {"hourly": self.hourly_budget, "used_last_hour": used},
            **stats,
        }

    def close(self) -> None:
        self.provider.close()
