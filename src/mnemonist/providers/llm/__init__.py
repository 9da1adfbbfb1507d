"""LLM providers behind one small interface (`generate`, `available`): Ollama,
OpenAI-compatible chat completions, Anthropic Messages and the `claude` CLI.

`create_llm(cfg)` builds the one named by `memory.pipelineV2.extraction` and wraps it in
`GuardedLlm` (concurrency, hourly budget, counters). Nothing leaves the machine unless the user
configured a remote provider: the default, "claude-code", runs only when the `claude` binary
is installed; "none" (and the unsupported "opencode") never call anything.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from mnemonist.model.config import ExtractionConfig
from mnemonist.providers.llm.anthropic import AnthropicLlm
from mnemonist.providers.llm.base import (
    LlmError,
    LlmProvider,
    LlmResult,
    LlmTimeout,
    LlmUnavailable,
)
from mnemonist.providers.llm.claude_cli import ClaudeCliLlm
from mnemonist.providers.llm.guarded import GuardedLlm
from mnemonist.providers.llm.ollama import OllamaLlm
from mnemonist.providers.llm.openai_compat import OpenAICompatLlm

__all__ = [
    "AnthropicLlm",
    "ClaudeCliLlm",
    "DisabledLlm",
    "GuardedLlm",
    "LlmError",
    "LlmProvider",
    "LlmResult",
    "LlmTimeout",
    "LlmUnavailable",
    "OllamaLlm",
    "OpenAICompatLlm",
    "create_llm",
    "create_llm_provider",
]

#: "haiku" is the documents' default model for the claude CLI; it means nothing to the others
CLAUDE_ALIAS = "haiku"


class DisabledLlm(LlmProvider):
    """No LLM: never available, every call refused with the reason."""

    name = "none"

    def __init__(self, reason: str) -> None:
        super().__init__("", timeout_s=1.0)
        self.reason = reason

    def _generate(self, prompt, *, system, json_mode, timeout_s) -> LlmResult:
        raise LlmUnavailable(self.reason)

    def _probe(self) -> tuple[bool, str | None]:
        return False, self.reason


def _openai_key(cfg: ExtractionConfig) -> str:
    """The configured key; the OPENAI_API_KEY environment variable only for OpenAI itself,
    so that a user's key is never sent to some other server."""
    if cfg.api_key:
        return cfg.api_key
    host = urlsplit(cfg.base_url).hostname if cfg.base_url else "api.openai.com"
    return os.environ.get("OPENAI_API_KEY", "") if host == "api.openai.com" else ""


def create_llm_provider(cfg: ExtractionConfig) -> LlmProvider:
    timeout_s = cfg.timeout / 1000.0
    model = "" if cfg.provider != "claude-code" and cfg.model == CLAUDE_ALIAS else cfg.model
    if cfg.provider == "ollama":
        return OllamaLlm(model, base_url=cfg.base_url, timeout_s=timeout_s)
    if cfg.provider == "openai":
        return OpenAICompatLlm(model, base_url=cfg.base_url, api_key=_openai_key(cfg),
                               timeout_s=timeout_s)
    if cfg.provider == "anthropic":
        key = cfg.api_key or os.environ.get("ANTHROPIC_API_KEY", "")
        return AnthropicLlm(model, base_url=cfg.base_url, api_key=key, timeout_s=timeout_s)
    if cfg.provider == "claude-code":
        return ClaudeCliLlm(model, timeout_s=timeout_s)
    if cfg.provider == "opencode":
        return DisabledLlm("extraction.provider 'opencode' is not supported yet: use"
                           " ollama, openai, anthropic or claude-code")
    return DisabledLlm("extraction.provider is 'none': no LLM is configured")


def create_llm(cfg: ExtractionConfig) -> GuardedLlm:
    return GuardedLlm(create_llm_provider(cfg), max_concurrency=cfg.max_concurrency,
                      hourly_budget=cfg.hourly_budget)
