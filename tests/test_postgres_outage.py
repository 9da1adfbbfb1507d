"""PostgreSQL stopped for 30 s under two daemons, then started again, with writers going all
along: every request answers at once (a 503 `storage_unavailable` without the driver's text
while the server is away, never a 500), `/health` and `mnemonist status` say degraded, every
background worker is alive afterwards, and without a restart the daemons write, recall and
embed again; no acknowledged write is lost.

The server is this test's own (the suite's shared one must stay up for the other tests)."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from conftest import LiveDaemon, run_daemon
from mnemonist.cli.main import cli
from pg import ThrowawayPostgres

OUTAGE_S = 30.0
#: the issue's bound is 2 s; the test allows a loaded 2-core machine more, which still tells
#: an immediate answer from the pool's 30 s wait that this replaced
SLOWEST_ANSWER_S = 5.0
#: threads that come and go on their own (request threads, the old pool closing)
TRANSIENT = ("AnyIO worker thread", "pg-pool-close", "mnemonist-ranker-fit", "Thread-")


class PausablePostgres(ThrowawayPostgres):
    """The throwaway server, stopped and started again on the same data and port."""

    def halt(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        options = (f"-h 127.0.0.1 -p {self.port} -k {self.base / 'run'} -c fsync=off"
                   " -c synchronous_commit=off -c full_page_writes=off"
                   " -c max_connections=300")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "-t", "120", "start")


@pytest.fixture
def server() -> Iterator[PausablePostgres]:
    pg = PausablePostgres().start()
    try:
        yield pg
    finally:
        pg.stop()


class Writer(threading.Thread):
    """Remembers through one daemon's HTTP API until told to stop; every answer kept."""

    def __init__(self, url: str, name: str) -> None:
        super().__init__(daemon=True)
        self.url, self.label = url, name
        self.stop_now = threading.Event()
        self.answers: list[tuple[int, float, dict[str, Any]]] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as http:
            while not self.stop_now.is_set():
                started = time.monotonic()
                resp = http.post("/api/memory/remember", json={
                    "content": f"{self.label} wrote note {uuid.uuid4().hex} about the outage"})
                self.answers.append((resp.status_code, time.monotonic() - started,
                                     resp.json()))
                time.sleep(0.05)

    def acknowledged(self) -> set[str]:
        return {body["id"] for status, _, body in self.answers if status == 201}


def worker_threads() -> Counter[str]:
    return Counter(t.name for t in threading.enumerate()
                   if t.is_alive() and not t.name.startswith(TRANSIENT))


def timed(fn: Any) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    resp = fn()
    return resp, time.monotonic() - started


def wait_for(check: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.25)
    return bool(check())


def unembedded(live: LiveDaemon) -> int:
    model = live.service.core.provider.model_id
    return live.query(
        "SELECT count(*) FROM memories m LEFT JOIN embeddings e"
        " ON e.content_hash = m.content_hash AND e.model = ?"
        " WHERE m.is_deleted = 0 AND e.content_hash IS NULL", model)[0][0]


