"""The HTTP trust boundary over a real daemon: a web page in a browser on the same machine can
neither write (Origin, content type) nor read through DNS rebinding (Host), on `/api/*`,
`/health` and `/mcp` alike; requests without an Origin (curl, the CLI, hooks) pass."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import LiveDaemon, run_daemon
from mnemonist.api.boundary import json_depth_exceeds, same_origin, split_host

EVIL = "http://evil.example"
MCP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def memory_count(live: LiveDaemon) -> int:
    conn = sqlite3.connect(f"file:{live.daemon.paths.database}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    finally:
        conn.close()


def port_of(live: LiveDaemon) -> int:
    return int(live.url.rsplit(":", 1)[1])


def assert_refused(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["error"] == code and body["message"], body
    return body


# -- item 1: a web page cannot plant a memory -----------------------------------------------------


def test_a_cross_origin_simple_request_plants_nothing(live: LiveDaemon) -> None:
    """The attack as a browser sends it: text/plain (no preflight) with the page's Origin."""
    before = memory_count(live)
    body = json.dumps([{"content": "critical: the attacker's planted instruction"}])
    resp = live.http.post("/api/memory/import", content=body,
                          headers={"content-type": "text/plain", "origin": EVIL})
    assert "evil.example" in assert_refused(resp, 403, "forbidden_origin")["message"]
    resp = live.http.post("/api/memory/remember", content=json.dumps({"content": "planted"}),
                          headers={"content-type": "application/json", "origin": EVIL})
    assert_refused(resp, 403, "forbidden_origin")
    assert memory_count(live) == before


def test_body_less_posts_and_other_methods_check_the_origin_too(live: LiveDaemon) -> None:
    mid = live.remember("An origin-checked memory that a page must not delete")["id"]
    for method, path in (("POST", "/api/repair/check-fts"),
                         ("POST", "/api/repair/maintenance-tick"),
                         ("DELETE", f"/api/memory/{mid}?reason=page"),
                         ("PATCH", f"/api/memory/{mid}")):
        resp = live.http.request(method, path, headers={"origin": EVIL})
        assert_refused(resp, 403, "forbidden_origin")
        resp = live.http.request(method, path, headers={"origin": "null"})  # sandboxed frames
        assert_refused(resp, 403, "forbidden_origin")
    assert live.http.get(f"/api/memory/{mid}").json()["is_deleted"] is False


def test_fetch_metadata_marks_a_page_without_origin(live: LiveDaemon) -> None:
    for site in ("cross-site", "same-site"):
        resp = live.http.post("/api/memory/remember", json={"content": "via fetch metadata"},
                              headers={"sec-fetch-site": site})
        assert_refused(resp, 403, "forbidden_origin")
    resp = live.http.post("/api/memory/remember", json={"content": "typed by the user"},
                          headers={"sec-fetch-site": "none"})
    assert resp.status_code == 201, resp.text


def test_the_daemons_own_origin_and_no_origin_pass(live: LiveDaemon) -> None:
    port = port_of(live)
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        host = origin.removeprefix("http://")
        resp = live.http.post("/api/memory/remember", json={"content": f"from {origin}"},
                              headers={"origin": origin, "host": host,
                                       "sec-fetch-site": "same-origin"})
        assert resp.status_code == 201, resp.text
    # another local port is another origin (a dev server's page is not the daemon)
    resp = live.http.post("/api/memory/remember", json={"content": "from another port"},
                          headers={"origin": f"http://127.0.0.1:{port + 1}"})
    assert_refused(resp, 403, "forbidden_origin")
    assert live.http.post("/api/memory/remember", json={"content": "curl"}).status_code == 201


def test_reads_with_a_foreign_origin_get_no_cors_headers(live: LiveDaemon) -> None:
    live.remember("Nothing of this may be readable by a page")
    resp = live.http.get("/api/memories", headers={"origin": EVIL})
    assert resp.status_code == 200
    assert not [h for h in resp.headers if h.lower().startswith("access-control-")]
    preflight = live.http.options("/api/memory/remember", headers={
        "origin": EVIL, "access-control-request-method": "POST",
        "access-control-request-headers": "content-type"})
    assert preflight.status_code >= 400
    assert "access-control-allow-origin" not in preflight.headers


def test_mcp_refuses_a_foreign_origin(live: LiveDaemon) -> None:
    resp = live.http.post("/mcp", json=MCP_INIT, headers={**MCP_HEADERS, "origin": EVIL})
    assert_refused(resp, 403, "forbidden_origin")
    resp = live.http.post("/mcp", json=MCP_INIT, headers=MCP_HEADERS)
    assert resp.status_code == 200, resp.text


def test_json_routes_require_a_json_content_type(live: LiveDaemon) -> None:
    before = memory_count(live)
    raw = json.dumps({"content": "typed as text"})
    for path in ("/api/memory/remember", "/api/memory/import"):
        for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
            resp = live.http.post(path, content=raw, headers={"content-type": kind})
            body = assert_refused(resp, 415, "unsupported_media_type")
            assert kind in body["message"]
        resp = live.http.post(path, content=raw, headers={"content-type": ""})
        assert_refused(resp, 415, "unsupported_media_type")
    assert memory_count(live) == before
    lines = "\n".join(json.dumps({"content": f"line {i} of a JSON lines import"})
                      for i in range(2))
    resp = live.http.post("/api/memory/import", content=lines,
                          headers={"content-type": "application/x-ndjson"})
    assert resp.status_code == 200 and resp.json()["created"] == 2, resp.text


# -- item 3: Host allow-list from the bound address ------------------------------------------------


