"""The CLI against a running daemon (and without one), and token auth on the HTTP face."""

from __future__ import annotations

import json

import httpx
from click.testing import CliRunner

from conftest import free_port, run_daemon
from mnemonist.cli.main import cli


def run(live, *args: str):
    return CliRunner().invoke(cli, ["--url", live.url, *args], catch_exceptions=False)


def test_remember_recall_get_history_forget(live):
    out = run(live, "remember", "critical:", "never", "commit", "the", ".env", "file", "--json")
    assert out.exit_code == 0, out.output
    made = json.loads(out.output)
    assert made["pinned"] and made["type"] == "rule"
    live.flush()

    out = run(live, "recall", "committing", "env", "files", "--json")
    assert out.exit_code == 0
    assert json.loads(out.output)["results"][0]["id"] == made["id"]
    out = run(live, "recall", "committing", "env", "files")
    assert made["id"][:8] in out.output and "[pinned]" in out.output

    assert json.loads(run(live, "get", made["id"]).output)["content"] == (
        "never commit the .env file")

    plain = run(live, "remember", "Lunch", "is", "at", "noon", "--project", "office")
    assert plain.exit_code == 0 and "remembered:" in plain.output
    again = run(live, "remember", "lunch", "is", "at", "noon.", "--project", "office")
    assert "already remembered" in again.output

    mem_id = plain.output.split()[1]
    out = run(live, "forget", mem_id, "--yes", "--reason", "no longer true")
    assert out.exit_code == 0 and "forgot 1" in out.output
    hist = run(live, "history", mem_id)
    assert "created" in hist.output and "deleted" in hist.output
    assert "no longer true" in hist.output


def test_status_reports_counts_and_degradation(live):
    run(live, "remember", "status counts this memory")
    live.flush()
    out = run(live, "status")
    assert out.exit_code == 0
    assert "memories:" in out.output
    # no LLM configured by default: a choice, not a degradation
    assert "degraded: nothing" in out.output.splitlines()
    data = json.loads(run(live, "status", "--json").output)
    assert data["memories"]["live"] >= 1 and data["embeddings"]["coverage"] == 1.0


def test_errors_from_the_daemon_are_shown_and_exit_nonzero(live):
    out = run(live, "get", "no-such-id")
    assert out.exit_code == 1 and "not_found" in out.output


def test_a_daemon_that_is_not_running_is_a_clear_error():
    url = f"http://127.0.0.1:{free_port()}"
    out = CliRunner().invoke(cli, ["--url", url, "recall", "anything"])
    assert out.exit_code == 1
    assert "not running" in out.output and url in out.output


def test_token_is_required_on_every_route_but_health(tmp_path):
    with run_daemon(tmp_path, {"server": {"token": "s3cret-token"}}) as d:
        assert d.http.get("/health").status_code == 200
        denied = d.http.post("/api/memory/recall", json={"query": "x"})
        assert denied.status_code == 401 and denied.json()["error"] == "unauthorized"
        ok = httpx.post(f"{d.url}/api/memory/recall", json={"query": "x"},
                        headers={"Authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200
        wrong = httpx.get(f"{d.url}/api/status", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
