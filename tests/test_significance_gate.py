"""The significance gate (docs/gates.md): a session's LLM summary is skipped only when all three
checks find it insignificant — few substantive turns, no entity the project knows, and close
to a recent session — the skip is logged with its reasons, and a backfill runs the summary
later. Real daemon, real model, a scripted LLM on loopback, real HTTP."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import run_daemon
from hook_payloads import MNEMONIST
from mnemonist.bench.write_gate_set import KNOWN
from mnemonist.model.config import SignificanceGateConfig
from mnemonist.pipeline.significance_gate import SessionSignals, judge

pytestmark = pytest.mark.both_stores

PROJECT = "sig"
SUMMARY = "The session ran the unit tests of the project; all of them pass."
ROUTINE = (
    ("user", "Run the unit tests for me, please."),
    ("assistant", "Ran the unit tests: all 214 tests pass."),
    ("user", "Great, thanks."),
)
DEPLOY_KEY = (
    ("user", "Note that the deploy key for GitHub Actions rotates on the first of every month."),
    ("assistant", "Noted: the GitHub Actions deploy key rotates monthly, on the first."),
)


def jsonl(key: str, turns: tuple[tuple[str, str], ...]) -> str:
    lines = []
    for i, (role, text) in enumerate(turns):
        content = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(json.dumps({"type": role, "message": {"role": role, "content": content},
                                 "timestamp": f"2025-10-01T10:{i:02d}:00.000Z",
                                 "sessionId": key, "uuid": f"{key}-{i}"}))
    return "\n".join(lines) + "\n"


def config(llm_url: str | None, mode: str) -> dict:
    from pipeline_helpers import pipeline_config

    out = pipeline_config(llm_url, embedding={"provider": "local"}) if llm_url else {}
    out["sessions"] = {"significance": {"mode": mode}}
    return out


def summary_job(d, key: str):
    rows = d.query("SELECT status, result, payload FROM memory_jobs WHERE job_type = 'summary'"
                   " ORDER BY created_at DESC")
    mine = [r for r in rows if json.loads(r["payload"] or "{}").get("session_key") == key]
    return mine[0] if mine else None


def end_session(d, key: str, turns, project: str = PROJECT) -> dict:
    from pipeline_helpers import wait_for

    resp = d.http.post("/api/hooks/session-end", json={
        "session_id": key, "transcript": jsonl(key, turns), "project": project})
    assert resp.status_code == 200, resp.text
    assert resp.json()["summary"]["queued"] is True
    job = wait_for(lambda: (j := summary_job(d, key)) is not None and j["status"] == "completed"
                   and j, 120)
    assert job, f"the summary job of {key} did not complete"
    return json.loads(job["result"])


def summarised(srv, key_text: str) -> int:
    return sum(1 for c in srv.generations() if "<<<SESSION>>>" in c.prompt
               and key_text in c.prompt)


@pytest.fixture(scope="module")
def gate_on(daemon_store: str, tmp_path_factory):
    from llm_servers import FakeLlmServer

    def script(call):
        return SUMMARY if "<<<SESSION>>>" in call.prompt else '{"facts": []}'

    home = tmp_path_factory.mktemp("sig-on")
    with FakeLlmServer(script=script) as srv, run_daemon(home, config(srv.url, "on")) as d:
        for text in KNOWN:
            d.remember(text, project=PROJECT)
        yield d, srv


def test_a_repeated_routine_session_gets_no_summary_until_it_is_backfilled(gate_on):
    d, srv = gate_on
    first = end_session(d, "routine-1", ROUTINE)
    assert "summary_memory_id" in first  # nothing to compare with yet: summarised
    again = end_session(d, "routine-2", ROUTINE)
    assert again["skipped"].startswith("the significance gate")
    assert len(again["reasons"]) == 3 and "routine-1" in again["reasons"][2]
    assert summarised(srv, "214 tests pass") == 1  # the LLM never saw the second one
    log = d.http.get("/api/gates/log", params={"gate": "significance"}).json()
    row = next(r for r in log["decisions"] if r["subject"] == "routine-2")
    assert row["decision"] == "skip" and row["mode"] == "on"
    assert row["neighbour_id"] == "routine-1" and row["cosine"] > 0.85
    assert row["project"] == PROJECT and row["backfilled_at"] is None
    assert d.http.get("/api/status").json()["gates"]["significance"]["to_backfill"] >= 1
    # the backfill queues its summary past the gate
    resp = d.http.post("/api/repair/backfill-skipped")
    assert resp.status_code == 200, resp.text
    assert "routine-2" in resp.json()["sessions"]
    from pipeline_helpers import wait_for

    done = wait_for(lambda: (j := summary_job(d, "routine-2")) is not None
                    and j["status"] == "completed"
                    and "summary_memory_id" in json.loads(j["result"]), 120)
    assert done, "the backfilled summary did not run"
    assert summarised(srv, "214 tests pass") == 2
    row = next(r for r in d.http.get("/api/gates/log", params={
        "gate": "significance", "decision": "skip"}).json()["decisions"]
        if r["subject"] == "routine-2")
    assert row["backfilled_at"] is not None
    again = d.http.post("/api/repair/backfill-skipped").json()
    assert "routine-2" not in again["sessions"]


def test_a_short_session_about_something_the_project_knows_is_summarised(gate_on):
    d, _ = gate_on
    out = end_session(d, "deploy-key", DEPLOY_KEY)
    assert "summary_memory_id" in out
    verdict = d.http.get("/api/gates/significance/deploy-key").json()
    assert verdict["insignificant"] is False
    assert verdict["signs"]["turns"] is True  # short: one sign only
    assert "GitHub Actions" in verdict["known_entities"]


def test_judging_a_session_now_over_http_and_the_cli(gate_on):
    d, _ = gate_on
    end_session(d, "cli-judged", DEPLOY_KEY)
    assert d.http.get("/api/gates/significance/no-such-session").status_code == 404
    out = subprocess.run([*MNEMONIST, "gates", "significance", "cli-judged"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "MNEMONIST_URL": d.url})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("cli-judged: significant")
    assert "entities: 1 entity the project knows" in out.stdout \
        or "entities: 2 entities the project knows" in out.stdout


def test_shadow_mode_summarises_everything_and_logs_what_it_would_have_skipped(tmp_path):
    from llm_servers import FakeLlmServer

    def script(call):
        return SUMMARY if "<<<SESSION>>>" in call.prompt else '{"facts": []}'

    with FakeLlmServer(script=script) as srv, \
            run_daemon(tmp_path / "home", config(srv.url, "shadow")) as d:
        end_session(d, "shadow-1", ROUTINE)
        out = end_session(d, "shadow-2", ROUTINE)
        assert "summary_memory_id" in out
        assert summarised(srv, "214 tests pass") == 2
        log = d.http.get("/api/gates/log", params={"gate": "significance"}).json()
        decisions = {r["subject"]: r["decision"] for r in log["decisions"]}
        assert decisions == {"shadow-1": "extract", "shadow-2": "would_skip"}
        status = d.http.get("/api/status").json()["gates"]["significance"]
        assert status["mode"] == "shadow" and status["to_backfill"] == 0


def test_without_an_llm_the_backfill_says_why_nothing_can_run(tmp_path):
    with run_daemon(tmp_path / "home", config(None, "on")) as d:
        resp = d.http.post("/api/repair/backfill-skipped")
        assert resp.status_code == 409 and resp.json()["error"] == "no_llm"
        assert "no LLM is configured" in resp.json()["message"]


@pytest.mark.parametrize("signals, insignificant", [
    (SessionSignals(1, [], 0.05, "s0"), True),
    (SessionSignals(9, [], 0.05, "s0"), False),  # long enough
    (SessionSignals(1, ["Redis"], 0.05, "s0"), False),  # names what the project knows
    (SessionSignals(1, [], 0.40, "s0"), False),  # about something new
    (SessionSignals(1, [], None, None), False),  # nothing to compare with
    (SessionSignals(0, [], 0.15, "s0"), True),  # the threshold itself counts
])
def test_all_three_signs_are_needed(signals, insignificant):
    verdict = judge(signals, SignificanceGateConfig(mode="on"))
    assert verdict.insignificant is insignificant
    assert len(verdict.reasons) == 3
