"""POST /api/memory/remember over real HTTP: create, dedup, idempotency, prefixes, type
inference, credential scrubbing, history, the extraction job and lossless transcripts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from conftest import LiveDaemon, run_daemon
from llm_servers import closed_port

pytestmark = pytest.mark.both_stores

OPENAI_KEY = "sk-proj4Xb9Qz7Lm2Nv8Rt5Wc3Yd6Ke1Jf0"
GITHUB_TOKEN = "ghp_R8sT2uV4wX6yZ8aB0cD2eF4gH6iJ8kL0mN2p"


@contextmanager
def db(live: LiveDaemon) -> Iterator[Any]:
    """The daemon's own reader (either store)."""
    yield live.daemon.db.reader()


def post(live: LiveDaemon, **body: Any):
    return live.http.post("/api/memory/remember", json=body)


def count_rows(live: LiveDaemon, sql: str, *args: Any) -> int:
    with db(live) as conn:
        return conn.execute(sql, args).fetchone()[0]


def test_create_returns_201_with_id(live: LiveDaemon) -> None:
    resp = post(live, content="The staging database runs on port 5433")
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert body["id"] and body["created"] is True and body["deduplicated"] is False
    assert body["content"] == "The staging database runs on port 5433"
    got = live.http.get(f"/api/memory/{body['id']}")
    assert got.status_code == 200
    assert got.json()["content"] == "The staging database runs on port 5433"
    assert got.json()["version"] == 1 and got.json()["is_deleted"] is False


@pytest.mark.parametrize(
    "variant",
    [
        "the RELEASE train leaves every thursday",
        "  The release   train leaves\tevery Thursday  ",
        "The release train leaves every Thursday.",
        "The release train leaves every Thursday!!",
        "The release train leaves every Thursday?;:",
    ],
)
def test_exact_duplicate_variants_return_the_same_id(live: LiveDaemon, variant: str) -> None:
    first = post(live, content="The release train leaves every Thursday")
    assert first.status_code in (200, 201)
    again = post(live, content=variant)
    assert again.status_code == 200, again.text
    body = again.json()
    assert body["id"] == first.json()["id"]
    assert body["deduplicated"] is True and body["created"] is False
    n = count_rows(
        live,
        "SELECT COUNT(*) FROM memories WHERE normalized_content = ?",
        "the release train leaves every thursday",
    )
    assert n == 1


def test_same_content_in_another_project_is_separate(live: LiveDaemon) -> None:
    a = post(live, content="Use pnpm for installs", project="alpha")
    b = post(live, content="Use pnpm for installs", project="beta")
    assert a.status_code == 201 and b.status_code == 201
    assert a.json()["id"] != b.json()["id"]
    assert a.json()["project"] == "alpha" and b.json()["project"] == "beta"
    # and within one project it is still deduplicated
    c = post(live, content="use pnpm for installs.", project="beta")
    assert c.status_code == 200 and c.json()["id"] == b.json()["id"]


def test_idempotency_key_replays_first_result(live: LiveDaemon) -> None:
    first = post(live, content="Deploys happen from the main branch", idempotency_key="req-1")
    assert first.status_code == 201
    replay = post(live, content="Something else entirely", idempotency_key="req-1")
    assert replay.status_code == 200, replay.text
    body = replay.json()
    assert body["id"] == first.json()["id"]
    assert body["content"] == "Deploys happen from the main branch"
    assert body["idempotent_replay"] is True
    assert (
        count_rows(
            live, "SELECT COUNT(*) FROM memories WHERE content = ?", "Something else entirely"
        )
        == 0
    )


