"""A full disk and a read-only database are no silent 500s: writes answer 507 `storage_full` /
503 `storage_read_only` and write nothing, `/health`, `/api/status` and `mnemonist status` say
so, and the next successful write clears it. The faults are SQLite's own: a page limit the
database cannot grow past (SQLITE_FULL) and a query-only writer (SQLITE_READONLY)."""

from __future__ import annotations

import errno
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import LiveDaemon
from mnemonist.cli.main import cli


def writer_pragma(live: LiveDaemon, pragma: str) -> Any:
    db = live.daemon.db
    with db._lock:  # the one writer connection, between transactions (each test undoes it)
        return db._writer.execute(f"PRAGMA {pragma}").fetchone()


@contextmanager
def read_only(live: LiveDaemon) -> Iterator[None]:
    writer_pragma(live, "query_only=ON")
    try:
        yield
    finally:
        writer_pragma(live, "query_only=OFF")


@contextmanager
def disk_full(live: LiveDaemon) -> Iterator[None]:
    pages = writer_pragma(live, "page_count")[0]
    writer_pragma(live, f"max_page_count={pages}")
    try:
        yield
    finally:
        writer_pragma(live, "max_page_count=4294967294")


def health(live: LiveDaemon) -> dict[str, Any]:
    resp = live.http.get("/health")
    assert resp.status_code == 200
    return resp.json()


def cli_status(live: LiveDaemon) -> str:
    out = CliRunner().invoke(cli, ["--url", live.url, "status"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.output


def count(live: LiveDaemon) -> int:
    return live.http.get("/api/memories").json()["total"]


@pytest.mark.parametrize(("fault", "status", "code"), [
    (read_only, 503, "storage_read_only"),
    (disk_full, 507, "storage_full"),
])
def test_storage_faults_are_answered_and_shown_until_a_write_succeeds(
        live: LiveDaemon, fault: Any, status: int, code: str) -> None:
    mid = live.remember(f"A memory written before {code}")["id"]
    # the background writers (its vector) done first: a small write of theirs could still fit
    # the full database and, committing, rightly clear the state the test looks at
    assert live.daemon.service.flush(timeout=60)
    assert health(live)["degraded"] == []
    before = count(live)
    with fault(live):
        big = "The disk fills up with this memory. " * 2500
        resp = live.http.post("/api/memory/remember", json={"content": big})
        assert resp.status_code == status, resp.text
        body = resp.json()
        assert body["error"] == code and "nothing was written" in body["message"]
        resp = live.http.patch(f"/api/memory/{mid}", json={"content": big, "reason": "grow"})
        assert resp.status_code == status and resp.json()["error"] == code
        shown = health(live)
        assert shown["status"] == "degraded" and code in shown["degraded"]
        words = "the disk is full" if code == "storage_full" else "the database is read-only"
        assert any(words in p for p in shown["problems"])  # in words, not only a code
        assert shown["database"] == "ok"  # reads still work
        assert code in live.http.get("/api/status").json()["degraded"]
        assert code in cli_status(live) and words in cli_status(live)
        assert live.http.get(f"/api/memory/{mid}").json()["version"] == 1
    assert count(live) == before
    # the storage is back: the next write succeeds and clears the state
    assert live.http.post("/api/memory/remember",
                          json={"content": f"written after {code}"}).status_code == 201
    after = health(live)  # one answer checked (two would differ in uptime_s)
    assert code not in after["degraded"]
    # a background worker that met the fault (the access counts, a job worker) says so as
    # `worker_retrying` until its next try works: within its backoff, at most 3 s
    deadline = time.monotonic() + 60
    while after["degraded"] and time.monotonic() < deadline:
        assert after["degraded"] == ["worker_retrying"], after
        time.sleep(0.2)
        after = health(live)
    assert (after["status"], after["degraded"], after["retrying"]) == ("ok", [], {})
    assert "degraded: nothing" in cli_status(live)


def test_mcp_tools_name_the_storage_fault(live: LiveDaemon) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "memory_store", "arguments": {"content": "via MCP"}}}
    with read_only(live):
        resp = live.http.post("/mcp", json=call, headers=headers)
    assert resp.status_code == 200, resp.text
    result = resp.json()["result"]
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"])["error"] == "storage_read_only"


def test_a_full_disk_outside_the_database_is_a_507_too(
        live: LiveDaemon, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_space(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(live.daemon.service.reads, "recall", no_space)
    resp = live.http.post("/api/memory/recall", json={"query": "anything"})
    assert resp.status_code == 507 and resp.json()["error"] == "storage_full"
