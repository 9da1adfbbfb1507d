"""A real HTTP server on 127.0.0.1 speaking the Ollama and OpenAI embedding protocols.

    with FakeEmbeddingServer(dim=8) as srv:
        srv.fail_status, srv.fail_body = 500, "boom"     # or delay_s, wrong_dim, malformed
        srv.hang = True   # accept and read each request, never answer (until the server stops)
        ... srv.url ... srv.requests (method, path, lower-cased headers, JSON body) ...

Vectors are deterministic: seeded from the sha256 of the text, not normalised (so that tests
can see the client normalise them); the text ZERO_TEXT maps to the zero vector.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import numpy as np

from loopback import JsonHandler, LoopbackServer

ZERO_TEXT = "<zero-vector>"


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any = None


def raw_vector(text: str, dim: int) -> np.ndarray:
    """The unnormalised vector the server returns for `text`."""
    if text == ZERO_TEXT:
        return np.zeros(dim)
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim) * 3.0


@dataclass
class FakeEmbeddingServer(LoopbackServer):
    handler_base: ClassVar[type[BaseHTTPRequestHandler]]
    dim: int = 8
    ollama_models: list[str] = field(default_factory=lambda: ["nomic-embed-text:latest"])
    fail_status: int | None = None
    fail_body: str = ""
    delay_s: float = 0.0
    wrong_dim: int | None = None
    malformed: bool = False
    reverse_openai_order: bool = True  # clients must order `data` by `index`
    required_key: str | None = None  # OpenAI paths answer 401 without "Bearer <key>"
    hang: bool = False  # read the request, then never answer (released when the server stops)
    released: threading.Event = field(default_factory=threading.Event)
    requests: list[Recorded] = field(default_factory=list)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)


    def __exit__(self, *exc: object) -> None:
        self.released.set()  # hung handlers end without answering
        super().__exit__(*exc)

    def posts(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST"]

    def record(self, rec: Recorded) -> None:
        with self._lock:
            self.requests.append(rec)

    def vectors(self, texts: list[str]) -> list[list[float]]:
        dim = self.wrong_dim or self.dim
        return [raw_vector(t, dim).tolist() for t in texts]


class _Handler(JsonHandler):
    fake: FakeEmbeddingServer

    def _handle(self, method: str) -> None:
        fake = self.fake
        body, headers = self.read_json()
        fake.record(Recorded(method, self.path, headers, body))
        if fake.hang:
            fake.released.wait()
            self.close_connection = True
            return
        if fake.delay_s:
            time.sleep(fake.delay_s)
        if fake.fail_status is not None:
            return self._send(fake.fail_status, fake.fail_body.encode(), "text/plain")
        key_ok = headers.get("authorization") == f"Bearer {fake.required_key}"
        if fake.required_key is not None and not self.path.startswith("/api/") and not key_ok:
            return self._send(401, b'{"error": "invalid api key"}', "application/json")
        if fake.malformed:
            return self._send(200, b'{"embeddings": [[0.1, 0.2', "application/json")
        reply = self._route(method, self.path, body)
        if reply is None:
            return self._send(404, b'{"error": "not found"}', "application/json")
        self._send(200, json.dumps(reply).encode(), "application/json")

    def _route(self, method: str, path: str, body: Any) -> Any:
        fake = self.fake
        if method == "POST" and path == "/api/embed":
            return {"model": body["model"], "embeddings": fake.vectors(body["input"])}
        if method == "GET" and path == "/api/tags":
            return {"models": [{"name": m, "model": m} for m in fake.ollama_models]}
        if method == "POST" and path.endswith("/embeddings"):
            data = [
                {"object": "embedding", "index": i, "embedding": v}
                for i, v in enumerate(fake.vectors(body["input"]))
            ]
            if fake.reverse_openai_order:
                data.reverse()
            return {"object": "list", "data": data, "model": body["model"]}
        if method == "GET" and path.endswith("/models"):
            return {"object": "list", "data": [{"id": "text-embedding-3-small"}]}
        return None

    def _send(self, status: int, payload: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


FakeEmbeddingServer.handler_base = _Handler
