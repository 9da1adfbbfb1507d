"""The invariants of DESIGN.md that the daemon foundation touches, each proven for real."""

from __future__ import annotations

import sqlite3
import time

import pytest

from conftest import run_daemon
from embedding_servers import FakeEmbeddingServer
from llm_servers import closed_port
from mnemonist.daemon import Daemon
from mnemonist.guards import write_tx as txguard
from mnemonist.model.requests import (
    DeleteRequest,
    MemoryPatch,
    RecallRequest,
    RecoverRequest,
    RememberRequest,
)
from mnemonist.settings import Paths, load_config
from mnemonist.store import history
from mnemonist.store.migrations import MIGRATIONS, migrate


def open_daemon(tmp_path, overrides=None) -> Daemon:
    paths = Paths(tmp_path)
    return Daemon(paths, load_config(paths, overrides)).start()


def wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_no_provider_call_inside_the_write_lock(tmp_path):
    d = open_daemon(tmp_path)
    calls: list[bool] = []
    real_embed = d.provider.embed

    def recording_embed(texts):
        calls.append(txguard.in_write_tx())
        return real_embed(texts)

    d.provider.embed = recording_embed
    try:
        svc = d.service
        first = svc.memories.remember(RememberRequest(
            content="The staging database runs PostgreSQL 16"))
        svc.flush()
        svc.memories.patch(first["id"], MemoryPatch(
            content="The staging database runs PostgreSQL 17",
            reason="upgrade"))
        svc.reads.recall(RecallRequest(query="which postgres version is on staging"))
        svc.memories.delete(first["id"], DeleteRequest(reason="test"))
        svc.memories.recover(first["id"], RecoverRequest(reason="test"))
        svc.flush()
    finally:
        d.stop()
    assert len(calls) >= 3  # background embed, re-embed on modify, query embedding
    assert not any(calls), "an embedding call ran while the write lock was held"


def test_provider_refuses_to_run_inside_a_write_transaction(tmp_path):
    d = open_daemon(tmp_path)
    try:
        with pytest.raises(txguard.WriteLockViolation), d.db.write_tx():
            d.provider.embed(["inside the lock"])
    finally:
        d.stop()


def test_history_is_written_in_the_same_transaction(tmp_path, monkeypatch):
    # an LLM is configured (one that is down), so a memory's extraction job is written too
    d = open_daemon(tmp_path, {"memory": {"pipelineV2": {"extraction": {
        "provider": "ollama", "baseUrl": f"http://127.0.0.1:{closed_port()}"}}}})
    try:
        svc = d.service
        kept = svc.memories.remember(RememberRequest(
            content="A memory that exists before the fault"))

        def broken(*args, **kwargs):
            raise RuntimeError("disk full while writing history")

        monkeypatch.setattr(history, "append", broken)
        with pytest.raises(RuntimeError):
            svc.memories.remember(RememberRequest(
                content="This write must not land without history"))
        with pytest.raises(RuntimeError):
            svc.memories.patch(kept["id"], MemoryPatch(
                content="changed without history", reason="x"))
        with pytest.raises(RuntimeError):
            svc.memories.delete(kept["id"], DeleteRequest(reason="x"))
        monkeypatch.undo()
        conn = d.db.reader()
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 1
        row = conn.execute("SELECT content, version, is_deleted FROM memories").fetchone()
        assert tuple(row) == ("A memory that exists before the fault", 1, 0)
        assert conn.execute("SELECT COUNT(*) FROM memory_history").fetchone()[0] == 1
        assert conn.execute("SELECT COUNT(*) FROM memory_jobs").fetchone()[0] == 1
    finally:
        d.stop()


def embedding_config(url: str, model: str = "fake-embed", dims: int = 8) -> dict:
    return {"embedding": {"provider": "openai", "base_url": url, "model": model,
                          "dimensions": dims, "timeout_ms": 2000}}


