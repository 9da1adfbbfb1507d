"""A real HTTP server on 127.0.0.1 speaking the Ollama (`/api/generate`, `/api/tags`),
OpenAI (`/v1/chat/completions`, `/v1/models`) and Anthropic (`/v1/messages`) protocols.

It answers from a script: queued replies first (`srv.replies.append(...)`), else
`srv.script(call)`, else "{}". A reply is the model's text (wrapped in the protocol's JSON) or
a `Reply` with a status, a raw body or a delay:

    with FakeLlmServer() as srv:
        srv.replies.append('<think>hmm</think>{"facts": []}')
        srv.replies.append(Reply(status=500, body="boom"))
        srv.script = lambda call: '{"action": "none", "reason": "covered"}'
        ... srv.url ... srv.calls (protocol, path, headers, body, prompt, system) ...

A closed port (`closed_port()`) stands for "connection refused".
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from loopback import JsonHandler, LoopbackServer

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass
class Reply:
    text: str | None = None
    status: int = 200
    body: str | None = None  # sent as is, instead of the wrapped text
    delay_s: float = 0.0
    hold: threading.Event | None = None  # answer only once the test sets it (at most 60 s)
    prompt_tokens: int = 11
    completion_tokens: int = 7


@dataclass
class Call:
    protocol: str
    path: str
    headers: dict[str, str]
    body: Any
    prompt: str = ""
    system: str = ""

    @property
    def kind(self) -> str:
        """extraction | decision | contradiction | hints | other, from the prompt's markers."""
        if "<<<NOTE>>>" in self.prompt:
            return "hints"
        if "<<<MEMORY>>>" in self.prompt:
            return "extraction"
        if "<<<FACT>>>" in self.prompt:
            return "decision"
        if "<<<STATEMENT A>>>" in self.prompt:
            return "contradiction"
        return "other"

    def candidates(self) -> list[tuple[str, str]]:
        """(id, content) of the candidates listed in a decision prompt."""
        out = []
        for m in re.finditer(r"id: (\S+) \(type: [^)]*\)\n<<<CANDIDATE (\d+)>>>\n(.*?)\n"
                             r"<<<END CANDIDATE \2>>>", self.prompt, re.S):
            out.append((m.group(1), m.group(3)))
        return out

    def memory_text(self) -> str:
        m = re.search(r"<<<MEMORY>>>\n(.*)\n<<<END MEMORY>>>", self.prompt, re.S)
        return m.group(1) if m else ""

    def note_text(self) -> str:
        """The note of a hints prompt (its "[said by: ...]" line included)."""
        m = re.search(r"<<<NOTE>>>\n(.*)\n<<<END NOTE>>>", self.prompt, re.S)
        return m.group(1) if m else ""


Script = Callable[[Call], "Reply | str"]


def closed_port() -> int:
    """A loopback port nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class FakeLlmServer(LoopbackServer):
    handler_base: ClassVar[type[BaseHTTPRequestHandler]]
    models: list[str] = field(default_factory=lambda: ["qwen3:4b", "test-model"])
    script: Script | None = None
    health_status: int = 200
    reject_json_mode: bool = False  # OpenAI: 400 naming response_format when it is sent
    replies: deque[Reply | str] = field(default_factory=deque)
    calls: list[Call] = field(default_factory=list)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)


    def record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def generations(self, kind: str | None = None) -> list[Call]:
        with self._lock:
            gen = [c for c in self.calls if c.path.endswith(("/generate", "/completions",
                                                              "/messages"))]
        return [c for c in gen if kind is None or c.kind == kind]

    def next_reply(self, call: Call) -> Reply:
        with self._lock:
            queued = self.replies.popleft() if self.replies else None
        reply = queued if queued is not None else (
            self.script(call) if self.script is not None else "{}")
        return Reply(text=reply) if isinstance(reply, str) else reply


class _Handler(JsonHandler):
    fake: FakeLlmServer

    def _handle(self, method: str) -> None:
        fake = self.fake
        body, headers = self.read_json()
        path = self.path
        if method == "GET":
            fake.record(Call("health", path, headers, None))
            if fake.health_status != 200:
                return self._send(fake.health_status, b'{"error": "down"}')
            if path == "/api/tags":
                return self._json({"models": [{"name": m, "model": m} for m in fake.models]})
            if path.endswith("/models"):
                return self._json({"object": "list", "data": [{"id": m} for m in fake.models]})
            return self._send(404, b'{"error": "not found"}')
        call = self._call(path, headers, body)
        if call is None:
            return self._send(404, b'{"error": "not found"}')
        fake.record(call)
        if call.protocol == "openai" and fake.reject_json_mode and "response_format" in body:
            return self._send(400, b'{"error": {"message": "response_format is not supported"}}')
        reply = fake.next_reply(call)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.hold is not None:
            reply.hold.wait(60)
        if reply.body is not None or reply.status != 200:
            return self._send(reply.status, (reply.body or "").encode())
        return self._json(self._wrap(call.protocol, reply, body))

    @staticmethod
    def _call(path: str, headers: dict[str, str], body: Any) -> Call | None:
        if path == "/api/generate":
            return Call("ollama", path, headers, body, body.get("prompt", ""),
                        body.get("system") or "")
        if path.endswith("/chat/completions"):
            msgs = body.get("messages", [])
            system = "".join(m["content"] for m in msgs if m.get("role") == "system")
            prompt = "".join(m["content"] for m in msgs if m.get("role") == "user")
            return Call("openai", path, headers, body, prompt, system)
        if path.endswith("/v1/messages"):
            msgs = body.get("messages", [])
            prompt = "".join(m["content"] for m in msgs if m.get("role") == "user")
            return Call("anthropic", path, headers, body, prompt, body.get("system") or "")
        return None

    @staticmethod
    def _wrap(protocol: str, reply: Reply, body: Any) -> dict[str, Any]:
        text = reply.text or ""
        if protocol == "ollama":
            return {"model": body["model"], "response": text, "done": True,
                    "prompt_eval_count": reply.prompt_tokens, "eval_count": reply.completion_tokens}
        if protocol == "openai":
            return {"id": "cmpl-1", "object": "chat.completion", "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": reply.prompt_tokens,
                              "completion_tokens": reply.completion_tokens}}
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": text}],
                "usage": {"input_tokens": reply.prompt_tokens,
                          "output_tokens": reply.completion_tokens}}

    def _json(self, data: Any) -> None:
        self._send(200, json.dumps(data).encode())

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


FakeLlmServer.handler_base = _Handler