def test_idempotency_key_of_a_deduplicated_write_still_replays(live: LiveDaemon) -> None:
    original = post(live, content="The on-call rotation changes on Mondays")
    dup = post(live, content="the on-call rotation changes on mondays.", idempotency_key="req-2")
    assert dup.status_code == 200 and dup.json()["id"] == original.json()["id"]
    replay = post(live, content="A completely different memory", idempotency_key="req-2")
    assert replay.status_code == 200, replay.text
    assert replay.json()["id"] == original.json()["id"]
    assert (
        count_rows(
            live, "SELECT COUNT(*) FROM memories WHERE content = ?", "A completely different memory"
        )
        == 0
    )


def test_critical_prefix_pins_with_full_importance(live: LiveDaemon) -> None:
    body = post(live, content="critical: never force-push to main").json()
    assert body["pinned"] is True and body["importance"] == 1.0
    assert body["content"] == "never force-push to main"


def test_tag_prefix_sets_tags(live: LiveDaemon) -> None:
    body = post(live, content="[Backend, db]: migrations run before deploy").json()
    assert body["tags"] == ["backend", "db"]
    assert body["content"] == "migrations run before deploy"
    assert body["pinned"] is False and body["importance"] == pytest.approx(0.8)


def test_critical_and_tags_combined(live: LiveDaemon) -> None:
    body = post(live, content="critical: [project,auth]: never expose tokens in logs").json()
    assert body["pinned"] is True and body["importance"] == 1.0
    assert body["tags"] == ["project", "auth"]
    assert body["content"] == "never expose tokens in logs"
    stored = live.http.get(f"/api/memory/{body['id']}").json()
    assert stored["tags"] == ["project", "auth"] and stored["pinned"] is True


def test_default_and_explicit_importance(live: LiveDaemon) -> None:
    plain = post(live, content="The coffee machine is on the third floor").json()
    assert plain["importance"] == pytest.approx(0.8)
    explicit = post(live, content="The printer is on the second floor", importance=0.35).json()
    assert explicit["importance"] == pytest.approx(0.35)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Alice prefers dark mode in every editor", "preference"),
        ("We decided to drop Python 3.9 support", "decision"),
        ("Always run the linter before pushing", "rule"),
        ("I learned that sqlite WAL needs shared memory", "learning"),
        ("There is a bug in the date picker on Safari", "issue"),
        ("The office is closed on public holidays", "fact"),
    ],
)
def test_type_inference(live: LiveDaemon, content: str, expected: str) -> None:
    assert post(live, content=content).json()["type"] == expected


def test_explicit_type_wins_over_inference(live: LiveDaemon) -> None:
    body = post(live, content="Bob prefers the window seat", type="fact").json()
    assert body["type"] == "fact"


def test_credentials_are_scrubbed_before_storage(live: LiveDaemon) -> None:
    content = f"The CI uses OPENAI_API_KEY={OPENAI_KEY} and token {GITHUB_TOKEN} for releases"
    resp = post(live, content=content, why=f"copied from env: api_key={OPENAI_KEY}")
    assert resp.status_code == 201, resp.text
    mid = resp.json()["id"]
    stored = live.http.get(f"/api/memory/{mid}").json()
    assert OPENAI_KEY not in stored["content"] and GITHUB_TOKEN not in stored["content"]
    assert "[REDACTED:" in stored["content"]
    assert "The CI uses" in stored["content"]
    assert OPENAI_KEY not in (stored["why"] or "")
    with db(live) as conn:
        for table in ("memories", "memory_history"):
            for row in conn.execute(f"SELECT * FROM {table}"):
                text = " ".join(str(v) for v in tuple(row))
                assert OPENAI_KEY not in text, table
                assert GITHUB_TOKEN not in text, table


def test_history_created_event(live: LiveDaemon) -> None:
    mid = post(live, content="Lunch orders go in the #food channel").json()["id"]
    resp = live.http.get(f"/api/memory/{mid}/history")
    assert resp.status_code == 200
    events = resp.json()["events"]
    assert [e["event"] for e in events] == ["created"]
    assert events[0]["new_content"] == "Lunch orders go in the #food channel"
    assert events[0]["old_content"] is None


