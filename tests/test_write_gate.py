"""The write gate (docs/gates.md): an explicit remember that restates a stored memory of the
same project and owner is not stored again in mode `on`, logged only in `shadow`; a genuine
update is never gated, however close its embedding. Real daemon, real model, real HTTP."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import run_daemon
from hook_payloads import MNEMONIST
from mnemonist.bench.write_gate_set import RESTATEMENTS, UPDATES
from mnemonist.model.config import Config
from mnemonist.pipeline.write_gate import Stored, judge

pytestmark = pytest.mark.both_stores

GATE_ON = {"memory": {"writeGate": {"mode": "on"}}}


@pytest.fixture(scope="module")
def gated(daemon_store: str, tmp_path_factory):
    with run_daemon(tmp_path_factory.mktemp("gate-on"), GATE_ON) as d:
        yield d


def remember(live, content: str, status: int | None = None, headers=None, **fields):
    resp = live.http.post("/api/memory/remember", json={"content": content, **fields},
                          headers=headers or {})
    assert resp.status_code in ((status,) if status else (200, 201)), resp.text
    return resp.json()


def project_rows(live, project: str):
    return live.query("SELECT id, content FROM memories WHERE project = ? AND is_deleted = 0",
                      project)


def test_the_gate_is_off_by_default():
    assert Config().memory.write_gate.mode == "off"
    assert Config().sessions.significance.mode == "off"


def test_no_hand_written_update_is_gated_however_close_it_embeds(gated):
    threshold = gated.service.core.config.memory.write_gate.threshold
    close = 0
    for i, (first, update) in enumerate(UPDATES):
        project = f"update-{i:02d}"
        remember(gated, first, project=project)
        out = remember(gated, update, status=201, project=project)
        assert out["created"] and not out["gated"], (first, update, out["gate"])
        assert out["gate"]["decision"] == "write"
        if out["gate"]["cosine"] is not None and out["gate"]["cosine"] >= threshold:
            close += 1  # compared word by word: a guard says what differs
            assert "restates" not in " ".join(out["gate"]["reasons"])
        assert len(project_rows(gated, project)) == 2
    assert close >= 10  # the pairs really are close: most are judged by the text guards


def test_a_restatement_is_not_stored_and_the_answer_names_the_memory_holding_it(gated):
    first = remember(gated, "The user prefers pnpm over npm.", status=201, project="restate",
                     who="agent-a")
    again = remember(gated, "User prefers pnpm over npm", status=200, project="restate",
                     who="agent-b")
    assert again["gated"] is True and again["created"] is False
    assert again["deduplicated"] is False
    assert again["id"] == first["id"] and again["content"] == first["content"]
    assert again["gate"]["decision"] == "drop" and again["gate"]["neighbour"] == first["id"]
    assert again["gate"]["cosine"] >= gated.service.core.config.memory.write_gate.threshold
    # another agent said it again: the stored memory is corroborated, as an exact duplicate is
    assert again["corroborated"] is True
    assert again["observation_count"] == 2 and "agent-b" in again["observed_by"]
    assert [r["id"] for r in project_rows(gated, "restate")] == [first["id"]]
    events = gated.http.get(f"/api/memory/{first['id']}/history").json()
    assert "corroborated" in [e["event"] for e in events["events"]]
    log = gated.http.get("/api/gates/log", params={"gate": "write", "decision": "drop"}).json()
    row = next(r for r in log["decisions"] if r["neighbour_id"] == first["id"])
    assert row["subject"] is None and row["mode"] == "on"
    assert row["content"] == "User prefers pnpm over npm"
    assert row["reasons"] and row["cosine"] == again["gate"]["cosine"]


@pytest.mark.parametrize("pair", [RESTATEMENTS[i] for i in (0, 1, 3, 4, 5, 6)])
def test_restatements_in_the_same_words_are_gated(gated, pair):
    project = f"restated-{RESTATEMENTS.index(pair)}"
    first = remember(gated, pair[0], project=project)
    again = remember(gated, pair[1], project=project)
    assert again["gated"] and again["id"] == first["id"], again["gate"]


def test_a_restatement_in_another_project_or_by_another_owner_is_stored(gated):
    text = "The nightly export lands in the reporting bucket."
    remember(gated, text, project="export-a")
    other_project = remember(gated, "Nightly export lands in the reporting bucket",
                             status=201, project="export-b")
    private = remember(gated, "Nightly export lands in the reporting bucket", status=201,
                       project="export-a", agent_id="agent-x")
    assert not other_project["gated"] and not private["gated"]


def test_keyed_memories_events_and_pinned_restatements_are_written(gated):
    base = remember(gated, "The release train leaves every second Monday.", project="exempt")
    keyed = remember(gated, "Release train leaves every second Monday", status=201,
                     project="exempt", key="release-train")
    assert keyed["superseded"] is None and "gate" not in keyed
    event = remember(gated, "Deployed the release train to production.", project="exempt",
                     type="event")
    again = remember(gated, "Deployed release train to production", status=201,
                     project="exempt", type="event")
    assert again["id"] != event["id"] and "gate" not in again
    pinned = remember(gated, "The release train leaves on every second Monday", status=201,
                      project="exempt", pinned=True)
    assert not pinned["gated"] and pinned["id"] != base["id"]
    assert "pinned" in " ".join(pinned["gate"]["reasons"])


def test_a_forgotten_memory_holds_nothing(gated):
    first = remember(gated, "The staging VPN uses WireGuard.", project="forgotten")
    resp = gated.http.delete(f"/api/memory/{first['id']}", params={"reason": "test"})
    assert resp.status_code == 200, resp.text
    again = remember(gated, "Staging VPN uses WireGuard", status=201, project="forgotten")
    assert again["created"] and not again["gated"]


def test_an_exact_duplicate_is_deduplicated_not_gated(gated):
    first = remember(gated, "Invoices are numbered per calendar year.", project="exact")
    again = remember(gated, "invoices are numbered per calendar year", status=200,
                     project="exact")
    assert again["deduplicated"] and not again["gated"] and again["id"] == first["id"]


def test_a_judged_memory_is_embedded_when_remember_answers(gated):
    out = remember(gated, "Feature branches are deleted after merge.", status=201,
                   project="embedded-now")
    row = gated.query("SELECT embedding_model FROM memories WHERE id = ?", out["id"])[0]
    assert row["embedding_model"] == gated.service.core.provider.model_id  # no background wait
    again = remember(gated, "Feature branches are deleted after the merge", status=200,
                     project="embedded-now")  # judged against it at once
    assert again["gated"] and again["id"] == out["id"]


def test_shadow_mode_stores_everything_and_logs_what_it_would_have_dropped(tmp_path):
    config = {"memory": {"writeGate": {"mode": "shadow"}}}
    with run_daemon(tmp_path / "home", config) as d:
        first = remember(d, "CI runs on GitHub Actions.", status=201, project="shadow")
        again = remember(d, "The CI runs on GitHub Actions", status=201, project="shadow")
        assert again["created"] and not again["gated"] and again["id"] != first["id"]
        assert again["gate"]["decision"] == "would_drop"
        assert again["gate"]["neighbour"] == first["id"]
        update = remember(d, "CI runs on Buildkite.", status=201, project="shadow")
        assert update["gate"]["decision"] == "write"
        log = d.http.get("/api/gates/log", params={"gate": "write"}).json()
        would = [r for r in log["decisions"] if r["decision"] == "would_drop"]
        assert [(r["subject"], r["neighbour_id"]) for r in would] == [(again["id"],
                                                                     first["id"])]
        status = d.http.get("/api/status").json()["gates"]
        assert status["write"]["mode"] == "shadow"
        assert status["write"]["logged"]["would_drop"] == 1
        out = subprocess.run([*MNEMONIST, "gates", "log", "--gate", "write"],
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "MNEMONIST_URL": d.url})
        assert out.returncode == 0, out.stderr
        assert "would_drop (shadow)" in out.stdout and "The CI runs on GitHub Actions" \
            in out.stdout


def test_the_log_shows_a_private_memory_only_to_its_owner(tmp_path):
    config = {"memory": {"writeGate": {"mode": "shadow"}}}
    with run_daemon(tmp_path / "home", config) as d:
        mine = {"agent_id": "agent-p"}
        first = remember(d, "My scratch notes live in notes/scratch.md.", project="p", **mine)
        again = remember(d, "The scratch notes live in notes/scratch.md", project="p", **mine)
        assert again["gate"]["decision"] == "would_drop"
        assert again["gate"]["neighbour"] == first["id"]
        anyone = d.http.get("/api/gates/log").json()
        owner = d.http.get("/api/gates/log", params={"agent_id": "agent-p"}).json()
        assert anyone["total"] == 0
        assert owner["total"] >= 1 and all(r["agent_id"] == "agent-p"
                                           for r in owner["decisions"])


def test_bad_log_filters_are_a_400(gated):
    resp = gated.http.get("/api/gates/log", params={"gate": "nope"})
    assert resp.status_code == 400 and resp.json()["error"]


@pytest.mark.parametrize("stored, new", [
    ("Code review needs one approval.", "Code review needs two approvals."),
    ("Deploys happen on Fridays.", "Deploys happen only on Fridays."),
    ("Ana was the release manager.", "Ana is the release manager."),
    ("Orders use PostgreSQL and billing uses MySQL.", "Orders use MySQL."),
    ("The frontend team owns the dashboard.", "The platform team owns the dashboard."),
])
def test_the_word_guards_keep_what_the_near_duplicate_guards_miss(stored, new):
    verdict = judge(new, [Stored("s", stored, 0.99)], 0.85)
    assert not verdict.redundant and verdict.compared, verdict.reasons
    assert judge(stored, [Stored("s", stored.rstrip(".") + " ", 0.99)], 0.85).redundant


def test_without_embeddings_nothing_is_judged_and_the_log_keeps_its_newest_rows(tmp_path):
    from mnemonist.store import gate_log

    config = {"embedding": {"provider": "none"}, "memory": {"writeGate": {"mode": "on"}}}
    with run_daemon(tmp_path / "home", config) as d:
        first = remember(d, "The user prefers pnpm over npm.", status=201, project="none")
        again = remember(d, "User prefers pnpm over npm", status=201, project="none")
        assert again["id"] != first["id"] and not again["gated"]
        assert again["gate"] == {"mode": "on", "decision": "write", "judged": False,
                                 "reasons": ["no embedding provider"]}
        with d.service.core.db.write_tx() as conn:
            gate_log.record(conn, gate="significance", mode="on", decision="skip",
                            subject="old-session", reasons=["test"], at="2024-01-01")
            for i in range(5):
                gate_log.record(conn, gate="write", mode="shadow", decision="would_drop",
                                subject=f"m{i}", reasons=["test"], at=f"2025-01-0{i + 1}")
            gate_log.record(conn, gate="write", mode="shadow", decision="write",
                            subject="newest", reasons=["test"])
        with d.service.core.db.write_tx() as conn:
            assert gate_log.prune(conn, 2) == 4
        kept = {r["subject"] for r in d.http.get("/api/gates/log").json()["decisions"]}
        assert kept == {"m4", "newest", "old-session"}  # a skip waiting for its backfill stays
