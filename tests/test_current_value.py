"""The current value wins in what the hooks hand over: a superseded, deleted or contradicted
statement is never injected, and the newer one says what it replaced (search/current.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_daemon
from hook_payloads import payload
from mnemonist.model.memory import Memory
from mnemonist.search.current import current_only

pytestmark = pytest.mark.both_stores


def _memory(seq: int, content: str, when: str, source_type: str | None = None) -> Memory:
    return Memory(seq=seq, id=f"m{seq}", content=content, normalized_content=content.lower(),
                  content_hash=str(seq), type="fact", importance=0.5, tags=[], pinned=False,
                  who=None, why=None, project=None, source_type=source_type, source_id=None,
                  idempotency_key=None, version=1, is_deleted=False, deleted_at=None,
                  delete_reason=None, last_accessed=None, access_count=0, embedding_model=None,
                  occurred_at=when, created_at=when, updated_at=when)


def test_the_newer_statement_replaces_the_older_it_contradicts() -> None:
    old = _memory(1, "The API listens on port 8080 in staging", "2026-03-01T00:00:00.000Z")
    new = _memory(2, "The API listens on port 9090 in staging", "2026-05-01T00:00:00.000Z")
    other = _memory(3, "Invoices are sent on the first of the month", "2026-01-01T00:00:00.000Z")
    kept, replaced = current_only([old, other, new])  # rank order: the stale one ranked first
    assert [m.id for m in kept] == ["m3", "m2"] and replaced == {"m2": old}


def test_agreeing_statements_and_records_are_both_kept() -> None:
    a = _memory(1, "The API listens on port 9090 in staging", "2026-03-01T00:00:00.000Z")
    b = _memory(2, "In staging the API listens on port 9090", "2026-05-01T00:00:00.000Z")
    kept, replaced = current_only([a, b])
    assert len(kept) == 2 and replaced == {}
    # turns of a conversation are what was said then: an older turn is history, not stale
    t1 = _memory(3, "I moved to Lisbon in 2021", "2023-01-01T00:00:00.000Z", "conversation")
    t2 = _memory(4, "I moved to Lisbon in 2023", "2023-06-01T00:00:00.000Z", "conversation")
    assert len(current_only([t1, t2])[0]) == 2


def _prompt(live, repo: Path, session: str, prompt: str) -> dict:
    body = payload("UserPromptSubmit", session, repo, prompt=prompt)
    resp = live.http.post("/api/hooks/user-prompt-submit", json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_a_changed_fact_is_never_injected_in_its_old_value(tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    repo.mkdir()
    # the selection is not under test here: every candidate with a chance is given
    config = {"hooks": {"promptMarginalRelevance": 0.0, "promptMinRelevance": 0.0}}
    with run_daemon(tmp_path / "home", config) as live:
        # supersession by key
        live.remember("The checkout API listens on port 8080", project="shop", key="api-port",
                      occurred_at="2026-03-01T09:00:00Z")
        live.remember("The checkout API listens on port 9090", project="shop", key="api-port",
                      occurred_at="2026-05-01T09:00:00Z")
        # a plain contradiction nobody linked
        stale = live.remember("The staging cluster runs in region eu-west-1", project="shop",
                              occurred_at="2026-02-01T09:00:00Z")
        current = live.remember("The staging cluster runs in region us-east-2", project="shop",
                                occurred_at="2026-06-01T09:00:00Z")
        # a deleted one
        gone = live.remember("The checkout API listens on port 7070", project="shop")
        assert live.http.request("DELETE", f"/api/memory/{gone['id']}",
                                 json={"reason": "wrong"}).status_code == 200
        live.flush()

        port = _prompt(live, repo, "s-port", "which port does the checkout API listen on?")
        assert "9090" in port["context"]
        assert "8080" not in port["context"] and "7070" not in port["context"]

        region = _prompt(live, repo, "s-region", "which region is the staging cluster in?")
        assert current["id"] in region["memories"] and stale["id"] not in region["memories"]
        # the newer says what it replaced (quoted, with the old one's id)
        line = next(x for x in region["context"].splitlines() if "us-east-2" in x)
        assert "replaces" in line and "eu-west-1" in line and stale["id"] in line

        # recall itself still finds both (only the hooks decide what an agent is handed)
        ids = {r["id"] for r in live.recall("staging cluster region", limit=10)["results"]}
        assert {stale["id"], current["id"]} <= ids


def test_session_start_hands_over_only_the_current_decision(tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    repo.mkdir()
    with run_daemon(tmp_path / "home") as live:
        old = live.remember("decision: the shop deploys with Helm 2 charts", project="shop",
                            occurred_at="2026-01-10T09:00:00Z")
        new = live.remember("decision: the shop deploys with Helm 3 charts", project="shop",
                            occurred_at="2026-04-10T09:00:00Z")
        live.flush()
        body = payload("SessionStart", "s-start", repo, source="startup")
        got = live.http.post("/api/hooks/session-start", json=body).json()
        assert new["id"] in got["memories"] and old["id"] not in got["memories"]
        assert "Helm 3" in got["context"] and "Helm 2" not in got["context"]
