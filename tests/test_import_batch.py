"""Bulk import writes a chunk's derived rows once (`store/write_batch.py`): the context index,
history and jobs it leaves are those of remembering the same memories one after another, on
both stores; and a chunk is still one transaction."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest

from llm_servers import closed_port
from mnemonist.daemon import open_memory
from mnemonist.model.requests import ImportRequest, RememberRequest
from mnemonist.service import importer
from mnemonist.store import context
from pipeline_helpers import wait_for


def _at(minute: int) -> str:
    return f"2026-03-02T10:{minute:02d}:00.000Z"


#: lines already in the store before the import: the import lands before, between and after
BEFORE = [
    {"content": "Alice: the deploy pipeline is green again", "source_id": "chat-1",
     "occurred_at": _at(10)},
    {"content": "Bob: good, the canary goes out at noon", "source_id": "chat-1",
     "occurred_at": _at(20)},
    {"content": "Alice: and the rollback script is tested", "source_id": "chat-1",
     "occurred_at": _at(30)},
    {"content": "Carol: the March budget is approved", "source_id": "chat-2",
     "occurred_at": _at(5)},
]

#: two sources interleaved, out of time order, equal times, a private line (not a line of its
#: source: its own context only), a derived fact, a repeat by another agent (corroborated),
#: a key stated twice (the second supersedes the first), and memories without a source
IMPORTED = [
    {"content": "Bob: the canary metrics look flat", "source_id": "chat-1",
     "occurred_at": _at(25)},
    {"content": "Dana: who owns the budget spreadsheet?", "source_id": "chat-2",
     "occurred_at": _at(6)},
    {"content": "Alice: a first message before everything", "source_id": "chat-1",
     "occurred_at": _at(1)},
    {"content": "Bob: noted, same minute as the canary", "source_id": "chat-1",
     "occurred_at": _at(25)},
    {"content": "Carol: Dana owns it since February", "source_id": "chat-2",
     "occurred_at": _at(7), "agent_id": "carol-agent"},
    {"content": "Alice prefers the rollback script over manual steps", "source_id": "chat-1",
     "occurred_at": _at(26), "why": "extracted-fact"},
    {"content": "Alice: the last word of the day", "source_id": "chat-1",
     "occurred_at": _at(50)},
    # (keys of their own: import's key derived from content and time would be the same)
    {"content": "The staging database is PostgreSQL 16.", "who": "claude-code",
     "idempotency_key": "staging-1"},
    {"content": "The staging database is PostgreSQL 16.", "who": "codex",
     "idempotency_key": "staging-2"},
    {"content": "Deploys go out from the release branch.", "key": "deploy-branch"},
    {"content": "Deploys go out from main since April.", "key": "deploy-branch"},
    {"content": "Erin: a line of a third source", "source_id": "chat-3",
     "occurred_at": _at(40)},
    {"content": "Bob: after the last word", "source_id": "chat-1", "occurred_at": _at(55)},
]


_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NOW = re.compile(r"(?!2026-03-02)\d{4}-\d\d-\d\dT[\d:.]+Z")


def _stable(metadata: str) -> str:
    """Metadata without what differs between two stores: new ids, the time of writing."""
    return _NOW.sub("<now>", _ID.sub("<id>", metadata))


def _rows(conn: Any) -> dict[str, Any]:
    by_seq = {r[0]: r[1] for r in conn.execute("SELECT seq, content FROM memories")}
    by_id = {r[0]: r[1] for r in conn.execute("SELECT id, content FROM memories")}
    contexts = {by_seq[r[0]]: r[1]
                for r in conn.execute("SELECT seq, text FROM memory_context")}
    events: dict[str, list[tuple]] = {}
    for r in conn.execute("SELECT memory_id, event, changed_by, reason, metadata, new_content"
                          " FROM memory_history ORDER BY created_at, rowid"):
        events.setdefault(by_id[r[0]], []).append((*r[1:4], _stable(r[4]), r[5]))
    jobs = sorted((by_id[r[0]], r[1], r[2], r[3]) for r in conn.execute(
        "SELECT memory_id, job_type, status, max_attempts FROM memory_jobs"
        " WHERE memory_id IS NOT NULL"))
    live = sorted(r[0] for r in conn.execute(
        "SELECT content FROM memories WHERE superseded_at IS NULL AND is_deleted = 0"))
    return {"context": contexts, "history": events, "jobs": jobs, "live": live}


#: an LLM is configured (one nothing answers), so that memories get extraction jobs
WITH_LLM = {"memory": {"pipelineV2": {"extraction": {
    "provider": "ollama", "baseUrl": f"http://127.0.0.1:{closed_port()}"}}}}


def _store(home: Path, config: dict[str, Any], write) -> dict[str, Any]:
    with open_memory(home, {"embedding": {"provider": "none"}, **WITH_LLM, **config}) as daemon:
        svc = daemon.service
        for body in BEFORE:
            svc.memories.remember(RememberRequest(**body, project="ops"))
        write(svc)
        return _rows(svc.core.db.reader())


def _requests() -> list[RememberRequest]:
    return [RememberRequest(**body, project="ops") for body in IMPORTED]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_import_leaves_the_rows_of_one_by_one_remembers(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    def one_by_one(svc: Any) -> None:
        for req in _requests():
            svc.memories.remember(req)

    def imported(svc: Any) -> None:
        out = svc.carry.import_memories(ImportRequest(items=_requests()))
        assert out["created"] == len(IMPORTED) - 1  # the repeat is corroborated, not new

    configs: list[dict[str, Any]] = [{}, {}]
    server = request.getfixturevalue("postgres_server") if backend == "postgresql" else None
    if server is not None:
        configs = [{"storage": {"url": server.create_database()}} for _ in range(2)]
    try:
        expected = _store(tmp_path / "a", configs[0], one_by_one)
        got = _store(tmp_path / "b", configs[1], imported)
    finally:
        if server is not None:
            for config in configs:
                server.drop_database(config["storage"]["url"])
    # the cases the lists stand for happened
    ctx = expected["context"]
    assert "Alice: a first message before everything" in ctx["Alice: the deploy pipeline is"
                                                            " green again"]
    assert "Carol: Dana owns it since February" not in ctx["Dana: who owns the budget"
                                                           " spreadsheet?"]  # private
    assert [e[0] for e in expected["history"]["The staging database is PostgreSQL 16."]] == [
        "created", "corroborated"]
    assert "Deploys go out from the release branch." not in expected["live"]
    assert expected["jobs"], "extraction jobs are queued"
    for part in ("context", "history", "jobs", "live"):
        assert got[part] == expected[part], part


def test_a_failed_chunk_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch is flushed inside the chunk's transaction: when the flush fails, the chunk's
    memories are rolled back with it."""
    with open_memory(tmp_path, {"embedding": {"provider": "none"}, **WITH_LLM}) as daemon:
        svc = daemon.service

        def broken(conn: Any, inserted: list) -> None:
            raise RuntimeError("disk full while writing the context rows")

        monkeypatch.setattr(context, "refresh_many", broken)
        with pytest.raises(RuntimeError, match="disk full"):
            svc.carry.import_memories(ImportRequest(items=_requests()))
        conn = svc.core.db.reader()
        for table in ("memories", "memory_history", "memory_jobs", "memory_context"):
            assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table


