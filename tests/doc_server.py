"""A real HTTP server on 127.0.0.1 that serves the pages the URL fetcher is tested against.

    with DocServer() as srv:
        srv.url("/page.html") ... srv.hits["/page.html"] ...
        srv.routes["/custom"] = Route(body=b"...", content_type="text/plain")
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = """<!doctype html>
<html><head>
<title>The Tide &amp; Moon Almanac</title>
<style>body { color: red } .hidden { display: none }</style>
<script>var secret = "<p>script text must vanish</p>"; if (a < b) { run(); }</script>
</head><body>
<h1>Tides&nbsp;explained</h1>
<p>The moon pulls the ocean &mdash; twice a day the water rises &lt;high tide&gt;.</p>
<p>Caf&eacute; owners in Brest watch the  tides   closely &#38; plan deliveries.</p>
<script type="text/javascript">document.write("also gone")</script>
<ul><li>Spring tides</li><li>Neap tides</li></ul>
<title>A second title is ignored</title>
</body></html>
"""


@dataclass
class Route:
    body: bytes = b""
    content_type: str | None = "text/plain; charset=utf-8"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    content_length: bool = True  # False: no Content-Length, the body ends when the socket does
    delay_s: float = 0.0  # before the response starts
    trickle_s: float = 0.0  # between single bytes of the body


def default_routes() -> dict[str, Route]:
    big = b"x" * 50_000
    return {
        "/page.html": Route(PAGE.encode(), "text/html; charset=utf-8"),
        "/data.json": Route(b'{"fact": "the harbour opens at six", "n": 3}', "application/json"),
        "/notes.xml": Route(b"<notes><n>low tide at noon</n></notes>", "application/xml"),
        "/latin1.txt": Route("Crème brûlée at the quay".encode("latin-1"),
                             "text/plain; charset=iso-8859-1"),
        "/image.png": Route(b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "image/png"),
        "/no-type": Route(b"what am I", None),
        "/big-declared": Route(big, "text/plain"),
        "/big-undeclared": Route(big, "text/plain", content_length=False),
        "/slow": Route(b"finally", "text/plain", delay_s=30.0),  # far past any timeout used
        "/trickle": Route(b"z" * 200, "text/plain", trickle_s=0.1),  # 20 s in all
        "/missing": Route(b"not here", status=404),
        "/broken": Route(b"oops", status=500),
    }


class DocServer:
    def __init__(self) -> None:
        self.routes = default_routes()
        self.hits: Counter[str] = Counter()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def redirect(self, path: str, location: str, status: int = 302) -> str:
        self.routes[path] = Route(b"", None, status=status, headers={"Location": location})
        return self.url(path)

    def __enter__(self) -> DocServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                server.hits[path] += 1
                route = server.routes.get(path)
                if route is None:
                    self.send_error(404)
                    return
                # the client may give up (a timeout or a size guard): expected
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer(route)

            def _answer(self, route: Route) -> None:
                time.sleep(route.delay_s)
                self.send_response(route.status)
                if route.content_type:
                    self.send_header("Content-Type", route.content_type)
                if route.content_length:
                    self.send_header("Content-Length", str(len(route.body)))
                for key, value in route.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if route.trickle_s:
                    for i in range(len(route.body)):
                        self.wfile.write(route.body[i : i + 1])
                        self.wfile.flush()
                        time.sleep(route.trickle_s)
                else:
                    self.wfile.write(route.body)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()
