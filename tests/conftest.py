"""Shared fixtures: a real daemon (uvicorn on a free loopback port) over a temporary home, on
SQLite or on the session's throwaway PostgreSQL.

Both stores: a module marked `pytestmark = pytest.mark.both_stores` runs each of its tests that
starts a daemon (calls `run_daemon`, itself or through a fixture) twice, `[sqlite]` then
`[postgresql]`; `run_daemon` puts every daemon of a `[postgresql]` test on its own new database
(one per home, so a restart finds its memories again), dropped when the test (or, for a
module-scoped daemon, the module) ends. A module-scoped fixture that starts a daemon must take
the `daemon_store` fixture, so that it is started again for the other store; so must one
holding state its tests change (a server counting hits, a directory of files). A test that is
inherently SQLite's (it reads the .db file, a PRAGMA, an old SQLite file) carries
`@pytest.mark.sqlite_only("the reason")` and runs once, on SQLite.
"""

from __future__ import annotations

import inspect
import os
import re
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

from mnemonist.daemon import Daemon
from mnemonist.service import MemoryService
from mnemonist.settings import Paths, load_config
from mnemonist.store.postgres.connection import Row as PgRow
from mnemonist.web import create_app
from speed import mark_speed

#: the store `run_daemon` starts daemons on: "sqlite" or "postgresql" (set by `daemon_store`)
STORES = ("sqlite", "postgresql")
_current = {"store": "sqlite", "server": None}
#: databases made by run_daemon, by owner (the module's, then the running test's): home → URL
_databases: list[dict[str, str]] = []


def current_store() -> str:
    """"sqlite" or "postgresql": what the running test's daemons are on."""
    return str(_current["store"])


def with_store(home: Path, config: dict[str, Any] | None) -> dict[str, Any] | None:
    """`config` with the running test's store added (its `storage.url` on PostgreSQL)."""
    storage = _storage_for(home)
    if storage is None:
        return config
    config = dict(config or {})
    config["storage"] = {**config.get("storage", {}), **storage}
    return config


def _storage_for(home: Path) -> dict[str, Any] | None:
    """The storage settings of a daemon at `home`: none on SQLite; on PostgreSQL the URL of
    this home's database, made at its first start."""
    if _current["store"] != "postgresql":
        return None
    key = str(home.resolve())
    for owner in _databases:
        if key in owner:
            return {"url": owner[key]}
    url = _current["server"].create_database()
    _databases[-1][key] = url
    return {"url": url}


@contextmanager
def _owning_databases() -> Iterator[None]:
    """Databases that run_daemon makes meanwhile are dropped at the end."""
    owner: dict[str, str] = {}
    _databases.append(owner)
    try:
        yield
    finally:
        _databases.remove(owner)
        server = _current["server"]
        for url in owner.values():
            server.drop_database(url)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Row(PgRow):
    """A row read by `LiveDaemon.query`: equal to the tuple of its values, and answering by
    column name too, on either store (the PostgreSQL store's row type, built from names)."""

    def __new__(cls, values: Any, names: list[str]) -> Row:
        row = super().__new__(cls, tuple(values))
        row._names = {}
        for i, name in enumerate(names):  # in column order; a repeated name: its first
            row._names.setdefault(name, i)
        return row


class LiveDaemon:
    def __init__(self, daemon: Daemon, url: str) -> None:
        self.daemon = daemon
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=60)

    @property
    def service(self) -> MemoryService:
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

    def query(self, sql: str, *args: Any) -> list[Row]:
        """Rows of a read, through the daemon's own store (SQLite's SQL, translated on
        PostgreSQL), seeing every committed write."""
        return query(self.daemon.db, sql, *args)

    def write(self, sql: str, *args: Any) -> int:
        """One statement in the daemon's write transaction (what a test arranges behind the
        API's back, such as an old timestamp); rows changed."""
        with self.daemon.db.write_tx() as conn:
            return conn.execute(sql, args).rowcount


@contextmanager
def open_store(home: Path) -> Iterator[Any]:
    """The store of `home` opened on its own (its daemon stopped, or beside it): the SQLite
    file, or on PostgreSQL the home's database. Read it with `query`."""
    storage = _storage_for(home)
    if storage is None:
        from mnemonist.store.db import Database

        db: Any = Database(Paths(home).database)
    else:
        from mnemonist.store.postgres.database import PostgresDatabase

        db = PostgresDatabase(storage["url"], pool_max=2)
    try:
        yield db
    finally:
        db.close()


def query(db: Any, sql: str, *args: Any) -> list[Row]:
    """Rows of a read on a store (`Database` or `PostgresDatabase`)."""
    return [Row(values, list(values.keys())) for values in db.reader().execute(sql, args)]


