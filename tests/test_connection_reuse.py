"""After a 500 the next call on the same connection still works: the daemon says
`Connection: close` (or keeps the connection usable), and the project's own client retries an
idempotent call once when a kept-alive connection was dropped under it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from conftest import LiveDaemon
from mnemonist.client import Client, DaemonError

pytestmark = pytest.mark.both_stores


def test_a_valid_request_after_a_500_on_the_same_connection_succeeds(
        live: LiveDaemon, monkeypatch: pytest.MonkeyPatch) -> None:
    mid = live.remember("A memory that is read after a crash")["id"]

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("recall exploded")

    monkeypatch.setattr(live.daemon.service.reads, "recall", broken)
    with httpx.Client(base_url=live.url, timeout=30) as http:
        assert http.get("/health").status_code == 200  # the connection is now kept alive
        resp = http.post("/api/memory/recall", json={"query": "crash"})
        assert resp.status_code == 500
        assert resp.json() == {"error": "internal_error",
                               "message": "RuntimeError: recall exploded"}
        assert resp.headers.get("connection", "").lower() == "close"
        for _ in range(3):
            again = http.get(f"/api/memory/{mid}")
            assert again.status_code == 200 and again.json()["id"] == mid
    client = Client(live.url)
    try:
        with pytest.raises(DaemonError) as err:
            client.post("/api/memory/recall", {"query": "crash"}, idempotent=True)
        assert err.value.status == 500
        assert client.get(f"/api/memory/{mid}")["id"] == mid
    finally:
        client.close()


class DroppingServer:
    """A minimal HTTP/1.1 server: it answers the first request on a connection with keep-alive,
    then reads the next request and closes the connection without answering (what a server
    that dropped the kept-alive connection looks like); new connections start over."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self._stop = threading.Event()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _read_request(self, conn: socket.socket) -> str | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(rest) < length:
            rest += conn.recv(65536)
        line = head.split(b"\r\n")[0].decode()
        self.requests.append(line)
        return line

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(30)
            with conn:
                if self._read_request(conn) is None:
                    continue
                body = b'{"ok": true}'
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(body), body))
                self._read_request(conn)  # the second request on the connection: dropped

    @contextmanager
    def running(self) -> Iterator[DroppingServer]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(5)
            self.sock.close()


def test_the_client_retries_an_idempotent_call_once_on_a_dropped_connection() -> None:
    with DroppingServer().running() as server:
        client = Client(server.url)
        try:
            assert client.get("/a") == {"ok": True}
            assert client.get("/b") == {"ok": True}  # dropped once, answered on a new one
            assert server.requests == ["GET /a HTTP/1.1", "GET /b HTTP/1.1", "GET /b HTTP/1.1"]
            assert client.post("/recall", {"query": "q"}, idempotent=True) == {"ok": True}
            server.requests.clear()
            assert client.request("DELETE", "/c") == {"ok": True}
            with pytest.raises(DaemonError) as err:  # a write is never sent twice
                client.post("/remember", {"content": "once"})
            assert "closed the connection" in str(err.value)
            assert server.requests == ["DELETE /c HTTP/1.1", "DELETE /c HTTP/1.1",
                                       "POST /remember HTTP/1.1"]
        finally:
            client.close()
