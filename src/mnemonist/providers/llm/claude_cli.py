"""Generation through the Claude Code CLI as a subprocess:

    claude -p <prompt> --model <model> --no-session-persistence --output-format text

The CLI takes no separate system prompt in this form, so the system text is put in front of
the prompt. Available when the binary is on PATH; nothing runs (and nothing leaves the
machine) otherwise.
"""

from __future__ import annotations

import shutil
import subprocess

from mnemonist.providers.llm.base import (
    LlmError,
    LlmProvider,
    LlmResult,
    LlmTimeout,
    LlmUnavailable,
)

DEFAULT_MODEL = "haiku"


class ClaudeCliLlm(LlmProvider):
    name = "claude-code"

    def __init__(self, model: str, *, binary: str = "claude", timeout_s: float = 60.0,
                 health_ttl_s: float = 30.0) -> None:
        super().__init__(model or DEFAULT_MODEL, timeout_s=timeout_s, health_ttl_s=health_ttl_s)
        self.binary = binary

    def _generate(
        self, prompt: str, *, system: str | None, json_mode: bool, timeout_s: float
    ) -> LlmResult:
        path = shutil.which(self.binary)
        if path is None:
            raise LlmUnavailable(f"the {self.binary!r} binary is not on PATH")
        text = f"{system}\n\n{prompt}" if system else prompt
        argv = [path, "-p", text, "--model", self.model, "--no-session-persistence",
                "--output-format", "text"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired as exc:
            raise LlmTimeout(f"claude CLI timed out after {timeout_s * 1000:.0f} ms") from exc
        except OSError as exc:
            raise LlmUnavailable(f"claude CLI could not start: {exc}") from exc
        if done.returncode != 0:
            detail = (done.stderr or done.stdout or "").strip()[:200]
            raise LlmError(f"claude CLI exited with {done.returncode}: {detail}")
        return LlmResult(done.stdout)

    def _probe(self) -> tuple[bool, str | None]:
        if shutil.which(self.binary):
            return True, None
        return False, (f"the {self.binary!r} CLI is not on PATH: install Claude Code or set"
                       " memory.pipelineV2.extraction.provider (ollama, openai, anthropic)")