def test_embedder_outage_keeps_the_write_keyword_searchable_and_embeds_later(tmp_path):
    with FakeEmbeddingServer(dim=8) as srv:
        srv.fail_status, srv.fail_body = 503, "model is loading"
        config = embedding_config(srv.url)
        config["memory"] = {"pipelineV2": {"embeddingTracker": {"pollMs": 1000},
                                           "enabled": False}}  # no LLM here: not degraded
        with run_daemon(tmp_path, config) as live:
            made = live.remember("Quarterly invoices are exported to the finance bucket")
            assert made["created"]
            out = live.recall("finance invoices export")
            assert [r["id"] for r in out["results"]] == [made["id"]]
            assert out["method"] == "keyword"
            assert "query_embedding_failed" in out["degraded"]
            assert wait_for(lambda: "embedding_provider_unavailable"
                            in live.http.get("/api/status").json()["degraded"])
            assert live.http.get("/health").json()["status"] == "degraded"

            srv.fail_status = None  # the provider comes back
            assert wait_for(
                lambda: live.http.get("/api/status").json()["embeddings"]["coverage"] == 1.0,
                timeout=90,
            )
            out = live.recall("finance invoices export")
            assert out["method"] == "hybrid"
            assert out["results"][0]["id"] == made["id"]
            assert live.http.get("/health").json()["status"] == "ok"


def test_model_switch_reembeds_and_never_mixes_vectors(tmp_path):
    with FakeEmbeddingServer(dim=8) as srv8, FakeEmbeddingServer(dim=16) as srv16:
        with run_daemon(tmp_path, embedding_config(srv8.url, "model-a", 8)) as live:
            for text in ("alpha notes on the parser", "beta notes on the lexer",
                         "gamma notes on codegen"):
                live.remember(text)
            live.flush()
            assert live.service.core.index.dimensions == 8
        with run_daemon(tmp_path, embedding_config(srv16.url, "model-b", 16)) as live:
            live.flush()
            status = live.http.get("/api/status").json()
            assert status["embeddings"]["embedded"] == 3
            assert status["vector_index"] == {"size": 3, "dimensions": 16}
            conn = sqlite3.connect(live.daemon.paths.database)
            models = {r[0] for r in conn.execute("SELECT model FROM embeddings")}
            dims = {r[0] for r in conn.execute("SELECT dimensions FROM embeddings")}
            conn.close()
            assert models == {"openai/model-b"} and dims == {16}


def test_restart_rebuilds_the_vector_index_without_reembedding(tmp_path):
    with run_daemon(tmp_path) as live:
        made = live.remember("We adopted a golden retriever puppy last spring")
        live.flush()
    with run_daemon(tmp_path) as live:
        assert len(live.service.core.index) == 1
        out = live.recall("which dog did they get")
        assert out["results"][0]["id"] == made["id"]
        assert out["results"][0]["source"] in ("vector", "hybrid")
        assert live.service.core.embedder.stats.processed == 0


def test_fts_trigger_fires_only_when_content_changes(tmp_path):
    d = open_daemon(tmp_path)
    try:
        d.service.memories.remember(RememberRequest(content="tracked for trigger behaviour"))
        conn = sqlite3.connect(d.paths.database)
        before = conn.total_changes
        conn.execute("UPDATE memories SET access_count = access_count + 1, last_accessed = 'x'")
        assert conn.total_changes - before == 1  # no FTS rows were touched by a trigger
        before = conn.total_changes
        conn.execute("UPDATE memories SET content = 'new words entirely'")
        assert conn.total_changes - before > 1  # delete + insert in memories_fts
        conn.commit()
        hits = conn.execute(
            "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'entirely'"
        ).fetchone()[0]
        conn.close()
        assert hits == 1
    finally:
        d.stop()


def test_migrations_are_numbered_and_idempotent(tmp_path):
    d = open_daemon(tmp_path)
    try:
        assert migrate(d.db) == []
        versions = [r[0] for r in d.db.reader().execute(
            "SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == [m.version for m in MIGRATIONS]
        tables = {r[0] for r in d.db.reader().execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")}
        for name in ("memories", "memories_fts", "embeddings", "memory_history", "memory_jobs",
                     "session_transcripts", "memories_ai", "memories_ad", "memories_au"):
            assert name in tables
    finally:
        d.stop()
