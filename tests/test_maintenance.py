"""The maintenance worker and the repair routes on real databases: diagnostics numbers, each
repair fixing what it claims, observe vs execute, cooldowns and budgets, the halt tracker."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import run_daemon
from embedding_servers import FakeEmbeddingServer
from llm_servers import closed_port
from mnemonist.daemon import Daemon
from mnemonist.model.memory import format_ts
from mnemonist.model.requests import DeleteRequest, RecallRequest, RememberRequest
from mnemonist.settings import Paths, load_config

LONG_AGO = "2000-01-01T00:00:00.000Z"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


#: an LLM is configured (one nothing answers), so that memories get extraction jobs
WITH_LLM = {"extraction": {"provider": "ollama", "baseUrl": f"http://127.0.0.1:{closed_port()}"}}


def make(tmp_path: Path, **pipeline: Any) -> Daemon:
    overrides: dict[str, Any] = {"embedding": {"provider": "none"},
                                 "memory": {"pipelineV2": {**WITH_LLM, **pipeline}}}
    paths = Paths(tmp_path)
    return Daemon(paths, load_config(paths, overrides), workers=False).start()


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = make(tmp_path)
    yield d
    d.stop()


def remember(d: Daemon, n: int, prefix: str = "memory") -> list[dict[str, Any]]:
    return [d.service.memories.remember(RememberRequest(
        content=f"{prefix} number {i} about otters"))
            for i in range(n)]


def sql(d: Daemon, statement: str, *args: Any) -> int:
    with d.db.write_tx() as conn:
        return conn.execute(statement, args).rowcount


def scalar(d: Daemon, statement: str, *args: Any) -> Any:
    return d.db.reader().execute(statement, args).fetchone()[0]


def job_ids(d: Daemon) -> list[str]:
    return [r[0] for r in d.db.reader().execute("SELECT id FROM memory_jobs ORDER BY rowid")]


def set_jobs(d: Daemon, ids: list[str], status: str, **cols: Any) -> None:
    sets = ", ".join(["status = ?", *(f"{k} = ?" for k in cols)])
    for job_id in ids:
        sql(d, f"UPDATE memory_jobs SET {sets} WHERE id = ?", status, *cols.values(), job_id)


def corrupt_fts(d: Daemon, seq: int) -> None:
    """Drop one memory from every keyword index, behind the triggers' back."""
    for fts in ("memories_fts", "memories_ctx_fts"):
        if scalar(d, "SELECT COUNT(*) FROM sqlite_master WHERE name = ?", fts):
            sql(d, f"DELETE FROM {fts} WHERE rowid = ?", seq)


def seq_of(d: Daemon, memory_id: str) -> int:
    return scalar(d, "SELECT seq FROM memories WHERE id = ?", memory_id)


def crafted(d: Daemon) -> list[dict[str, Any]]:
    """10 memories, 4 of them deleted; 10 jobs: 2 dead, 3 completed, 1 stale lease, 1 fresh."""
    mems = remember(d, 10)
    for m in mems[:4]:
        d.service.memories.delete(m["id"], DeleteRequest(reason="crafted"))
    ids = job_ids(d)
    assert len(ids) == 10
    set_jobs(d, ids[:2], "dead", failed_at=format_ts(datetime.now(UTC)))
    set_jobs(d, ids[2:5], "completed", completed_at=format_ts(datetime.now(UTC)))
    set_jobs(d, ids[5:6], "leased", leased_at=LONG_AGO, attempts=1)
    set_jobs(d, ids[6:7], "leased", leased_at=format_ts(datetime.now(UTC)), attempts=1)
    return mems