def test_chunks_cut_short_for_a_waiting_writer_leave_the_same_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With another writer always waiting, every transaction ends after LET_IN_AFTER memories:
    the rows are still those of one-by-one remembers, in as many commits as that implies."""
    monkeypatch.setattr(importer, "LET_IN_AFTER", 2)
    commits: list[int] = []

    def one_by_one(svc: Any) -> None:
        for req in _requests():
            svc.memories.remember(req)

    def imported(svc: Any) -> None:
        monkeypatch.setattr(svc.core.db, "writers_waiting", lambda: 1)
        svc.carry.import_memories(ImportRequest(items=_requests()),
                                  progress=lambda done, total: commits.append(done))

    expected = _store(tmp_path / "a", {}, one_by_one)
    got = _store(tmp_path / "b", {}, imported)
    assert commits == [*range(2, len(IMPORTED), 2), len(IMPORTED)]
    for part in ("context", "history", "jobs", "live"):
        assert got[part] == expected[part], part


def test_a_remember_sent_during_an_import_goes_in_before_it_ends(tmp_path: Path) -> None:
    """A real second thread: once it waits for the write lock, the import's transaction ends
    early and the remember commits between two of the import's memories."""
    items = [RememberRequest(content=f"heron survey line {i} at the marsh") for i in range(300)]
    with open_memory(tmp_path, {"embedding": {"provider": "none"}}) as daemon:
        svc = daemon.service
        inside, result = threading.Event(), {}
        original = svc.memories.insert_or_existing

        def noting(conn: Any, new: Any, *args: Any, **kwargs: Any) -> Any:
            if new.content.startswith("heron survey line 10 "):
                inside.set()  # the import holds the write lock now
                # on a loaded machine the remember's thread may not run before the import's
                # last memory: go on once it waits for the lock, as a client's request would
                assert wait_for(lambda: svc.core.db.writers_waiting() >= 1, timeout=60)
            return original(conn, new, *args, **kwargs)

        svc.memories.insert_or_existing = noting  # type: ignore[method-assign]

        def remember() -> None:
            assert inside.wait(60)
            result["out"] = svc.memories.remember(RememberRequest(
                content="probe: the kiwi is back"))

        thread = threading.Thread(target=remember)
        thread.start()
        # the daemon's own background writers may hold a turn at start: none waits when the
        # import begins, so the turn it gives up is the remember's
        assert wait_for(lambda: svc.core.db.writers_waiting() == 0)
        svc.carry.import_memories(ImportRequest(items=items))
        thread.join(60)
        conn = svc.core.db.reader()
        probe = conn.execute("SELECT seq FROM memories WHERE id = ?",
                             (result["out"]["id"],)).fetchone()[0]
        last = conn.execute("SELECT MAX(seq) FROM memories WHERE content LIKE 'heron%'"
                            ).fetchone()[0]
        assert probe < last  # in between, not after the import's one 300-memory chunk
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 301
        assert wait_for(lambda: svc.core.db.writers_waiting() == 0)