@contextmanager
def search_settings(live: LiveDaemon, **values: object) -> Iterator[None]:
    """`search.*` settings changed on the running daemon for the block, then put back (what
    the bench's variants do)."""
    cfg = live.service.core.searcher.cfg
    before = {k: getattr(cfg, k) for k in values}
    try:
        for k, v in values.items():
            setattr(cfg, k, v)
        yield
    finally:
        for k, v in before.items():
            setattr(cfg, k, v)


@contextmanager
def run_daemon(home: Path, config: dict[str, Any] | None = None, *,
               bind: str = "127.0.0.1") -> Iterator[LiveDaemon]:
    """Start the real daemon with `config` written to `<home>/agent.yaml`, bound to `bind`
    (reached at 127.0.0.1 either way)."""
    home.mkdir(parents=True, exist_ok=True)
    config = with_store(home, config)
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_stores: the module's daemon tests run on SQLite"
                            " and on PostgreSQL (tests/conftest.py)")
    config.addinivalue_line("markers", "sqlite_only(reason): this test of a both_stores module"
                            " is SQLite's by nature (the reason says why); it runs once")


#: run_daemon(, manual_daemon( (tests/pipeline_helpers.py) or a module's own daemon( helper
_DAEMON_CALL = re.compile(r"\b\w*daemon\(")


def _starts_a_daemon(metafunc: pytest.Metafunc) -> bool:
    """Whether the test, or a fixture it uses, starts a daemon."""
    funcs = [metafunc.function]
    for name in metafunc.fixturenames:
        for fixturedef in metafunc._arg2fixturedefs.get(name, ()):
            funcs.append(fixturedef.func)
    for func in funcs:
        try:
            if _DAEMON_CALL.search(inspect.getsource(func)):
                return True
        except (OSError, TypeError):
            continue
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("both_stores") is None:
        return
    if not _starts_a_daemon(metafunc):
        return
    only = metafunc.definition.get_closest_marker("sqlite_only")
    if only is not None and (not only.args or not str(only.args[0]).strip()):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: sqlite_only needs a reason")
    # a sqlite_only test shares the module's SQLite daemon (same parameter)
    stores = ("sqlite",) if only is not None else STORES
    metafunc.parametrize("daemon_store", stores, indirect=True, scope="module")


@pytest.hookimpl(tryfirst=True)  # before `-m` selects: the e2e / slow marks are set here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A case marked sqlite_only through `pytest.param(..., marks=...)` runs on SQLite only:
    its PostgreSQL twin is deselected (reported as such), never skipped. Every test is marked
    e2e / slow or not (tests/speed.py)."""
    mark_speed(items)
    keep, drop = [], []
    for item in items:
        spec = getattr(item, "callspec", None)
        on_pg = spec is not None and spec.params.get("daemon_store") == "postgresql"
        only = item.get_closest_marker("sqlite_only")
        if on_pg and only is not None:
            if not only.args or not str(only.args[0]).strip():
                raise pytest.UsageError(f"{item.nodeid}: sqlite_only needs a reason")
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session", autouse=True)
def _user_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """HOME is the session's base temporary folder: no test touches the real home, and the
    project folders tests make (under tmp_path) lie in the user's home, where a session's
    working folder may become a memory-file root (docs/files.md)."""
    before = os.environ.get("HOME")
    os.environ["HOME"] = str(tmp_path_factory.getbasetemp())
    yield
    if before is None:
        os.environ.pop("HOME", None)
    else:
        os.environ["HOME"] = before


@pytest.fixture(scope="session", autouse=True)
def _graph_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The local model's saved optimised graph goes to the session's own folder, not the
    user's cache (daemons started as subprocesses inherit the variable)."""
    from mnemonist.providers.embedding.graph_cache import CACHE_ENV

    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("model-cache"))
    yield
    if before is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = before


@pytest.fixture(scope="module", autouse=True)
def daemon_store(request: pytest.FixtureRequest) -> Iterator[str]:
    """The store this module's daemons run on ("sqlite" unless parametrised above); the
    databases of module-scoped daemons are dropped at the end."""
    kind = getattr(request, "param", "sqlite")
    previous = dict(_current)
    _current["store"] = kind
    if kind == "postgresql":
        _current["server"] = request.getfixturevalue("postgres_server")
    try:
        with _owning_databases():
            yield kind
    finally:
        _current.update(previous)


@pytest.fixture(autouse=True)
def _test_databases(daemon_store: str) -> Iterator[None]:
    """The databases of the daemons a test starts itself are dropped when it ends."""
    with _owning_databases():
        yield


@pytest.fixture(scope="module")
def live(daemon_store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
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