def test_diagnostics_numbers_on_a_crafted_database(daemon):
    crafted(daemon)
    report = daemon.maintenance.diagnostics()
    q, idx, st = report["queue"], report["index"], report["storage"]
    assert (q["total"], q["dead"], q["completed"], q["leased"], q["pending"]) == (10, 2, 3, 2, 3)
    assert q["dead_rate"] == 0.2 and q["stale_leases"] == 1
    assert q["score"] == 0.0  # 1 - 5 × 0.2 - 0.5 × (1 stale of 2 leased), clamped
    assert (st["total"], st["live"], st["tombstones"], st["tombstone_ratio"]) == (10, 6, 4, 0.4)
    assert st["score"] == pytest.approx(1 - 0.1 / 0.7, abs=1e-4)
    assert idx["memories_total"] == 10 and idx["fts_rows"] == 10 and not idx["fts_mismatch"]
    assert idx["memories_live"] == 6 and idx["score"] == 1.0
    assert report["score"] == pytest.approx(0.35 * 0 + 0.45 * 1 + 0.2 * st["score"], abs=1e-3)
    actions = [r["action"] for r in daemon.maintenance.tick("observe")["recommendations"]]
    assert actions == ["requeueDeadJobs", "releaseStaleLeases", "triggerRetentionSweep"]

    corrupt_fts(daemon, 1)
    report = daemon.maintenance.diagnostics()
    assert report["index"]["fts_rows"] == 9 and report["index"]["fts_mismatch"]
    assert report["index"]["score"] < 1.0
    assert "checkFtsConsistency" in [r["action"] for r in
                                     daemon.maintenance.tick("observe")["recommendations"]]


def test_a_healthy_database_scores_one_and_needs_nothing(daemon):
    remember(daemon, 5)
    cycle = daemon.maintenance.tick("execute")
    assert cycle["score"] == 1.0 and cycle["recommendations"] == [] and cycle["executed"] == []


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory):
    with run_daemon(tmp_path_factory.mktemp("repair-home"),
                    {"embedding": {"provider": "none"},
                     "memory": {"pipelineV2": WITH_LLM}}) as d:
        yield d


