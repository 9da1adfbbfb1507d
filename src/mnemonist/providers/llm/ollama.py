"""Generation with an Ollama server: `POST /api/generate` with `stream: false`.

Availability is `GET /api/tags` (3 s timeout) listing the configured model (an implicit
":latest" tag may be left out on either side).
"""

from __future__ import annotations

from mnemonist.providers.embedding.ollama import _with_tag
from mnemonist.providers.llm.base import (
    HEALTH_TIMEOUT_S,
    HttpLlmProvider,
    LlmError,
    LlmResult,
    as_int,
)

DEFAULT_BASE_URL = "http://localhost:11434"
DEFAULT_MODEL = "qwen3:4b"


class OllamaLlm(HttpLlmProvider):
    name = "ollama"

    def __init__(self, model: str, *, base_url: str = "", timeout_s: float = 45.0,
                 health_ttl_s: float = 30.0) -> None:
        super().__init__(model or DEFAULT_MODEL, base_url=base_url or DEFAULT_BASE_URL,
                         timeout_s=timeout_s, health_ttl_s=health_ttl_s)

    def _generate(
        self, prompt: str, *, system: str | None, json_mode: bool, timeout_s: float
    ) -> LlmResult:
        body: dict[str, object] = {
            "model": self.model, "prompt": prompt, "stream": False,
            "options": {"temperature": 0},
        }
        if system:
            body["system"] = system
        if json_mode:
            body["format"] = "json"
        data = self._request("POST", "/api/generate", body, timeout_s=timeout_s)
        text = data.get("response") if isinstance(data, dict) else None
        if not isinstance(text, str):
            raise LlmError(f"ollama {self.model}: the answer has no 'response' text")
        return LlmResult(text, as_int(data.get("prompt_eval_count")),
                         as_int(data.get("eval_count")))

    def _probe(self) -> tuple[bool, str | None]:
        try:
            data = self._request("GET", "/api/tags", timeout_s=HEALTH_TIMEOUT_S)
        except LlmError as exc:
            return False, str(exc)
        models = data.get("models") if isinstance(data, dict) else None
        if not isinstance(models, list):
            return False, f"ollama at {self.base_url}: /api/tags has no model list"
        wanted = _with_tag(self.model)
        for entry in models:
            if isinstance(entry, dict) and any(
                isinstance(n, str) and _with_tag(n) == wanted
                for n in (entry.get("name"), entry.get("model"))
            ):
                return True, None
        return False, (f"ollama at {self.base_url} does not have model {self.model}"
                       f" (ollama pull {self.model})")