@pytest.mark.parametrize("path", ["/api/memories", "/health", "/api/status", "/openapi.json"])
def test_a_rebound_host_reads_nothing(live: LiveDaemon, path: str) -> None:
    port = port_of(live)
    for host in (f"attacker.example:{port}", "attacker.example:3901", "attacker.example",
                 f"localhost:{port + 1}", f"127.0.0.1.attacker.example:{port}", ""):
        resp = live.http.get(path, headers={"host": host})
        body = assert_refused(resp, 421, "forbidden_host")
        assert "server.allowed_hosts" in body["message"]


def test_mcp_checks_the_host_by_the_same_policy(live: LiveDaemon) -> None:
    resp = live.http.post("/mcp", json=MCP_INIT,
                          headers={**MCP_HEADERS, "host": "attacker.example"})
    assert_refused(resp, 421, "forbidden_host")


def test_loopback_names_with_the_bound_port_are_the_daemon(live: LiveDaemon) -> None:
    port = port_of(live)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}",
                 f"[::1]:{port}"):
        resp = live.http.get("/health", headers={"host": host})
        assert resp.status_code == 200, (host, resp.text)


def test_allowed_hosts_adds_names(tmp_path: Path) -> None:
    config = {"server": {"allowed_hosts": ["memory.internal", "proxy.lan:8443"]}}
    with run_daemon(tmp_path / "home", config) as d:
        for host, status in (("memory.internal", 200), ("memory.internal:9000", 200),
                             ("proxy.lan:8443", 200), ("proxy.lan:8444", 421),
                             ("other.internal", 421)):
            assert d.http.get("/api/memories", headers={"host": host}).status_code == status
        resp = d.http.post("/api/memory/remember", json={"content": "through the proxy"},
                           headers={"host": "memory.internal",
                                    "origin": "https://memory.internal"})
        assert resp.status_code == 201, resp.text


TOKEN = "a-long-enough-test-token-0123456789"


def test_a_daemon_bound_beyond_loopback_takes_any_host_only_with_the_token(
        tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home", {"server": {"token": TOKEN}}, bind="0.0.0.0") as d:
        auth = {"authorization": f"Bearer {TOKEN}"}
        remote = {"host": "memory.lan.example:3850"}
        assert d.http.get("/api/memories", headers={**remote, **auth}).status_code == 200
        resp = d.http.get("/api/memories", headers=remote)
        assert_refused(resp, 421, "forbidden_host")
        resp = d.http.get("/health", headers=remote)  # open path, but not for any name
        assert_refused(resp, 421, "forbidden_host")
        assert d.http.get("/health").status_code == 200  # loopback names stay open
        resp = d.http.get("/api/memories")
        assert_refused(resp, 401, "unauthorized")
        # the token does not make a page's write acceptable
        resp = d.http.post("/api/memory/remember", json={"content": "x"},
                           headers={**remote, **auth, "origin": EVIL})
        assert_refused(resp, 403, "forbidden_origin")


# -- item 4: bounded request size and work ---------------------------------------------------------


def test_a_body_over_the_limit_is_a_413_before_it_is_read(tmp_path: Path) -> None:
    limit = 65536
    with run_daemon(tmp_path / "home", {"server": {"max_body_bytes": limit}}) as d:
        big = json.dumps({"content": "x" * (limit + 10)})
        resp = d.http.post("/api/memory/remember", content=big,
                           headers={"content-type": "application/json"})
        body = assert_refused(resp, 413, "body_too_large")
        assert "server.max_body_bytes" in body["message"] and str(limit) in body["message"]

        def chunks():  # no Content-Length: counted while reading
            for _ in range(20):
                yield b"[" + b"0," * 2000 + b"0]"

        resp = d.http.post("/api/memory/import", content=chunks(),
                           headers={"content-type": "application/json"})
        assert_refused(resp, 413, "body_too_large")
        resp = d.http.post("/mcp", content=big, headers={**MCP_HEADERS,
                                                         "content-type": "application/json"})
        assert_refused(resp, 413, "body_too_large")
        # the daemon is fine afterwards, and a body under the limit passes
        assert d.http.post("/api/memory/remember", json={"content": "small"}).status_code == 201


# -- the helpers, directly -------------------------------------------------------------------------


def test_json_depth_is_measured_outside_strings() -> None:
    assert not json_depth_exceeds(b'{"a": "' + b"[" * 1000 + b'"}', 64)
    assert not json_depth_exceeds(b'{"a": "\\"' + b"[" * 1000 + b'"}', 64)
    assert json_depth_exceeds(b"[" * 65 + b"]" * 65, 64)
    assert not json_depth_exceeds(b"[" * 64 + b"]" * 64, 64)
    assert not json_depth_exceeds(b"[[]]" * 10_000, 64)  # many, but shallow
    assert json_depth_exceeds(b'["\\\\"' + b",[" * 100 + b"]" * 100 + b"]", 64)


def test_origin_and_host_parsing() -> None:
    assert split_host("[::1]:3850") == ("[::1]", 3850)
    assert split_host("LocalHost") == ("localhost", None)
    assert split_host("a:b:c") == ("a:b:c", None)
    assert split_host("host:x1") == ("host:x1", -1)
    assert same_origin("http://127.0.0.1:3850", "127.0.0.1:3850")
    assert same_origin("http://localhost", "localhost:80")
    assert not same_origin("https://localhost", "localhost:80")
    assert not same_origin("http://127.0.0.1:3851", "127.0.0.1:3850")
    assert not same_origin("null", "127.0.0.1:3850")
    assert not same_origin("http://127.0.0.1:3850/path", "127.0.0.1:3850")
