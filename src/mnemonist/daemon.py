"""The composition root: configuration, database, providers, service and workers.

`open_memory()` gives an application (or a benchmark) the whole daemon in-process;
`serve()` adds the HTTP server on top.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mnemonist.api.boundary import is_loopback, token_problem
from mnemonist.guards.private_files import private_folder
from mnemonist.ingest.documents import DocumentWorker
from mnemonist.ingest.file_watcher import FileWatcher
from mnemonist.ingest.sessions import SessionWorker
from mnemonist.model.config import Config
from mnemonist.pipeline.consolidation_worker import ConsolidationWorker
from mnemonist.pipeline.continuity_score import ContinuityScorer
from mnemonist.pipeline.extract_worker import ExtractionRuntime
from mnemonist.pipeline.hints_worker import HintsRuntime
from mnemonist.pipeline.maintenance import MaintenanceWorker
from mnemonist.pipeline.prose_linker import ProseLinkRuntime
from mnemonist.pipeline.retention import RetentionWorker
from mnemonist.pipeline.sleep_replay_worker import SleepReplayWorker
from mnemonist.pipeline.structural import StructuralRuntime
from mnemonist.pipeline.summary_worker import SummaryWorker, settle_orphans, summary_unavailable
from mnemonist.providers.embedding import create_embedding_provider
from mnemonist.service import MemoryService
from mnemonist.settings import ConfigError, Paths, home_dir, load_config
from mnemonist.store import api_tokens
from mnemonist.store.backend import open_database
from mnemonist.store.home_lock import AlreadyRunning, HomeLock
from mnemonist.store.migrations import SchemaTooNew, migrate

log = logging.getLogger(__name__)


class Daemon:
    """Everything that runs: open with `start()`, close with `stop()` (or use `with`)."""

    def __init__(self, paths: Paths, config: Config, *, workers: bool = True) -> None:
        self.paths = paths
        self.config = config
        # the memory folder is its owner's alone (0700; an older home is tightened now)
        private_folder(paths.memory_dir)
        # one daemon per home, taken before the database is touched (AlreadyRunning otherwise)
        self.lock = HomeLock(paths.memory_dir / "daemon.lock").acquire()
        try:
            self._open(paths, config, workers)
        except BaseException:
            db = getattr(self, "db", None)
            if db is not None:  # e.g. a schema newer than this code: leave the file as it was
                db.close()
            self.lock.release()
            raise

    def _open(self, paths: Paths, config: Config, workers: bool) -> None:
        if config.storage.url and config.sparse.enabled:
            raise ConfigError(
                "sparse.enabled is not available with storage.url (PostgreSQL) yet: the"
                " learned sparse leg keeps its index in each daemon's memory, where other"
                " daemons' writes would not reach it; set sparse.enabled: false")
        self.db = open_database(paths.database, config)
        migrate(self.db)
        self.db.use_context_window(config.search.context_window)
        graph = config.memory.pipeline_v2.graph
        self.db.use_entity_linker(graph.enabled and graph.inline_linker)
        self.provider = create_embedding_provider(config.embedding, home=paths.home)
        self.service = MemoryService(self.db, config, self.provider)
        self.extraction = ExtractionRuntime(self.service.core)
        self.service.pipeline.attach_pipeline(self.extraction)
        self.hints = HintsRuntime(self.db, config, self.extraction.llm)  # shares its budget
        self.service.pipeline.attach_hints(self.hints)
        self.retention = RetentionWorker(self.db, config.memory.retention,
                                         unindex=self.service.core.unindex)
        self.documents = DocumentWorker(self.service.documents, self.db,
                                        self.service.core.try_embed, config)
        self.service.documents.set_document_waker(self.documents.wake)
        self.sessions = SessionWorker(self.service.sessions, self.db, config)
        self.service.sessions.set_session_waker(self.sessions.wake)
        self.summaries = SummaryWorker(self.service.core, self.service.memories.remember,
                                       self.service.pipeline.significance_gate,
                                       self.extraction.llm)  # shares its budget
        self.structural = StructuralRuntime(self.db, config, self.extraction.llm)
        self.prose = ProseLinkRuntime(self.db, config)  # the prose reading of bulk imports
        self.continuity = ContinuityScorer(self.db, config, self.extraction.llm)
        self.service.pipeline.attach_summaries(self.summaries)
        self.maintenance = MaintenanceWorker(self.db, config, retention=self.retention,
                                             vectors=self.service.core)
        self.maintenance.principles_runner = self.service.curation.run_principles
        self.consolidation = ConsolidationWorker(
            functools.partial(self.service.curation.consolidate, background=True),
            config.memory.consolidation)
        self.service.curation.attach_consolidation(self.consolidation)
        self.sleep_replay = SleepReplayWorker(self.db, lambda: self.service.core.index, config)
        # its state in /api/diagnostics/graph
        self.service.graph.attach_sleep_replay(self.sleep_replay)
        self.files = FileWatcher(self.service.files, self.db, config.files)
        self.service.files.attach_file_watcher(self.files)
        self.workers = workers
        self._started = False

    def start(self) -> Daemon:
        if not self._started:
            self.service.start()
            if self.workers:
                self.retention.start()
                self.extraction.start()
                self.hints.start()
                self.structural.start()
                self.prose.start()
                self.continuity.start()
                self.documents.start()
                self.sessions.start()
                pipeline = self.config.memory.pipeline_v2
                if summary_unavailable(pipeline) is None:
                    self.summaries.start()
                else:
                    settle_orphans(self.db, pipeline)
                self.maintenance.start()
                self.consolidation.start()
                self.sleep_replay.start()
                self.files.start()
            self._started = True
        return self

    def stop(self) -> None:
        try:
            self._stop()
        finally:
            self.lock.release()

    def _stop(self) -> None:
        if not self._started:
            self.db.close()
            return
        self._started = False
        self.files.stop()
        self.sleep_replay.stop()
        self.consolidation.stop()
        self.maintenance.stop()
        self.structural.stop()
        self.prose.stop()
        self.continuity.stop()
        self.summaries.stop()
        self.sessions.stop()
        self.documents.stop()
        self.retention.stop()
        self.hints.stop()
        self.extraction.stop()
        self.service.stop()
        if self.provider is not None:
            self.provider.close()
        self.db.close()

    def __enter__(self) -> Daemon:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def open_memory(
    home: str | os.PathLike[str] | None = None, overrides: dict[str, Any] | None = None
) -> Daemon:
    """The daemon in-process, started:
    `with open_memory(path) as d: d.service.memories.remember(...)`."""
    paths = Paths(home_dir(home))
    return Daemon(paths, load_config(paths, overrides)).start()


class ListenError(Exception):
    """The daemon cannot listen where it was asked to (the port is taken, say)."""


def bind_socket(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (listening starts with the server): a taken port is a
    ListenError that says so, before the daemon loads anything."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror} (--host)") from exc
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ListenError(
                f"port {port} on {host} is already in use (another mnemonist? `mnemonist"
                f" status`); choose another with --port, e.g. mnemonist serve --port"
                f" {port + 1}") from exc
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}"
                          " (--host / --port)") from exc
    sock.set_inheritable(True)
    return sock


def listen_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(home: str | None = None, host: str | None = None, port: int | None = None,
          on_listening: Callable[[str], None] | None = None) -> None:
    """Run the daemon until interrupted; `on_listening` gets one line once it answers."""
    import uvicorn

    from mnemonist.web import create_app

    paths = Paths(home_dir(home))
    config = load_config(paths)
    host = host or config.server.host
    port = port or config.server.port
    token = config.server.token or os.environ.get("MNEMONIST_TOKEN", "")
    source = "server.token" if config.server.token else "MNEMONIST_TOKEN"
    problem = token_problem(token)
    if problem:
        raise ConfigError(
            f"{source} {problem}: use a random token of at least 16 characters without"
            f" whitespace (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
        )
    config.server.token = token
    sock = bind_socket(host, port)
    try:
        daemon = Daemon(paths, config).start()
    except (AlreadyRunning, SchemaTooNew) as exc:
        sock.close()
        raise SystemExit(f"mnemonist: {exc}") from None
    except BaseException:
        sock.close()
        raise
    if not is_loopback(host) and not token and not api_tokens.any_made(daemon.db.reader()):
        sock.close()
        daemon.stop()
        raise SystemExit(
            f"refusing to listen on {host} without a token: set server.token in "
            f"{paths.config_file} or MNEMONIST_TOKEN, or make named tokens with `mnemonist"
            f" token add` (loopback needs none)"
        )
    daemon.lock.describe(host=host, port=port)
    app = create_app(daemon, bind_host=host)
    line = (f"mnemonist listening on {listen_url(host, port)} (home {paths.home},"
            f" database {getattr(daemon.db, 'location', paths.database)})")

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and on_listening is not None:
                on_listening(line)

    log.info("%s", line)
    try:
        Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run([sock])
    finally:
        sock.close()
        daemon.stop()


__all__ = ["AlreadyRunning", "Daemon", "ListenError", "Path", "bind_socket", "is_loopback",
           "open_memory", "serve"]
