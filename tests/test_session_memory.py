"""Agent sessions become memory without an LLM: transcripts ended through the real
`mnemonist hook` command on a real daemon become turn memories in the background — recalled,
never twice, only past the significance gate, never read from outside the harness folders —
and with no LLM no summary job waits forever."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import run_daemon
from hook_payloads import MNEMONIST, hook_log, payload, run_hook

pytestmark = pytest.mark.both_stores

FACT = "The staging database moved to the eu-west-2 region last Tuesday"


def line(kind: str, session_id: str, n: int, text: str, cwd: Path,
         minute: int | None = None) -> dict:
    content = text if kind == "user" else [{"type": "text", "text": text}]
    return {"type": kind, "message": {"role": kind, "content": content},
            "timestamp": f"2025-10-01T10:{minute if minute is not None else n:02d}:00.000Z",
            "sessionId": session_id, "cwd": str(cwd), "uuid": f"{session_id}-{n}"}


def write(path: Path, lines: list[dict], mode: str = "w") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as fh:
        fh.writelines(json.dumps(x) + "\n" for x in lines)
    return path


CONVERSATION = [
    ("user", "Can you check where the staging database runs now? The deploy failed."),
    ("assistant", f"I checked the infrastructure notes. {FACT}, so the connection string"
                  " in the deploy config still points at the old region."),
    ("user", "Right, update the deploy config to use the new region then."),
    ("assistant", "Done: the deploy config now uses the eu-west-2 staging endpoint."),
]


@pytest.fixture(scope="module")
def env(daemon_store: str, tmp_path_factory):
    root = tmp_path_factory.mktemp("sessions")
    repo = root / "shop-api"
    (repo / ".git").mkdir(parents=True)
    transcripts = root / "claude" / "projects"
    config = {"hooks": {"transcriptRoots": [str(transcripts)]},
              "sessions": {"delta_prompts": 3}}
    with run_daemon(root / "daemon", config) as d:
        d.remember("The team prefers squash merges on the main branch", project="shop-api")
        yield d, repo, transcripts, root / "hookhome"


def turns_of(live, key: str) -> list[tuple[str, str]]:
    rows = live.service.core.db.reader().execute(
        "SELECT who, content FROM memories WHERE source_type = 'session' AND source_id = ?"
        " AND is_deleted = 0 ORDER BY occurred_at, seq", (key,)).fetchall()
    return [tuple(r) for r in rows]


def end(live, home, key, repo, path, **extra):
    rc, out, _ = run_hook("session-end", payload("SessionEnd", key, repo, path, **extra),
                          url=live.url, home=home)
    assert rc == 0 and out == ""
    assert live.service.sessions.wait_sessions(120)


ONLY_HERE = [  # said in this one session only: other tests of the module share CONVERSATION
    ("user", "Where do the nightly invoice exports end up these days?"),
    ("assistant", "The nightly invoice exports are written to the s3 bucket acme-ledger-archive"
                  " in Frankfurt since the migration."),
    ("user", "Good, link that bucket in the runbook."),
    ("assistant", "Done: the runbook now links the acme-ledger-archive bucket."),
]


def test_a_fact_stated_only_in_a_session_is_recalled_in_the_top_5(env):
    live, repo, transcripts, home = env
    key = "sess-fact"
    path = write(transcripts / "shop" / f"{key}.jsonl",
                 [line(k, key, i, t, repo) for i, (k, t) in enumerate(ONLY_HERE)])
    end(live, home, key, repo, path, reason="prompt_input_exit")
    live.flush()
    query = "which bucket do the nightly invoice exports go to?"
    got = live.recall(query, project="shop-api", limit=5)["results"]
    hit = next(r for r in got if r["content"] == ONLY_HERE[1][1])
    assert hit["source_type"] == "session" and hit["source_id"] == key
    assert hit["who"] == "assistant" and hit["occurred_at"] == "2025-10-01T10:01:00.000Z"
    assert hit["project"] == "shop-api"  # from the working folder's repository
    # expand reaches the turns around it, in order
    expanded = live.recall(query, project="shop-api", limit=5, expand=True)["results"]
    around = next(r for r in expanded if r["id"] == hit["id"])["turns_around"]
    assert [t["content"] for t in around["before"]] == [ONLY_HERE[0][1]]
    assert [t["content"] for t in around["after"]] == [ONLY_HERE[2][1], ONLY_HERE[3][1]]


def test_ending_twice_adds_nothing_and_a_grown_transcript_adds_only_its_new_turns(env):
    live, repo, transcripts, home = env
    key = "sess-grow"
    path = write(transcripts / "shop" / f"{key}.jsonl",
                 [line(k, key, i, t, repo) for i, (k, t) in enumerate(CONVERSATION)])
    end(live, home, key, repo, path)
    first = turns_of(live, key)
    assert len(first) == 4
    end(live, home, key, repo, path)
    assert turns_of(live, key) == first
    # resumed: the same file grows, with a repeated earlier line too
    more = [line("user", key, 4, "Also rotate the staging database password this week.", repo),
            line("assistant", key, 5, "Rotated: the new password is in the vault.", repo),
            line("user", key, 1, CONVERSATION[1][1], repo)]  # same uuid as line 1
    write(path, more, mode="a")
    end(live, home, key, repo, path)
    assert turns_of(live, key) == [*first,
                                   ("user", "Also rotate the staging database password this"
                                            " week."),
                                   ("assistant", "Rotated: the new password is in the vault.")]
    ingest = live.http.get(f"/api/sessions/{key}").json()["ingest"]
    assert ingest["status"] == "indexed" and ingest["turns"] == 6


def test_a_greetings_only_session_adds_no_memory_and_says_why(env):
    live, repo, transcripts, home = env
    key = "sess-hello"
    path = write(transcripts / "shop" / f"{key}.jsonl", [
        line("user", key, 0, "hi!", repo),
        line("assistant", key, 1, "Hello! How can I help you today?", repo),
        line("user", key, 2, "thanks, bye", repo),
        line("assistant", key, 3, "You're welcome! Goodbye.", repo),
    ])
    end(live, home, key, repo, path)
    assert turns_of(live, key) == []
    ingest = live.http.get(f"/api/sessions/{key}").json()["ingest"]
    assert ingest["status"] == "skipped"
    assert "0 substantive turn(s)" in ingest["reason"]
    assert "min_substantive_turns" in ingest["reason"]
    # the transcript itself is still kept
    full = live.http.get(f"/api/sessions/{key}", params={"transcript": "true"}).json()
    assert "How can I help you today?" in full["transcript"]


def test_an_11_mb_transcript_answers_within_the_deadline_and_the_turns_arrive_after(env):
    live, repo, transcripts, home = env
    key = "sess-big"
    dump = "x = 1  # generated file line\n" * 250  # ~7.5 kB of tool output per result
    lines, n = [], 0
    while n < 1500:  # 1,500 × ~7.6 kB ≈ 11.4 MB
        lines.append(line("user", key, n, f"Question {n}: what does module m{n} do?", repo,
                          minute=n % 60))
        lines.append({"type": "user", "uuid": f"{key}-r{n}", "sessionId": key,
                      "timestamp": "2025-10-01T11:00:00.000Z",
                      "message": {"role": "user", "content": [
                          {"type": "tool_result", "tool_use_id": f"t{n}", "content": dump}]}})
        n += 1
    path = write(transcripts / "shop" / f"{key}.jsonl", lines)
    assert path.stat().st_size > 11_000_000
    rc, out, elapsed = run_hook("session-end", payload("SessionEnd", key, repo, path),
                                url=live.url, home=home, timeout_ms=5000)
    assert rc == 0 and out == ""
    assert "no answer within" not in hook_log(home)  # the daemon answered before the deadline
    assert elapsed < 30  # the command itself (generous: a loaded 2-core machine)
    assert live.service.sessions.wait_sessions(300)
    got = turns_of(live, key)
    assert len(got) == n and got[0] == ("user", "Question 0: what does module m0 do?")
    assert not any("generated file line" in text for _, text in got)  # tool output left out


def test_a_transcript_outside_the_harness_folders_is_never_read(env, tmp_path):
    live, repo, _, _home = env
    secret = tmp_path / "notes.jsonl"
    write(secret, [line("user", "x", 0, "the root password is hunter2-and-more words", repo)])
    link_dir = tmp_path / "links"
    link_dir.mkdir()
    (link_dir / "t.jsonl").symlink_to(secret)
    for i, path in enumerate([str(secret), str(link_dir / "t.jsonl"), "~/notes.jsonl",
                              "relative.jsonl"]):
        key = f"sess-refused-{i}"
        resp = live.http.post("/api/hooks/session-end",
                              json={"session_id": key, "transcript_path": path,
                                    "cwd": str(repo)})
        assert resp.status_code == 200, resp.text
        answer = resp.json()["transcript"]
        assert answer["queued"] is False and "transcript_path" in answer["reason"]
        assert live.service.sessions.wait_sessions(60)
        assert turns_of(live, key) == []
    found = live.recall("root password hunter2", expand=True)["results"]
    assert not any("hunter2" in json.dumps(r) for r in found)


def test_the_prompt_hook_never_injects_the_running_sessions_own_turns(env):
    live, repo, transcripts, _home = env
    key = "sess-own"
    path = write(transcripts / "shop" / f"{key}.jsonl", [
        line("user", key, 0, "Remember that the invoice service retries webhooks 7 times.",
             repo),
        line("assistant", key, 1, "Noted: the invoice service retries webhooks 7 times before"
                                  " giving up.", repo)])
    live.http.post("/api/hooks/pre-compaction",
                   json={"session_id": key, "transcript_path": str(path), "cwd": str(repo)})
    assert live.service.sessions.wait_sessions(60)
    live.flush()
    assert len(turns_of(live, key)) == 2
    ask = {"prompt": "how many times does the invoice service retry webhooks?",
           "cwd": str(repo)}
    own = live.http.post("/api/hooks/user-prompt-submit",
                         json={"session_id": key, **ask}).json()
    assert "retries webhooks 7 times" not in own["context"]
    other = live.http.post("/api/hooks/user-prompt-submit",
                           json={"session_id": "sess-other", **ask}).json()
    assert "retries webhooks 7 times" in other["context"]
    assert f"session {key[:8]}" in other["context"]  # labelled with where it came from


def test_prompts_read_the_new_lines_every_few_prompts(env):
    live, repo, transcripts, _ = env
    key = "sess-delta"
    path = write(transcripts / "shop" / f"{key}.jsonl",
                 [line(k, key, i, t, repo) for i, (k, t) in enumerate(CONVERSATION)])
    body = {"session_id": key, "transcript_path": str(path), "cwd": str(repo)}
    answers = [live.http.post("/api/hooks/user-prompt-submit",
                              json={**body, "prompt": f"next step {i}"}).json()
               for i in range(3)]
    assert [a["ingest"] is not None for a in answers] == [False, False, True]  # delta_prompts 3
    assert live.service.sessions.wait_sessions(60)
    assert len(turns_of(live, key)) == 4


def test_sessions_are_listed_and_shown_over_http_and_the_cli(env):
    live, repo, transcripts, home = env
    key = "sess-show"
    path = write(transcripts / "shop" / f"{key}.jsonl",
                 [line(k, key, i, t, repo) for i, (k, t) in enumerate(CONVERSATION)])
    end(live, home, key, repo, path)
    listed = live.http.get("/api/sessions", params={"project": "shop-api"}).json()
    row = next(s for s in listed["sessions"] if s["session_key"] == key)
    assert row["turns"] == 4 and row["ingest_status"] == "indexed" and row["checkpoints"] == 1
    shown = live.http.get(f"/api/sessions/{key}", params={"transcript": "true"}).json()
    assert [t["content"] for t in shown["turns"]] == [t for _, t in CONVERSATION]
    assert shown["checkpoints"][0]["trigger"] == "session_end"
    assert FACT in shown["transcript"]
    assert live.http.get("/api/sessions/no-such-session").status_code == 404
    env_vars = {**os.environ, "MNEMONIST_URL": live.url}
    out = subprocess.run([*MNEMONIST, "sessions", "list", "--project", "shop-api"],
                         capture_output=True, text=True, env=env_vars, timeout=60)
    assert out.returncode == 0 and key in out.stdout and "4 turns" in out.stdout
    out = subprocess.run([*MNEMONIST, "sessions", "show", key], capture_output=True, text=True,
                         env=env_vars, timeout=60)
    assert out.returncode == 0 and "eu-west-2" in out.stdout and "session_end" in out.stdout


def test_with_no_llm_no_summary_job_waits_and_status_says_why(tmp_path):
    transcripts = tmp_path / "projects"
    with run_daemon(tmp_path / "home", {"hooks": {"transcriptRoots": [str(transcripts)]}}) as d:
        # an older version queued summary jobs regardless: one is left from before
        with d.service.core.db.write_tx() as conn:
            conn.execute("INSERT INTO memory_jobs (id, job_type, status, payload, created_at,"
                         " updated_at) VALUES ('old', 'summary', 'pending', '{}', 'x', 'x')")
        for i in range(100):
            key = f"s{i}"
            path = write(transcripts / f"{key}.jsonl",
                         [line(k, key, j, t, tmp_path) for j, (k, t) in enumerate(CONVERSATION)])
            resp = d.http.post("/api/hooks/session-end",
                               json={"session_id": key, "transcript_path": str(path)})
            assert resp.json()["summary"]["queued"] is False
        assert d.service.sessions.wait_sessions(300)
        status = d.http.get("/api/status").json()
        assert status["sessions"]["indexed"] == 100
        assert any("no LLM is configured" in line for line in status["explanation"])
        out = subprocess.run([*MNEMONIST, "status"], capture_output=True, text=True,
                             env={**os.environ, "MNEMONIST_URL": d.url}, timeout=60)
        assert "LLM pipeline idle: no LLM is configured" in out.stdout
        assert "sessions: 100 indexed" in out.stdout
    # at the next start the job left from before completes with the reason
    with run_daemon(tmp_path / "home") as d:
        pending = d.service.core.db.reader().execute(
            "SELECT COUNT(*) FROM memory_jobs WHERE job_type = 'summary' AND status"
            " IN ('pending', 'leased')").fetchone()[0]
        assert pending == 0
        row = d.service.core.db.reader().execute(
            "SELECT status, result FROM memory_jobs WHERE id = 'old'").fetchone()
        assert row["status"] == "completed" and "no LLM is configured" in row["result"]


def test_the_hook_returns_fast_even_while_a_session_is_being_read(env):
    live, repo, transcripts, _home = env
    key = "sess-fast"
    path = write(transcripts / "shop" / f"{key}.jsonl",
                 [line(k, key, i, t, repo) for i, (k, t) in enumerate(CONVERSATION)])
    started = time.monotonic()
    resp = live.http.post("/api/hooks/session-end",
                          json={"session_id": key, "transcript_path": str(path),
                                "cwd": str(repo)})
    assert resp.status_code == 200 and resp.json()["transcript"]["queued"] is True
    assert time.monotonic() - started < 10  # queued, not read, in the request
    assert live.service.sessions.wait_sessions(60)
    assert len(turns_of(live, key)) == 4


def test_with_an_llm_the_session_summary_becomes_facts_through_the_pipeline(tmp_path):
    from llm_servers import FakeLlmServer
    from pipeline_helpers import Brain, decision_json, facts_json, pipeline_config, wait_for

    brain = Brain()
    brain.decide = lambda call: decision_json("add", reason="new")
    summary = ("The staging database runs in eu-west-2.\n"
               "The deploy config must point at the eu-west-2 staging endpoint.")

    def script(call):
        if "<<<SESSION>>>" in call.prompt:
            return summary
        return brain(call)

    brain.extractions["eu-west-2"] = facts_json(
        ("The staging database runs in the eu-west-2 region", 0.95))
    transcripts = tmp_path / "projects"
    key = "sess-llm"
    path = write(transcripts / f"{key}.jsonl",
                 [line(k, key, i, t, tmp_path) for i, (k, t) in enumerate(CONVERSATION)])
    with FakeLlmServer(script=script) as srv:
        config = pipeline_config(srv.url)
        config["hooks"] = {"transcriptRoots": [str(transcripts)]}
        with run_daemon(tmp_path / "home", config) as d:
            answer = d.http.post("/api/hooks/session-end",
                                 json={"session_id": key, "transcript_path": str(path)}).json()
            assert answer["summary"]["queued"] is True
            conn = d.service.core.db.reader()
            done = wait_for(lambda: conn.execute(
                "SELECT status, result FROM memory_jobs WHERE job_type = 'summary'").fetchone()
                ["status"] == "completed", 60)
            assert done
            prompt = next(c for c in srv.generations() if "<<<SESSION>>>" in c.prompt).prompt
            assert FACT in prompt and "user: Can you check" in prompt  # the session's turns
            row = conn.execute("SELECT id, content, type, source_id FROM memories"
                               " WHERE type = 'summary'").fetchone()
            assert " ".join(summary.split()) == row["content"] and row["source_id"] == key
            fact = wait_for(lambda: conn.execute(
                "SELECT content FROM memories WHERE content LIKE 'The staging database runs in"
                " the eu-west-2 region%'").fetchone(), 60)
            assert fact, "the pipeline did not extract the summary's facts"


def test_prompt_injection_labels_memories_file_chunks_and_turns_by_origin(env):
    live, repo, transcripts, _ = env
    (repo / "MEMORY.md").write_text("# Conventions\n\nThe checkout service caches carts in"
                                    " Memcached for 15 minutes.\n")
    key = "sess-labels"
    live.http.post("/api/hooks/session-start", json={"session_id": key, "cwd": str(repo)})
    other = "sess-labels-turns"
    path = write(transcripts / "shop" / f"{other}.jsonl", [
        line("user", other, 0, "How long does the checkout service keep carts in Memcached?",
             repo),
        line("assistant", other, 1, "The checkout service keeps carts in Memcached for 15"
                                    " minutes before they expire.", repo)])
    live.http.post("/api/hooks/session-end",
                   json={"session_id": other, "transcript_path": str(path), "cwd": str(repo)})
    assert live.service.sessions.wait_sessions(60)
    live.flush()
    curated = live.remember("The checkout service Memcached cart cache lasts 15 minutes",
                            project="shop-api")["id"]
    live.flush()
    hooks = live.daemon.config.hooks
    before = hooks.prompt_marginal_relevance
    hooks.prompt_marginal_relevance = 0.0  # every relevant origin, not just the surest one
    try:
        answer = live.http.post("/api/hooks/user-prompt-submit", json={
            "session_id": key, "cwd": str(repo),
            "prompt": "how long are carts cached in Memcached by the checkout service?"}).json()
    finally:
        hooks.prompt_marginal_relevance = before
    context = answer["context"]
    assert f"{repo / 'MEMORY.md'}:1-3" in context  # a memory-file chunk: path and lines
    assert f"session {other[:8]}" in context  # a session turn: its session and time
    assert f"id {curated}]" in context  # a curated memory: its id, for memory_get
