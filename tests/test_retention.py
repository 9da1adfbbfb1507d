"""The retention worker's ordered purge, batch limits and windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from llm_servers import closed_port
from mnemonist.daemon import Daemon
from mnemonist.model.memory import format_ts
from mnemonist.model.requests import DeleteRequest, RecoverRequest, RememberRequest
from mnemonist.service import Conflict, NotFound
from mnemonist.settings import Paths, load_config


def ago(days: float) -> str:
    return format_ts(datetime.now(UTC) - timedelta(days=days))


def make(tmp_path, search=None, **retention) -> Daemon:
    paths = Paths(tmp_path)
    # an LLM is configured (one nothing answers), so that memories get extraction jobs
    llm = {"extraction": {"provider": "ollama", "baseUrl": f"http://127.0.0.1:{closed_port()}"}}
    overrides = {"memory": {"retention": retention, "pipelineV2": llm}, "search": search or {}}
    return Daemon(paths, load_config(paths, overrides)).start()


def count(d: Daemon, sql: str, *args) -> int:
    return d.db.reader().execute(sql, args).fetchone()[0]


def test_sweep_purges_expired_tombstones_history_and_jobs_in_order(tmp_path):
    d = make(tmp_path)
    svc = d.service
    try:
        old = svc.memories.remember(RememberRequest(content="an old tombstone to purge"))
        recent = svc.memories.remember(RememberRequest(content="a recent tombstone to keep"))
        live = svc.memories.remember(RememberRequest(content="a live memory stays"))
        svc.flush()
        for m in (old, recent):
            svc.memories.delete(m["id"], DeleteRequest(reason="cleanup"))
        with d.db.write_tx() as conn:
            conn.execute("UPDATE memories SET deleted_at = ? WHERE id = ?", (ago(31), old["id"]))
            conn.execute("UPDATE memory_history SET created_at = ? WHERE memory_id = ?",
                         (ago(200), live["id"]))
            conn.execute("UPDATE memory_jobs SET status = 'completed', completed_at = ?"
                         " WHERE memory_id = ?", (ago(15), live["id"]))
            conn.execute("UPDATE memory_jobs SET status = 'dead', failed_at = ?"
                         " WHERE memory_id = ?", (ago(31), recent["id"]))
        report = d.retention.sweep()
        assert report.tombstones == 1 and report.embeddings == 1
        assert report.history == 1 and report.completed_jobs == 1 and report.dead_jobs == 1
        assert count(d, "SELECT COUNT(*) FROM memories WHERE id = ?", old["id"]) == 0
        assert count(d, "SELECT COUNT(*) FROM memories") == 2
        # the FTS index follows the table: nothing matches the purged content
        assert count(d, "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'purge'") == 0
        # the purge itself is audited
        events = [e["event"] for e in svc.reads.history(old["id"])["events"]]
        assert events == ["created", "deleted", "purged"]
        with pytest.raises(NotFound):
            svc.memories.recover(old["id"], RecoverRequest(reason="too late"))
    finally:
        d.stop()


def test_embedding_shared_with_a_live_memory_survives_the_purge(tmp_path):
    d = make(tmp_path)
    svc = d.service
    try:
        a = svc.memories.remember(RememberRequest(content="shared words here", project="one"))
        svc.memories.remember(RememberRequest(content="shared words here", project="two"))
        svc.flush()
        svc.memories.delete(a["id"], DeleteRequest(reason="x"))
        with d.db.write_tx() as conn:
            conn.execute("UPDATE memories SET deleted_at = ? WHERE id = ?", (ago(40), a["id"]))
        report = d.retention.sweep()
        assert report.tombstones == 1 and report.embeddings == 0
        assert count(d, "SELECT COUNT(*) FROM embeddings e JOIN memories m"
                        " ON m.content_hash = e.content_hash") == 1
    finally:
        d.stop()


def test_vectors_nothing_points_to_are_swept(tmp_path):
    d = make(tmp_path, search={"context_vector_weight": 0.5})  # context texts get vectors
    svc = d.service
    try:
        for i in range(3):
            svc.memories.remember(RememberRequest(content=f"turn {i} of a chat", source_id="chat"))
        svc.flush()
        vectors = count(d, "SELECT COUNT(*) FROM embeddings")
        assert vectors == 6  # three memories and their three context texts
        # a fourth turn changes the context texts of its neighbours: their old vectors orphan
        svc.memories.remember(RememberRequest(content="turn 3 of a chat", source_id="chat"))
        svc.flush()
        report = d.retention.sweep()
        assert report.orphan_vectors >= 1
        assert count(d, "SELECT COUNT(*) FROM embeddings") == 8  # 4 memories + 4 contexts
    finally:
        d.stop()


def test_each_step_is_capped_by_batch_limit(tmp_path):
    d = make(tmp_path, batchLimit=2)
    svc = d.service
    try:
        ids = [svc.memories.remember(RememberRequest(content=f"tombstone number {i}"))["id"]
               for i in range(5)]
        for i in ids:
            svc.memories.delete(i, DeleteRequest(reason="x"))
        with d.db.write_tx() as conn:
            conn.execute("UPDATE memories SET deleted_at = ?", (ago(60),))
        assert d.retention.sweep().tombstones == 2
        assert d.retention.sweep().tombstones == 2
        assert d.retention.sweep().tombstones == 1
        assert count(d, "SELECT COUNT(*) FROM memories") == 0
    finally:
        d.stop()


def test_recover_inside_the_window_but_not_after(tmp_path):
    d = make(tmp_path, tombstoneDays=7)
    svc = d.service
    try:
        m = svc.memories.remember(RememberRequest(content="recoverable for a week"))
        svc.memories.delete(m["id"], DeleteRequest(reason="x"))
        with d.db.write_tx() as conn:
            conn.execute("UPDATE memories SET deleted_at = ?", (ago(8),))
        with pytest.raises(Conflict) as err:
            svc.memories.recover(m["id"], RecoverRequest(reason="undo"))
        assert err.value.code == "retention_expired"
    finally:
        d.stop()
