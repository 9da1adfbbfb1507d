"""Shared fixtures: a real daemon (uvicorn on a free loopback port) over a temporary home."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import yaml

from mnemonist.api.app import create_app
from mnemonist.daemon import Daemon
from mnemonist.settings import Paths, load_config


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveDaemon:
    def __init__(self, daemon: Daemon, url: str) -> None:
        self.daemon = daemon
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=60)

    @property
    def service(self):
        return self.daemon.service

    def remember(self, content: str, **fields: Any) -> dict[str, Any]:
        resp = self.http.post("/api/memory/remember", json={"content": content, **fields})
        assert resp.status_code in (200, 201), resp.text
        return resp.json()

    def recall(self, query: str, **fields: Any) -> dict[str, Any]:
        resp = self.http.post("/api/memory/recall", json={"query": query, **fields})
        assert resp.status_code == 200, resp.text
        return resp.json()

    def flush(self) -> None:
        assert self.service.flush(120), "background embedding did not finish"


@contextmanager
def run_daemon(home: Path, config: dict[str, Any] | None = None, *,
               bind: str = "127.0.0.1") -> Iterator[LiveDaemon]:
    """Start the real daemon with `config` written to `<home>/agent.yaml`, bound to `bind`
    (reached at 127.0.0.1 either way)."""
    home.mkdir(parents=True, exist_ok=True)
    if config:
        (home / "agent.yaml").write_text(yaml.safe_dump(config))
    paths = Paths(home)
    daemon = Daemon(paths, load_config(paths)).start()
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(daemon, bind_host=bind), host=bind, port=port,
                       log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("daemon did not start")
        time.sleep(0.02)
    live = LiveDaemon(daemon, f"http://127.0.0.1:{port}")
    try:
        yield live
    finally:
        live.http.close()
        server.should_exit = True
        thread.join(10)
        daemon.stop()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    """One real daemon per test module (the embedding model loads once per module)."""
    with run_daemon(tmp_path_factory.mktemp("home")) as d:
        yield d


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """One throwaway PostgreSQL 18 + pgvector for the session (tests/pg.py)."""
    from pg import ThrowawayPostgres

    server = ThrowawayPostgres().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: Any) -> Iterator[str]:
    """A new empty database of the session's PostgreSQL, dropped after the test."""
    url = postgres_server.create_database()
    try:
        yield url
    finally:
        postgres_server.drop_database(url)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """The store a test module's daemon runs on, as agent.yaml settings: the SQLite default,
    then a fresh database of the session's PostgreSQL. Tests that use it run on both."""
    if request.param == "sqlite":
        yield {}
        return
    server = request.getfixturevalue("postgres_server")
    url = server.create_database()
    try:
        yield {"storage": {"url": url}}
    finally:
        server.drop_database(url)
