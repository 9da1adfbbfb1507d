"""Session checkpoints: the debounced flush queue (merge, caps), per-session caps, pruning,
secret redaction, digest formatters, the periodic trigger and the /api/checkpoints routes."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from conftest import run_daemon
from mnemonist.model.config import ContinuityConfig
from mnemonist.model.memory import format_ts
from mnemonist.sessions.digest import (
    CheckpointDraft,
    fit,
    format_digest,
    format_periodic_digest,
    format_pre_compaction_digest,
    format_session_end_digest,
    merge,
    recovery_digest,
)
from mnemonist.sessions.queue import CheckpointQueue
from mnemonist.store import sessions as store
from mnemonist.store.db import Database, StorageFault
from mnemonist.store.migrations import migrate

pytestmark = pytest.mark.both_stores

ALNUM = "aB3dE5fG7hJ9kL2mN4pQ6rS8tV0wX1yZ"
ANTHROPIC = "sk-" + "ant-" + "api03-" + ALNUM + ALNUM + "-AA"  # assembled: no literal secret
GITHUB = "gh" + "p_" + ALNUM + "1a2B"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "memories.db")
    migrate(database)
    yield database
    database.close()


def queue(db, clock=None, **cfg) -> CheckpointQueue:
    return CheckpointQueue(db, ContinuityConfig(**cfg), clock=clock or Clock())


def draft(key="s1", trigger="periodic", **fields) -> CheckpointDraft:
    base = {"project": "acme", "project_normalized": "acme", "harness": "claude-code",
            "started_at": format_ts(datetime.now(UTC) - timedelta(minutes=42))}
    return CheckpointDraft(session_key=key, trigger=trigger, **{**base, **fields})


def rows(db, key="s1"):
    return store.list_checkpoints(db.reader(), session_key=key, limit=500)[0]


def test_drafts_within_the_window_merge_into_one_write(db):
    clock = Clock()
    q = queue(db, clock)
    assert q.submit(draft(memory_queries=["q1", "q2"], recent_remembers=["r1"], prompt_count=3,
                          total_prompts=3)) is None
    clock.now += 1.0
    q.submit(draft(trigger="agent", memory_queries=["q2", "q3"], recent_remembers=["r2"],
                   prompt_count=2, total_prompts=5))
    assert q.pending() == 1 and rows(db) == []
    assert q.flush_due(clock.now + 1.0) == []  # the window runs from the first draft: 2.5 s
    written = q.flush_due(clock.now + 1.6)
    assert len(written) == 1 and q.pending() == 0
    (cp,) = rows(db)
    assert cp["trigger"] == "agent"  # the more significant trigger names the merged row
    assert cp["prompt_count"] == 5  # summed
    assert cp["memory_queries"] == ["q1", "q2", "q3"]  # union
    assert cp["recent_remembers"] == ["r1", "r2"]
    assert "5 (5 since the last checkpoint)" in cp["digest"]
    assert q.merged == 1 and q.written == 1


def test_merge_caps_queries_at_20_and_remembers_at_10_keeping_the_newest():
    a = draft(memory_queries=[f"a{i}" for i in range(15)],
              recent_remembers=[f"ra{i}" for i in range(8)], prompt_count=4)
    b = draft(memory_queries=[f"b{i}" for i in range(15)],
              recent_remembers=[f"rb{i}" for i in range(8)], prompt_count=6)
    m = merge(a, b)
    assert len(m.memory_queries) == 20 and m.memory_queries[-1] == "b14"
    assert m.memory_queries[0] == "a10"
    assert len(m.recent_remembers) == 10 and m.recent_remembers[0] == "ra6"
    assert m.prompt_count == 10


def test_sessions_do_not_merge_and_immediate_writes_merge_what_waits(db):
    clock = Clock()
    q = queue(db, clock)
    q.submit(draft("s1", memory_queries=["one"], prompt_count=2))
    q.submit(draft("s2", memory_queries=["other"], prompt_count=1))
    checkpoint_id = q.submit(draft("s1", "pre_compaction", prompt_count=1, files=["a.py (edited)"]),
                             immediate=True)
    assert checkpoint_id is not None
    (cp,) = rows(db, "s1")
    assert cp["id"] == checkpoint_id and cp["trigger"] == "pre_compaction"
    assert cp["prompt_count"] == 3 and cp["memory_queries"] == ["one"]
    assert "a.py (edited)" in cp["digest"]
    assert rows(db, "s2") == [] and q.pending("s2") == 1  # still waiting for its window
    q.flush()
    assert len(rows(db, "s2")) == 1


def test_per_session_cap_deletes_the_oldest(db):
    q = queue(db, max_checkpoints_per_session=3)
    ids = [q.submit(draft(note=f"note {i}"), immediate=True) for i in range(5)]
    q.submit(draft("other"), immediate=True)
    kept = rows(db)
    assert [c["id"] for c in kept] == ids[:1:-1]  # newest first: 4, 3, 2
    assert len(rows(db, "other")) == 1


def test_pruning_hard_deletes_checkpoints_past_retention(db):
    q = queue(db, retention_days=7)
    now = datetime.now(UTC)
    old = q.submit(draft(created_at=format_ts(now - timedelta(days=8))), immediate=True)
    recent = q.submit(draft(created_at=format_ts(now - timedelta(days=6))), immediate=True)
    with db.write_tx() as conn:
        store.create_state(conn, "idle", started_at=format_ts(now - timedelta(days=9)),
                           updated_at=format_ts(now - timedelta(days=9)))
        store.create_state(conn, "live")
        store.record_injected(conn, "idle", ["m1"])
    assert q.prune(now) == 1
    assert [c["id"] for c in rows(db)] == [recent]
    assert store.get_checkpoint(db.reader(), old) is None
    assert store.get_state(db.reader(), "idle") is None
    assert store.session_memories(db.reader(), "idle") == []
    assert store.get_state(db.reader(), "live") is not None


def test_secrets_are_redacted_before_storage(db):
    q = queue(db)
    q.submit(draft(
        recent_prompts=[f"use the key {ANTHROPIC} for the call"],
        memory_queries=[f"token {GITHUB}"],
        recent_remembers=[f"the deploy key is {ANTHROPIC}"],
        note="export DB_PASSWORD=hunter2-but-longer",
        last_reply=f"I set GITHUB_TOKEN={GITHUB}",
    ), immediate=True)
    raw = db.reader().execute(
        "SELECT digest, memory_queries, recent_remembers FROM session_checkpoints"
    ).fetchone()
    blob = " ".join(raw)
    for secret in (ANTHROPIC, GITHUB, "hunter2-but-longer"):
        assert secret not in blob
    assert "[REDACTED:" in raw[0] and "[REDACTED:" in raw[1] and "[REDACTED:" in raw[2]
    assert "use the key" in raw[0]  # only the secret goes


def test_digest_formatters_are_structured_markdown():
    d = draft(prompt_count=3, total_prompts=12, recent_prompts=["fix the login bug"],
              memory_queries=["login bug"], recent_remembers=["sessions expire after 1 h"],
              files=["src/auth.py (edited)"], tools=["Bash: pytest -q"],
              errors=["AssertionError: expected 200"], last_reply="Tests fail on expiry.",
              note="keep the refresh token flow")
    periodic = format_periodic_digest(d)
    for part in ("## Session checkpoint (periodic)", "- Project: acme", "- Prompts: 12 (3 since",
                 "- Duration: 42 min", "### Recent prompts", "- fix the login bug",
                 "### Memory activity", "Recalled for (1): login bug",
                 "Remembered: sessions expire after 1 h"):
        assert part in periodic, part
    assert "Files touched" not in periodic
    pre = format_pre_compaction_digest(d)
    for part in ("before context compaction", "### Session context",
                 "keep the refresh token flow", "### Files touched", "src/auth.py (edited)",
                 "### Last tool actions", "### Unresolved errors", "### Where it stood"):
        assert part in pre, part
    end = format_session_end_digest(d)
    assert "## Session ended" in end and "- Total prompts: 12" in end
    assert format_digest(draft(trigger="session_end")).startswith("## Session ended")
    assert format_digest(draft(trigger="explicit")).startswith("## Session checkpoint (explicit)")


def test_recovery_digest_stays_within_its_budget():
    long = "\n".join(f"- line {i} " + "x" * 80 for i in range(200))
    out = recovery_digest(long, "pre_compaction", format_ts(datetime.now(UTC)), 500)
    assert len(out) <= 500 and out.startswith("# Recovered session state")
    assert out.endswith("(cut to fit)")
    assert fit("short", 100) == "short"


def test_the_background_thread_writes_after_the_debounce(db):
    q = CheckpointQueue(db, ContinuityConfig(), debounce_ms=100)
    q.start()
    try:
        q.submit(draft())
        deadline = time.monotonic() + 30
        while not rows(db) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(rows(db)) == 1
    finally:
        q.stop()


def test_stop_writes_what_still_waits(db):
    q = queue(db)
    q.start()
    q.submit(draft())
    q.stop()
    assert len(rows(db)) == 1


def test_periodic_trigger_every_prompt_interval_and_the_api(tmp_path):
    config = {"memory": {"pipelineV2": {"continuity": {"promptInterval": 3}}}}
    with run_daemon(tmp_path, config) as d:
        for i in range(4):
            r = d.http.post("/api/hooks/user-prompt-submit",
                            json={"session_id": "p1", "cwd": str(tmp_path), "prompt": f"q{i}"})
            assert r.status_code == 200
            assert r.json()["checkpoint"] == ("queued" if i == 2 else None)
        listed = d.http.get("/api/checkpoints", params={"session_key": "p1"}).json()
        assert listed["total"] == 1  # listing flushes what waits
        cp = listed["checkpoints"][0]
        assert cp["trigger"] == "periodic" and cp["prompt_count"] == 3
        assert cp["project"] == tmp_path.name

        # the time interval fires too, once a prompt came since the last checkpoint
        with d.daemon.db.write_tx() as conn:
            store.update_state(conn, "p1", last_checkpoint_at=format_ts(
                datetime.now(UTC) - timedelta(minutes=16)))
        r = d.http.post("/api/hooks/user-prompt-submit",
                        json={"session_id": "p1", "prompt": "later"})
        assert r.json()["checkpoint"] == "queued"

        made = d.http.post("/api/checkpoints", json={
            "session_key": "p1", "note": f"explicit save, key {ANTHROPIC}",
            "memory_queries": ["by hand"]})
        assert made.status_code == 201
        body = made.json()
        assert body["trigger"] == "explicit" and ANTHROPIC not in body["digest"]
        assert "by hand" in body["memory_queries"]
        assert body["prompt_count"] == 2  # the periodic draft still waiting merged into it
        queued = d.http.post("/api/checkpoints", json={"session_key": "p1", "trigger": "agent"})
        assert queued.status_code == 202 and queued.json()["queued"] is True

        latest = d.http.get("/api/checkpoints/latest", params={"session_key": "p1"}).json()
        assert latest["trigger"] == "agent"
        assert latest["recovery"].startswith("# Recovered session state")
        assert len(latest["recovery"]) <= 2000
        by_project = d.http.get("/api/checkpoints", params={"project": tmp_path.name}).json()
        assert by_project["total"] == 3
        assert d.http.get("/api/checkpoints", params={"project": "nope"}).json()["total"] == 0
        missing = d.http.get("/api/checkpoints/latest", params={"session_key": "nope"})
        assert missing.status_code == 404 and missing.json()["error"] == "not_found"
        bad = d.http.get("/api/checkpoints", params={"trigger": "sometimes"})
        assert bad.status_code == 400
        assert d.http.post("/api/checkpoints", json={"note": "no session"}).status_code == 400
        status = d.http.get("/api/status").json()["sessions"]
        assert status["checkpoints"] == 3 and status["checkpoint_queue"]["pending"] == 0


def test_a_flush_the_store_refuses_keeps_every_draft_for_the_next(db):
    """A queued checkpoint was acknowledged to its client: a write the store refuses (read
    only here; on PostgreSQL a server away) leaves it queued, due at once, and the next flush
    writes it."""
    clock = Clock()
    q = queue(db, clock)
    q.submit(draft("s1", memory_queries=["first"]))
    q.submit(draft("s2", memory_queries=["second"]))
    with db._lock:
        db._writer.execute("PRAGMA query_only=ON")
    try:
        with pytest.raises(StorageFault):
            q.flush_due(clock.now + 10)
        assert q.pending() == 2
        q.submit(draft("s1", memory_queries=["later"]))  # merges with the one kept
    finally:
        with db._lock:
            db._writer.execute("PRAGMA query_only=OFF")
    assert len(q.flush_due(clock.now)) == 2 and q.pending() == 0
    (s1,) = rows(db, "s1")
    assert s1["memory_queries"] == ["first", "later"]
    assert len(rows(db, "s2")) == 1
