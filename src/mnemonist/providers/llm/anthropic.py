"""Generation with the Anthropic Messages API: `POST {base}/v1/messages`.

The key comes from `extraction.apiKey` or `ANTHROPIC_API_KEY`; availability is "a key is
configured" (a probe would cost a call). The API has no JSON mode: the prompts already ask for
JSON only, and the tolerant parser handles the rest.
"""

from __future__ import annotations

from typing import Any

from mnemonist.providers.llm.base import HttpLlmProvider, LlmError, LlmResult, as_int

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-haiku-4-5"
API_VERSION = "2023-06-01"
MAX_TOKENS = 4096


class AnthropicLlm(HttpLlmProvider):
    name = "anthropic"

    def __init__(self, model: str, *, base_url: str = "", api_key: str = "",
                 timeout_s: float = 45.0, health_ttl_s: float = 30.0) -> None:
        headers = {"x-api-key": api_key, "anthropic-version": API_VERSION} if api_key else {}
        super().__init__(model or DEFAULT_MODEL, base_url=base_url or DEFAULT_BASE_URL,
                         timeout_s=timeout_s, headers=headers, health_ttl_s=health_ttl_s)
        self.has_key = bool(api_key)

    def _generate(
        self, prompt: str, *, system: str | None, json_mode: bool, timeout_s: float
    ) -> LlmResult:
        body: dict[str, Any] = {
            "model": self.model, "max_tokens": MAX_TOKENS,
            "messages": [{"role": "user", "content": prompt}],
        }
        if system:
            body["system"] = system
        data = self._request("POST", "/v1/messages", body, timeout_s=timeout_s)
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(blocks, list):
            raise LlmError(f"anthropic {self.model}: the answer has no content blocks")
        text = "".join(b.get("text", "") for b in blocks
                       if isinstance(b, dict) and b.get("type") == "text")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return LlmResult(text, as_int(usage.get("input_tokens")),
                         as_int(usage.get("output_tokens")))

    def _probe(self) -> tuple[bool, str | None]:
        if self.has_key:
            return True, None
        return False, "no Anthropic API key (extraction.apiKey or ANTHROPIC_API_KEY)"