def test_a_thirty_second_outage_loses_nothing_and_needs_no_restart(
    server: PausablePostgres, tmp_path: Path,
) -> None:
    url = server.create_database()
    config = {"storage": {"url": url}}
    with run_daemon(tmp_path / "a", config) as a, run_daemon(tmp_path / "b", config) as b:
        for live in (a, b):
            live.remember(f"The billing service of {live.url} runs on port 8443")
            live.flush()
        before = worker_threads()
        writers = [Writer(a.url, "alice"), Writer(b.url, "bob")]
        for w in writers:
            w.start()
        time.sleep(1.0)

        server.halt()
        outage_started = time.monotonic()
        seen: list[tuple[str, int, float, str]] = []
        health_during: dict[str, Any] = {}
        cli_during = ""
        while time.monotonic() - outage_started < OUTAGE_S:
            for live in (a, b):
                for path, call in (
                    ("recall", lambda h=live.http: h.post("/api/memory/recall",
                                                          json={"query": "billing port"})),
                    ("get", lambda h=live.http: h.get("/api/memories")),
                    ("health", lambda h=live.http: h.get("/health")),
                ):
                    resp, took = timed(call)
                    seen.append((path, resp.status_code, took, resp.text))
                    if path == "health":
                        health_during = resp.json()
            if not cli_during:
                cli_during = CliRunner().invoke(cli, ["--url", a.url, "status"]).output
            time.sleep(0.5)
        server.resume()

        # without a restart: each daemon writes, recalls and embeds again
        for live in (a, b):
            assert wait_for(lambda h=live.http: h.post(
                "/api/memory/remember", json={"content": f"after the outage {uuid.uuid4()}"}
            ).status_code == 201, 30), "writes did not resume"
        time.sleep(1.0)
        for w in writers:
            w.stop_now.set()
        for w in writers:
            w.join(30)
        for live in (a, b):
            found = live.recall("which port does the billing service run on")
            assert any("8443" in r["content"] for r in found["results"])
            live.flush()
            assert unembedded(live) == 0
            assert wait_for(lambda h=live.http: h.get("/health").json()["status"] == "ok", 30), (
                live.http.get("/health").json()["degraded"],
                live.http.get("/api/status").json()["retrying"])
        after = worker_threads()

        # every request answered at once, none with a 500 or the driver's words
        answers = [(f"remember {w.label}", s, t, str(body)) for w in writers
                   for s, t, body in w.answers] + seen
        statuses = Counter(s for _, s, _, _ in answers)
        assert set(statuses) <= {200, 201, 503}, statuses
        assert statuses[503] > 0, "the outage was never seen"
        slowest = max(t for _, _, t, _ in answers)
        assert slowest < SLOWEST_ANSWER_S, sorted(answers, key=lambda x: -x[2])[:3]
        for what, status, _, text in answers:
            if status == 503:
                assert "storage_unavailable" in text, (what, text)
                for leak in ("psycopg", "Connection refused", "127.0.0.1", "Traceback"):
                    assert leak not in text, (what, text)

        # /health and status said so during the outage
        assert health_during["status"] == "degraded"
        assert "storage_unavailable" in health_during["degraded"]
        assert health_during["database"] == "unavailable"
        assert "storage_unavailable" in cli_during, cli_during

        # every worker thread that ran before runs after
        missing = before - after
        assert not missing, f"threads gone after the outage: {dict(missing)}"

        # no acknowledged write lost, on either daemon
        stored = {row[0] for row in a.query("SELECT id FROM memories")}
        for w in writers:
            assert w.acknowledged(), f"{w.label} never got a write through"
            assert w.acknowledged() <= stored, w.acknowledged() - stored


def test_a_quick_restart_is_a_read_on_a_fresh_connection_and_at_most_one_503(
    server: PausablePostgres, tmp_path: Path,
) -> None:
    """Every pooled connection dies with a restart: a read is asked again on a new pool once
    the server answers (reads are safe to repeat), a write in flight is a 503 at worst (it may
    not be repeated blindly), and the next write goes through."""
    url = server.create_database()
    with run_daemon(tmp_path / "a", {"storage": {"url": url}}) as a:
        a.remember("The cache cluster lives in eu-west-2")
        a.flush()
        server.halt()
        server.resume()
        found = a.http.post("/api/memory/recall", json={"query": "where is the cache cluster"})
        assert found.status_code == 200, found.text
        assert "eu-west-2" in found.json()["results"][0]["content"]
        first = a.http.post("/api/memory/remember", json={"content": "Restart one"})
        assert first.status_code in (201, 503), first.text
        second = a.http.post("/api/memory/remember", json={"content": "Restart two"})
        assert second.status_code == 201, second.text
        assert a.http.get("/health").json()["database"] == "ok"
