"""A real HTTP server on 127.0.0.1 (a free port) for the fake protocol servers of the tests."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar


class LoopbackServer:
    """Mixin for a dataclass with `_httpd` and `_thread` fields: its `handler_base` subclass
    sees the server object as `self.fake`. Use as a context manager; `url` is its address."""

    handler_base: ClassVar[type[BaseHTTPRequestHandler]]
    _httpd: ThreadingHTTPServer | None
    _thread: threading.Thread | None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> Any:
        handler = type("Handler", (self.handler_base,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._httpd.handle_error = lambda *_: None  # clients that time out hang up: fine
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class JsonHandler(BaseHTTPRequestHandler):
    """Quiet keep-alive handler: GET and POST go to `_handle(method)`; `read_json()` gives
    the request's (body or None, lower-cased headers)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *_: object) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        raise NotImplementedError

    def read_json(self) -> tuple[Any, dict[str, str]]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        return (json.loads(raw) if raw else None), headers