def repair(live, name: str, **params: Any) -> dict[str, Any]:
    resp = live.http.post(f"/api/repair/{name}", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_rebuild_fts_restores_recall(live):
    d = live.daemon
    m = live.remember("The zebra crossing near the old railway station is repainted")
    assert live.recall("zebra crossing")["count"] == 1
    corrupt_fts(d, seq_of(d, m["id"]))
    assert live.recall("zebra crossing")["count"] == 0  # the keyword index lost it
    check = repair(live, "check-fts")
    assert not check["result"]["consistent"]
    fts = check["result"]["tables"]["memories_fts"]
    assert fts["indexed"] == fts["rows"] - 1 and fts["integrity"].startswith("failed")
    out = repair(live, "rebuild-fts")
    assert "memories_fts" in out["result"]["rebuilt"]
    assert out["score_after"] > out["score_before"]
    assert live.recall("zebra crossing")["count"] == 1
    assert repair(live, "check-fts")["result"]["consistent"]


def test_requeue_dead_and_release_stale_leases(live):
    d = live.daemon
    live.remember("Dead job owner one")
    live.remember("Stale lease owner two")
    ids = job_ids(d)[-2:]
    set_jobs(d, ids[:1], "dead", attempts=3, failed_at=LONG_AGO)
    set_jobs(d, ids[1:], "leased", attempts=1, leased_at=LONG_AGO)
    diag = live.http.get("/api/diagnostics").json()
    assert diag["queue"]["dead"] >= 1 and diag["queue"]["stale_leases"] >= 1
    assert repair(live, "requeue-dead-jobs")["result"]["requeued"] >= 1
    assert repair(live, "release-stale-leases")["result"]["released"] >= 1
    rows = {r[0]: (r[1], r[2]) for r in d.db.reader().execute(
        "SELECT id, status, attempts FROM memory_jobs WHERE id IN (?, ?)", ids)}
    assert rows[ids[0]] == ("pending", 0)  # a fresh set of attempts
    assert rows[ids[1]] == ("pending", 1)
    diag = live.http.get("/api/diagnostics").json()
    assert diag["queue"]["dead"] == 0 and diag["queue"]["stale_leases"] == 0


def test_retention_sweep_route_purges_expired_tombstones(live):
    d = live.daemon
    m = live.remember("An expired tombstone about herons")
    d.service.memories.delete(m["id"], DeleteRequest(reason="old"))
    sql(d, "UPDATE memories SET deleted_at = ? WHERE id = ?", LONG_AGO, m["id"])
    out = repair(live, "retention-sweep")
    assert out["result"]["tombstones"] >= 1
    assert scalar(d, "SELECT COUNT(*) FROM memories WHERE id = ?", m["id"]) == 0


def test_diagnostics_route_and_unknown_actions(live):
    diag = live.http.get("/api/diagnostics").json()
    assert 0.0 <= diag["score"] <= 1.0
    assert {"queue", "index", "storage", "maintenance", "document_worker"} <= set(diag)
    state = diag["maintenance"]
    assert state["mode"] == "execute" and state["running"] and state["interval_ms"] == 1800000
    assert live.http.post("/api/repair/format-disk").status_code == 404
    assert live.http.post("/api/repair/maintenance-tick", params={"mode": "x"}).status_code == 400
    cycle = repair(live, "maintenance-tick", mode="observe")
    assert cycle["mode"] == "observe" and cycle["executed"] == []


def test_reembed_fills_missing_embeddings_and_the_vector_index(tmp_path):
    with FakeEmbeddingServer(dim=8) as server:
        paths = Paths(tmp_path)
        config = load_config(paths, {
            "embedding": {"provider": "ollama", "model": "fake", "base_url": server.url},
            # the embedder's own sweep waits a minute: the repair is what fixes things here
            "memory": {"pipelineV2": {"embeddingTracker": {"pollMs": 60000}}},
        })
        d = Daemon(paths, config, workers=False).start()
        try:
            mems = remember(d, 6)
            assert d.service.flush(30)
            healthy = d.maintenance.diagnostics()["index"]
            assert healthy["vector_index_size"] == healthy["live_embedded"] == 6
            # lose two vectors from the index and two embeddings from the table
            for m in mems[:2]:
                d.service.core.index.remove(seq_of(d, m["id"]))
            for m in mems[2:4]:
                sql(d, "DELETE FROM embeddings WHERE content_hash = (SELECT content_hash FROM"
                    " memories WHERE id = ?)", m["id"])
                sql(d, "UPDATE memories SET embedding_model = NULL WHERE id = ?", m["id"])
                d.service.core.index.remove(seq_of(d, m["id"]))
            broken = d.maintenance.diagnostics()
            assert broken["index"]["embeddings_missing"] == 2
            assert broken["index"]["vector_index_size"] == 2
            assert broken["index"]["live_embedded"] == 4 and broken["index"]["vector_mismatch"]
            cycle = d.maintenance.tick("execute")
            [done] = [e for e in cycle["executed"] if e["action"] == "reembed"]
            assert done["result"]["missing"] == 2 and done["result"]["not_indexed"] == 2
            assert cycle["delta"] > 0
            fixed = d.maintenance.diagnostics()["index"]
            assert fixed["embeddings_missing"] == 0 and not fixed["vector_mismatch"]
            assert fixed["vector_index_size"] == 6 and fixed["score"] == 1.0
        finally:
            d.stop()


def test_execute_mode_repairs_and_records_the_delta(daemon):
    mems = crafted(daemon)
    corrupt_fts(daemon, seq_of(daemon, mems[5]["id"]))
    cycle = daemon.maintenance.tick("execute")
    done = {e["action"]: e for e in cycle["executed"]}
    assert {"requeueDeadJobs", "releaseStaleLeases", "checkFtsConsistency",
            "triggerRetentionSweep"} <= set(done)
    assert done["checkFtsConsistency"]["result"]["rebuilt"]
    assert cycle["score_after"] > cycle["score"] and cycle["delta"] > 0
    after = daemon.maintenance.diagnostics()
    assert after["queue"]["dead"] == 0 and after["queue"]["stale_leases"] == 0
    assert not after["index"]["fts_mismatch"]
    found = daemon.service.reads.recall(RecallRequest(query="memory number 5 otters"))
    assert mems[5]["id"] in [r["id"] for r in found["results"]]


def test_observe_mode_changes_nothing(tmp_path):
    d = make(tmp_path, autonomous={"maintenanceMode": "observe"})
    try:
        mems = crafted(d)
        corrupt_fts(d, seq_of(d, mems[6]["id"]))

        def snapshot() -> tuple:
            conn = d.db.reader()
            return (
                conn.execute("SELECT id, status, attempts, leased_at FROM memory_jobs"
                             " ORDER BY id").fetchall(),
                conn.execute("SELECT COUNT(*) FROM memories_fts_docsize").fetchone()[0],
                conn.execute("SELECT id, is_deleted FROM memories ORDER BY id").fetchall(),
            )

        before = [tuple(r) if not isinstance(r, int) else r for r in snapshot()]
        cycle = d.maintenance.tick()  # the configured mode
        assert cycle["mode"] == "observe" and len(cycle["recommendations"]) == 4
        assert cycle["executed"] == [] and cycle["delta"] is None
        assert [tuple(r) if not isinstance(r, int) else r for r in snapshot()] == before
    finally:
        d.stop()


def test_cooldowns_and_hourly_budgets(tmp_path):
    d = make(tmp_path, repair={"requeueCooldownMs": 5000, "requeueHourlyBudget": 2})
    clock = Clock()
    d.maintenance.limiter.clock = clock
    try:
        remember(d, 4)
        ids = job_ids(d)

        def kill_and_tick() -> dict[str, Any]:
            set_jobs(d, ids, "dead", failed_at=LONG_AGO)
            cycle = d.maintenance.tick("execute")
            ran = [e["action"] for e in cycle["executed"]]
            skipped = {s["action"]: s["reason"] for s in cycle["skipped"]}
            return {"ran": ran, "skipped": skipped}

        assert kill_and_tick()["ran"] == ["requeueDeadJobs"]
        second = kill_and_tick()  # at once: in the cooldown
        assert second["ran"] == [] and second["skipped"]["requeueDeadJobs"].startswith("cooldown")
        clock.now += 6
        assert kill_and_tick()["ran"] == ["requeueDeadJobs"]
        clock.now += 6
        third = kill_and_tick()  # cooled down, but 2 runs this hour already
        assert third["skipped"]["requeueDeadJobs"] == "hourly budget of 2 used"
        assert scalar(d, "SELECT COUNT(*) FROM memory_jobs WHERE status = 'dead'") == 4
        clock.now += 3600
        assert kill_and_tick()["ran"] == ["requeueDeadJobs"]
        # on demand, the route's path ignores the limiter
        set_jobs(d, ids, "dead", failed_at=LONG_AGO)
        assert d.maintenance.run_action("requeueDeadJobs")["requeued"] == 4
    finally:
        d.stop()


def test_halt_tracker_stops_an_ineffective_repair(tmp_path):
    d = make(tmp_path, repair={"sweepCooldownMs": 10000, "sweepHourlyBudget": 100})
    clock = Clock()
    d.maintenance.limiter.clock = clock
    try:
        mems = remember(d, 10)
        for m in mems[:6]:  # 60 % tombstones, all recent: a sweep purges none of them
            d.service.memories.delete(m["id"], DeleteRequest(reason="recent"))
        for run in range(3):
            cycle = d.maintenance.tick("execute")
            assert [e["action"] for e in cycle["executed"]] == ["triggerRetentionSweep"], run
            assert cycle["delta"] == 0
            clock.now += 11
        assert d.maintenance.halt.halted_actions == ["triggerRetentionSweep"]
        cycle = d.maintenance.tick("execute")
        assert cycle["executed"] == []
        assert cycle["skipped"] == [{"action": "triggerRetentionSweep", "reason": "halted"}]
        assert d.maintenance.state()["halted"] == ["triggerRetentionSweep"]
        # once health is good again (the tombstones expire and are purged) the tracker resets
        ago = format_ts(datetime.now(UTC) - timedelta(days=40))
        sql(d, "UPDATE memories SET deleted_at = ? WHERE is_deleted = 1", ago)
        assert d.maintenance.run_action("triggerRetentionSweep")["tombstones"] == 6
        cycle = d.maintenance.tick("execute")
        assert cycle["recommendations"] == [] and d.maintenance.halt.halted_actions == []
    finally:
        d.stop()


@pytest.mark.parametrize(("autonomous", "flags", "scheduled"), [
    ({"enabled": True}, {}, True),
    ({"enabled": False}, {}, False),
    ({"frozen": True}, {}, False),
    ({}, {"autonomousFrozen": True}, False),
])
def test_the_interval_starts_only_when_enabled_and_not_frozen(tmp_path, autonomous, flags,
                                                              scheduled):
    paths = Paths(tmp_path)
    config = load_config(paths, {"embedding": {"provider": "none"}, "memory": {"pipelineV2": {
        "autonomous": autonomous, **flags}}})
    d = Daemon(paths, config).start()  # with workers
    try:
        assert d.maintenance.running is scheduled
        assert d.maintenance.tick("observe")["score"] == 1.0  # callable either way
    finally:
        d.stop()
    assert not d.maintenance.running