def test_extract_job_enqueued_once(tmp_path) -> None:
    """With an LLM configured (here one that is down: the job waits), a memory gets one
    extraction job in its write, and a duplicate none."""
    config = {"memory": {"pipelineV2": {"extraction": {
        "provider": "ollama", "baseUrl": f"http://127.0.0.1:{closed_port()}"}}}}
    with run_daemon(tmp_path, config) as live:
        mid = post(live, content="The marketing site is built with Astro").json()["id"]
        post(live, content="the marketing site is built with astro.")
        with db(live) as conn:
            rows = conn.execute(
                "SELECT job_type, status FROM memory_jobs WHERE memory_id = ?"
                " AND job_type = 'extract'", (mid,)
            ).fetchall()
    assert [tuple(r) for r in rows] == [("extract", "pending")]


def test_no_extract_job_without_an_llm(live: LiveDaemon) -> None:
    """No LLM configured (the default): nothing could run an extraction job, so none is
    queued, and status says why the pipeline is idle."""
    before = count_rows(live, "SELECT COUNT(*) FROM memory_jobs WHERE job_type = 'extract'")
    mid = post(live, content="The billing service is written in Elixir").json()["id"]
    assert count_rows(live, "SELECT COUNT(*) FROM memory_jobs WHERE memory_id = ?", mid) == 0
    assert count_rows(live, "SELECT COUNT(*) FROM memory_jobs WHERE job_type = 'extract'") == (
        before)
    status = live.http.get("/api/status").json()
    assert status["jobs"].get("extract", {}).get("pending", 0) == 0
    assert any(line.startswith("LLM pipeline idle: no LLM is configured")
               and "not queued for extraction" in line for line in status["explanation"])


def test_transcript_is_stored_scrubbed_and_expanded_on_recall(live: LiveDaemon) -> None:
    transcript = (
        "user: how do we rotate the kraken ingest credentials?\n"
        f"assistant: set password={GITHUB_TOKEN} in the vault, then restart kraken ingest"
    )
    resp = post(
        live,
        content="Kraken ingest credentials are rotated through the vault",
        source_id="session-kraken-1",
        transcript=transcript,
    )
    assert resp.status_code == 201, resp.text
    with db(live) as conn:
        row = conn.execute(
            "SELECT content FROM session_transcripts WHERE session_key = ?",
            ("session-kraken-1",),
        ).fetchone()
    assert row is not None
    assert GITHUB_TOKEN not in row["content"] and "rotate the kraken" in row["content"]
    out = live.recall("kraken ingest credentials", expand=True)
    hit = next(r for r in out["results"] if r["id"] == resp.json()["id"])
    assert "rotate the kraken ingest credentials" in hit["transcript"]
    assert GITHUB_TOKEN not in hit["transcript"]
    plain = live.recall("kraken ingest credentials")
    assert all("transcript" not in r for r in plain["results"])


def test_camel_case_keys_are_accepted(live: LiveDaemon) -> None:
    resp = post(
        live,
        content="The nightly backup lands in the cold bucket",
        sourceId="session-camel",
        idempotencyKey="camel-1",
        sourceType="manual",
    )
    assert resp.status_code == 201, resp.text
    stored = live.http.get(f"/api/memory/{resp.json()['id']}").json()
    assert stored["source_id"] == "session-camel"
    assert stored["idempotency_key"] == "camel-1"
    assert stored["source_type"] == "manual"
    replay = post(live, content="other", idempotencyKey="camel-1")
    assert replay.status_code == 200 and replay.json()["id"] == resp.json()["id"]


def test_occurred_at_is_kept(live: LiveDaemon) -> None:
    body = post(
        live, content="The team offsite was in Lisbon", occurred_at="2023-05-04T10:00:00+02:00"
    ).json()
    assert body["occurred_at"] == "2023-05-04T08:00:00.000Z"
