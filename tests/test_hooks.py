"""Harness hooks end to end: `mnemonist hook <event>` fed realistic Claude Code payloads (a
real JSONL transcript included) against a running daemon; what it prints and what it stores;
and that a daemon that is down or slow, or bad stdin, never blocks the agent."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import free_port, run_daemon
from hook_payloads import (
    FAKE_KEY,
    MNEMONIST,
    hook_log,
    payload,
    run_hook,
    write_transcript,
)
from mnemonist.model.requests import RememberRequest
from mnemonist.sessions.reader import TranscriptRefused, read_tail, resolve
from mnemonist.sessions.transcript import flatten_transcript
from mnemonist.store import sessions as store

pytestmark = pytest.mark.both_stores

HOOKS = {"hooks": {"sessionStartBudgetChars": 1500, "promptMaxMemories": 2,
                   "promptBudgetChars": 600}}


@pytest.fixture(scope="module")
def env(daemon_store: str, tmp_path_factory):
    """A daemon with seeded memories, a git repository `acme-api` and a hook home."""
    root = tmp_path_factory.mktemp("hooks")
    repo = root / "acme-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    roots = {"transcriptRoots": [str(tmp_path_factory.getbasetemp())]}
    with run_daemon(root / "daemon", {"hooks": HOOKS["hooks"] | roots}) as d:
        d.remember("critical: never force-push to the main branch")
        d.remember("We decided to use PostgreSQL 16 for the acme-api database", type="decision",
                   project="acme-api")
        d.remember("The acme-api service deploys to Fly.io with blue-green releases",
                   project="acme-api")
        d.remember("Rate limiting in acme-api uses a token bucket kept in Redis",
                   project="acme-api")
        d.remember("The billing service uses Stripe webhooks for invoices", project="billing")
        for i, what in enumerate(("pods", "ingress", "helm charts", "node pools", "secrets")):
            d.remember(f"Kubernetes {what}: the cluster setup note number {i}")
        d.remember("The office coffee machine is on the third floor")
        d.flush()
        yield d, repo, root / "hookhome"


def ids_of(live, *contents: str) -> list[str]:
    out = []
    for text in contents:
        res = live.recall(text, limit=1)["results"]
        out.append(res[0]["id"])
    return out


def context_of(stdout: str, event: str) -> str:
    answer = json.loads(stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    return answer["hookSpecificOutput"]["additionalContext"]


def test_session_start_injects_pinned_and_project_memories_within_budget(env):
    live, repo, home = env
    body = payload("SessionStart", "start-1", repo / "src", source="startup",
                   model="claude-sonnet-4-5")
    rc, out, _ = run_hook("session-start", body, url=live.url, home=home)
    assert rc == 0
    ctx = context_of(out, "SessionStart")
    assert len(ctx) <= 1500
    assert "never force-push to the main branch" in ctx and "## Pinned" in ctx
    assert "PostgreSQL 16" in ctx and "## Decisions and rules" in ctx
    assert "token bucket" in ctx and "Project acme-api" in ctx
    assert "Stripe" not in ctx  # another project's memory
    received = store.session_memories(live.daemon.db.reader(), "start-1")
    injected = {r["memory_id"] for r in received if r["was_injected"]}
    assert injected >= set(ids_of(  # other tests of this module may add acme-api memories
        live, "never force-push", "PostgreSQL 16 database", "token bucket Redis",
        "deploys to Fly.io blue-green"))
    for memory_id in injected:  # only this project's memories and memories of no project
        assert live.http.get(f"/api/memory/{memory_id}").json()["project"] in (None, "acme-api")
    assert [r["rank"] for r in received] == list(range(1, len(received) + 1))

    # a tight budget keeps the block within it, in priority order
    live.daemon.config.hooks.session_start_budget_chars = 420
    try:
        tight = live.http.post("/api/hooks/session-start", json=body | {"session_id": "start-2"})
        text = tight.json()["context"]
        assert 0 < len(text) <= 420 and "force-push" in text and "Fly.io" not in text
    finally:
        live.daemon.config.hooks.session_start_budget_chars = 1500


def test_prompt_submit_injects_above_threshold_never_repeats_and_respects_n(env):
    live, repo, home = env
    key = "prompt-1"
    run_hook("session-start", payload("SessionStart", key, repo, source="startup"),
             url=live.url, home=home)
    ask = payload("UserPromptSubmit", key, repo, prompt="what are the office coffee options?")
    rc, out, _ = run_hook("user-prompt-submit", ask, url=live.url, home=home)
    assert rc == 0
    ctx = context_of(out, "UserPromptSubmit")
    assert "coffee machine is on the third floor" in ctx

    # the same prompt again: nothing new to give, so nothing is printed
    rc, out, _ = run_hook("user-prompt-submit", ask, url=live.url, home=home)
    assert rc == 0 and out == ""

    # unrelated to anything stored: below the threshold, nothing printed
    far = payload("UserPromptSubmit", key, repo, prompt="translate bonjour into spanish")
    rc, out, _ = run_hook("user-prompt-submit", far, url=live.url, home=home)
    assert rc == 0 and out == ""

    # five related memories: as many as have a real chance of helping, at most
    # promptMaxMemories (2), within the budget
    k8s = payload("UserPromptSubmit", key, repo, prompt="kubernetes cluster setup notes")
    answer = live.http.post("/api/hooks/user-prompt-submit", json=k8s).json()
    given = len(answer["memories"])
    assert 1 <= given <= 2 and len(answer["context"]) <= 600
    assert answer["context"].count("the cluster setup note") == given
    again = live.http.post("/api/hooks/user-prompt-submit", json=k8s).json()
    assert len(again["memories"]) <= 2  # only what is still relevant enough, never a repeat
    assert not set(again["memories"]) & set(answer["memories"])

    # the best injected memory reached promptMinRelevance; hits were counted
    hooks = live.daemon.config.hooks
    results = live.recall("kubernetes cluster setup notes", limit=20)["results"]
    relevance = {r["id"]: r["relevance"] for r in results}
    assert max(relevance[m] for m in answer["memories"]) >= hooks.prompt_min_relevance
    rows = {r["memory_id"]: r for r in store.session_memories(live.daemon.db.reader(), key)}
    assert all(rows[m]["was_injected"] == 1 for m in answer["memories"])
    assert max(r["fts_hit_count"] for r in rows.values()) >= 2
    state = store.get_state(live.daemon.db.reader(), key)
    assert state["prompt_count"] == 5 and state["project"] == "acme-api"

    # a threshold nobody reaches injects nothing
    live.daemon.config.hooks.prompt_min_score = 0.99
    try:
        strict = payload("UserPromptSubmit", "prompt-2", repo, prompt="coffee machine floor")
        assert live.http.post("/api/hooks/user-prompt-submit",
                              json=strict).json()["memories"] == []
    finally:
        live.daemon.config.hooks.prompt_min_score = 0.45


def test_plain_text_format_for_other_harnesses(env):
    live, repo, home = env
    ask = payload("UserPromptSubmit", "text-1", repo, prompt="where is the coffee machine?")
    rc, out, _ = run_hook("user-prompt-submit", ask, url=live.url, home=home,
                          extra_args=("--format", "text", "--harness", "codex"))
    assert rc == 0 and out.startswith("# Relevant memories (mnemonist)")
    assert store.get_state(live.daemon.db.reader(), "text-1")["harness"] == "codex"


def test_pre_compaction_writes_a_checkpoint_and_prints_instructions(env, tmp_path):
    live, repo, home = env
    transcript = write_transcript(tmp_path / "pc-1.jsonl", "pc-1", repo)
    body = payload("PreCompact", "pc-1", repo, transcript, trigger="auto",
                   custom_instructions="")
    rc, out, _ = run_hook("pre-compact", body, url=live.url, home=home)
    assert rc == 0
    assert "saved a checkpoint" in out and "When summarising, keep" in out
    assert "login.py" in out
    cp = live.http.get("/api/checkpoints/latest", params={"session_key": "pc-1"}).json()
    assert cp["trigger"] == "pre_compaction"
    digest = cp["digest"]
    assert "Add rate limiting to the login endpoint" in digest
    assert "login.py (edited)" in digest and "Bash: pytest -q tests/test_login.py" in digest
    assert "NameError: limiter" in digest and "import the limiter" in digest
    assert FAKE_KEY not in digest and "[REDACTED:" in digest


def test_session_end_stores_the_transcript_scrubbed_and_indexes_its_turns(env, tmp_path):
    live, repo, home = env
    key = "end-1"
    transcript = write_transcript(tmp_path / f"{key}.jsonl", key, repo)
    live.remember("The login limiter allows 5 attempts per minute", source_id=key,
                  project="acme-api")
    body = payload("SessionEnd", key, repo, transcript, reason="prompt_input_exit")
    rc, out, _ = run_hook("session-end", body, url=live.url, home=home)
    assert rc == 0 and out == ""
    assert live.service.sessions.wait_sessions(60)  # read in the background
    conn = live.daemon.db.reader()
    row = conn.execute("SELECT content, harness, project FROM session_transcripts"
                       " WHERE session_key = ?", (key,)).fetchone()
    text = row["content"]
    assert FAKE_KEY not in text and "[REDACTED:anthropic_key]" in text
    assert "user: Add rate limiting to the login endpoint" in text
    assert "assistant: I'll read the login handler." in text
    assert "thinking: Look at the handler first." in text
    assert 'assistant → Read: {"file_path":' in text
    assert "tool error: FAILED tests/test_login.py::test_limit" in text
    assert "summary: Rate limiting the login endpoint" in text
    assert "file-history-snapshot" not in text
    assert (row["harness"], row["project"]) == ("claude-code", "acme-api")

    # no LLM is configured: no summary job is queued to wait forever
    summaries = conn.execute("SELECT COUNT(*) FROM memory_jobs WHERE job_type = 'summary'"
                             " AND json_extract(payload, '$.session_key') = ?", (key,))
    assert summaries.fetchone()[0] == 0
    turns = conn.execute("SELECT who, content FROM memories WHERE source_type = 'session'"
                         " AND source_id = ? ORDER BY occurred_at, seq", (key,)).fetchall()
    assert [tuple(t) for t in turns][:2] == [
        ("user", "Add rate limiting to the login endpoint"),
        ("assistant", "I'll read the login handler.")]
    said = "\n".join(t["content"] for t in turns)
    assert f"edited {repo / 'src' / 'login.py'}" in said  # a tool call is one short line
    assert "ran `pytest -q tests/test_login.py`: failed" in said
    assert "def login(request)" not in said  # tool output is not memory
    assert "Look at the handler first" not in said  # nor is thinking
    assert FAKE_KEY not in said and "[REDACTED:anthropic_key]" in said
    cp = live.http.get("/api/checkpoints/latest", params={"session_key": key}).json()
    assert cp["trigger"] == "session_end" and "## Session ended" in cp["digest"]
    assert "5 attempts per minute" in cp["digest"]  # remembered during the session

    # recall with expand joins the transcript of the memory's session
    live.flush()
    hit = live.recall("login limiter attempts per minute", expand=True)["results"][0]
    assert hit["source_id"] == key and "Add rate limiting" in hit["transcript"]

    # ending again adds nothing
    count = "SELECT COUNT(*) FROM memories WHERE source_id = ?"
    before = conn.execute(count, (key,)).fetchone()[0]
    run_hook("session-end", body, url=live.url, home=home)
    assert live.service.sessions.wait_sessions(60)
    assert conn.execute(count, (key,)).fetchone()[0] == before


def test_scripted_session_recovers_after_compaction(env, tmp_path):
    live, repo, home = env
    key = "script-1"
    transcript = write_transcript(tmp_path / f"{key}.jsonl", key, repo)

    def step(event, name, **extra):
        rc, out, _ = run_hook(event, payload(name, key, repo, transcript, **extra),
                              url=live.url, home=home)
        assert rc == 0
        return out

    first = context_of(step("session-start", "SessionStart", source="startup"), "SessionStart")
    assert "Recovered session state" not in first
    for prompt in ("add rate limiting to the login endpoint", "how are deploys done?",
                   "run the login tests"):
        step("user-prompt-submit", "UserPromptSubmit", prompt=prompt)
    instructions = step("pre-compact", "PreCompact", trigger="manual",
                        custom_instructions="focus on the limiter")
    assert "When summarising, keep" in instructions

    after = context_of(step("session-start", "SessionStart", source="compact"), "SessionStart")
    assert after.index("# Recovered session state") < after.index("## Pinned")
    assert "before context compaction" in after and "focus on the limiter" in after
    assert "login.py (edited)" in after and "Prompts: 3" in after
    recovered = after[after.index("# Recovered"):after.index("## Pinned")]
    assert len(recovered) <= live.daemon.config.memory.pipeline_v2.continuity.recovery_budget_chars
    # the compacted context no longer holds what was injected before: start gives it again
    assert "never force-push" in after

    assert step("session-end", "SessionEnd", reason="other") == ""
    assert live.service.sessions.wait_sessions(60)
    stored = live.daemon.db.reader().execute(
        "SELECT content FROM session_transcripts WHERE session_key = ?", (key,)).fetchone()
    assert stored and "Add rate limiting to the login endpoint" in stored[0]
    triggers = [c["trigger"] for c in live.http.get(
        "/api/checkpoints", params={"session_key": key}).json()["checkpoints"]]
    assert triggers == ["session_end", "pre_compaction"]


def test_compaction_complete_marks_the_next_prompt_for_recovery(env):
    live, repo, home = env
    key = "codex-1"
    post = live.http.post
    post("/api/hooks/session-start", json={"session_id": key, "cwd": str(repo)})
    post("/api/hooks/user-prompt-submit", json={"session_id": key, "prompt": "rate limits?"})
    assert post("/api/hooks/pre-compaction", json={"session_id": key}).status_code == 200
    rc, out, _ = run_hook("compaction-complete", {"session_id": key, "cwd": str(repo)},
                          url=live.url, home=home)
    assert rc == 0 and out == ""
    first = post("/api/hooks/user-prompt-submit", json={"session_id": key, "prompt": "go on"})
    assert first.json()["recovered"] and "# Recovered session state" in first.json()["context"]
    second = post("/api/hooks/user-prompt-submit", json={"session_id": key, "prompt": "go on"})
    assert not second.json()["recovered"]


def test_a_daemon_that_is_down_exits_zero_quickly_with_nothing_printed(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    body = payload("UserPromptSubmit", "down-1", tmp_path, prompt="hello")
    rc, out, elapsed = run_hook("user-prompt-submit", body, url=url, home=tmp_path,
                                timeout_ms=40000)
    assert rc == 0 and out == ""
    assert elapsed < 30.0  # refused at once: no waiting for the 40 s deadline
    assert "ConnectError" in hook_log(tmp_path) and url in hook_log(tmp_path)


class SlowHandler(http.server.BaseHTTPRequestHandler):
    sleep_s = 30.0
    finished = threading.Event()

    def do_POST(self):
        time.sleep(self.sleep_s)
        SlowHandler.finished.set()
        body = json.dumps({"context": "too late"}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *args):
        pass


def test_a_slow_daemon_is_abandoned_at_the_deadline(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        body = payload("SessionStart", "slow-1", tmp_path, source="startup")
        started = time.monotonic()
        rc, out, _ = run_hook("session-start", body, url=url, home=tmp_path, timeout_ms=700)
        assert rc == 0 and out == ""
        assert not SlowHandler.finished.is_set()  # it returned before the server answered
        assert time.monotonic() - started < SlowHandler.sleep_s
        assert "no answer within 700 ms" in hook_log(tmp_path)
    finally:
        server.shutdown()
        server.server_close()


def test_stdin_that_never_closes_is_covered_by_the_deadline(tmp_path):
    env = {**os.environ, "MNEMONIST_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [*MNEMONIST, "--url", f"http://127.0.0.1:{free_port()}", "hook", "session-start",
         "--timeout", "500"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    try:
        proc.wait(timeout=30)  # stdin is never written nor closed: only the deadline ends it
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
    assert proc.returncode == 0 and out == b"", err
    assert "no answer within 500 ms" in hook_log(tmp_path)


@pytest.mark.parametrize(
    ("event", "raw"),
    [
        ("session-start", b"this is not json{"),
        ("user-prompt-submit", b""),
        ("session-end", b"[1, 2, 3]"),
        ("user-prompt-submit", b'{"prompt": "no session id"}'),
        ("no-such-event", b'{"session_id": "x"}'),
    ],
)
def test_bad_input_exits_zero_with_nothing_printed(env, event, raw):
    live, _, home = env
    rc, out, _ = run_hook(event, None, raw=raw, url=live.url, home=home)
    assert rc == 0 and out == ""
    assert hook_log(home).strip()


def test_unknown_options_do_not_fail_the_hook(env):
    live, repo, home = env
    body = payload("SessionEnd", "opts-1", repo, reason="clear")
    rc, out, _ = run_hook("session-end", body, url=live.url, home=home,
                          extra_args=("--bogus-flag", "x"))
    assert rc == 0 and out == ""


def test_the_hook_path_imports_neither_fastapi_nor_the_model(tmp_path):
    code = (
        "import sys; from click.testing import CliRunner; from mnemonist.cli.main import cli;"
        f"CliRunner().invoke(cli, ['--url', 'http://127.0.0.1:{free_port()}', 'hook',"
        " 'session-start', '--timeout', '300'], input='{}');"
        "print(sorted(m for m in ('fastapi', 'onnxruntime', 'mnemonist.service',"
        " 'mnemonist.api.app', 'mnemonist.web', 'uvicorn') if m in sys.modules))"
    )
    env = {**os.environ, "MNEMONIST_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_hook_sends_the_configured_token(tmp_path):
    with run_daemon(tmp_path / "daemon", {"server": {"token": "hook-token-123456"}}) as d:
        d.service.memories.remember(RememberRequest(
            content="critical: staging is read-only on Fridays"))
        home = tmp_path / "hookhome"
        home.mkdir()
        body = payload("SessionStart", "token-1", tmp_path, source="startup")
        rc, out, _ = run_hook("session-start", body, url=d.url, home=home)
        assert rc == 0 and out == "" and "401" in hook_log(home)
        (home / "agent.yaml").write_text("server:\n  token: hook-token-123456\n")
        rc, out, _ = run_hook("session-start", body, url=d.url, home=home)
        assert rc == 0 and "read-only on Fridays" in context_of(out, "SessionStart")


def test_transcript_flattening_and_the_files_the_daemon_reads(tmp_path):
    jsonl = "\n".join([
        json.dumps({"type": "user", "message": {"role": "user", "content": "hi"},
                    "timestamp": "2025-01-01T00:00:00Z"}),
        "{ a torn line",
        json.dumps({"role": "assistant", "content": [{"type": "image", "source": {}}]}),
        json.dumps({"type": "system", "content": "Conversation compacted"}),
        json.dumps({"type": "file-history-snapshot", "snapshot": {}}),
    ])
    flat = flatten_transcript(jsonl)
    assert flat.splitlines() == ["[2025-01-01T00:00:00Z] user: hi", "{ a torn line",
                                 "assistant: [image]", "system: Conversation compacted"]
    assert flatten_transcript("user: plain text log\n") == "user: plain text log\n"
    roots = [tmp_path / "allowed"]
    roots[0].mkdir()
    (tmp_path / "secrets.pem").write_text("key")
    (tmp_path / "outside.jsonl").write_text("{}\n")
    (roots[0] / "link.jsonl").symlink_to(tmp_path / "secrets.pem")
    (roots[0] / "out.jsonl").symlink_to(tmp_path / "outside.jsonl")
    for bad in ("relative.jsonl", "~/x.jsonl", str(tmp_path / "secrets.pem"),
                str(tmp_path / "outside.jsonl"), str(roots[0] / "no.jsonl"),
                str(roots[0] / "link.jsonl"), str(roots[0] / "out.jsonl")):
        with pytest.raises(TranscriptRefused):
            resolve(bad, roots)
    big = roots[0] / "big.jsonl"
    big.write_text("x" * 50 + "\n" + "y" * 50 + "\n")
    assert resolve(str(big), roots) == big.resolve()
    assert read_tail(big, max_bytes=60) == "y" * 50 + "\n"  # whole lines only
