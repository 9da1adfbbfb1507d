"""Generation with any OpenAI-compatible chat completions server (llama.cpp, vLLM, LM Studio,
OpenAI itself): `POST {base}/chat/completions`.

JSON mode sends `response_format: {"type": "json_object"}`; a server that answers 400 naming
`response_format` is asked once more without it, and never again with it. Availability is
`GET {base}/models` answering 2xx. The base URL rule is the embedding provider's: no path
means "/v1" is appended.
"""

from __future__ import annotations

from typing import Any

from mnemonist.providers.embedding.openai_compat import resolve_base_url
from mnemonist.providers.llm.base import (
    HttpLlmProvider,
    LlmError,
    LlmHttpError,
    LlmResult,
    as_int,
)

DEFAULT_MODEL = "gpt-4o-mini"


class OpenAICompatLlm(HttpLlmProvider):
    name = "openai"

    def __init__(self, model: str, *, base_url: str = "", api_key: str = "",
                 timeout_s: float = 45.0, health_ttl_s: float = 30.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        super().__init__(model or DEFAULT_MODEL, base_url=resolve_base_url(base_url),
                         timeout_s=timeout_s, headers=headers, health_ttl_s=health_ttl_s)
        self.json_mode_supported = True

    def _generate(
        self, prompt: str, *, system: str | None, json_mode: bool, timeout_s: float
    ) -> LlmResult:
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if json_mode and self.json_mode_supported:
            body["response_format"] = {"type": "json_object"}
        try:
            data = self._request("POST", "/chat/completions", body, timeout_s=timeout_s)
        except LlmHttpError as exc:
            if exc.status != 400 or "response_format" not in body \
                    or "response_format" not in exc.body:
                raise
            self.json_mode_supported = False
            body.pop("response_format")
            data = self._request("POST", "/chat/completions", body, timeout_s=timeout_s)
        return self._result(data)

    def _result(self, data: Any) -> LlmResult:
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LlmError(f"openai {self.model}: the answer has no choices[0].message") from None
        if not isinstance(text, str):
            raise LlmError(f"openai {self.model}: the message content is not text")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return LlmResult(text, as_int(usage.get("prompt_tokens")),
                         as_int(usage.get("completion_tokens")))

    def _probe(self) -> tuple[bool, str | None]:
        return self._get_ok("/models")
