"""The scrub matrix: every write path × every free-text field it stores, then every column of
every table and the raw bytes of the database files are searched for the credentials.

Each (path, field) gets its own GitHub token, so a failure names what leaked. Free text is what
a person or a model writes: content, why, tags, who, reasons, the actor (`changed_by`), a
forget query, a document's title, a checkpoint's note and lists, and whatever the pipeline's
LLM answers (facts, decision reasons, entity names, hints). Identifiers (project, source_id,
source_type, idempotency_key, session keys) are matched exactly by filters and are not
rewritten (docs/api.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from conftest import LiveDaemon, run_daemon
from llm_servers import Call, FakeLlmServer
from pipeline_helpers import Brain, decision_json, facts_json, pipeline_config, wait_for
from secret_scan import everywhere

SECRETS: dict[str, str] = {}


def secret(path: str, field: str) -> str:
    """A GitHub token (the scrubber knows the format) that names where it was written."""
    tag = "".join(ch for ch in f"{path}{field}" if ch.isalnum()).upper()
    token = "ghp_" + (tag + "Q7" * 40)[:36]
    SECRETS[f"{path}.{field}"] = token
    return token


class LeakyBrain(Brain):
    """A model that repeats credentials in everything it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.extractions["billing deploy"] = facts_json(
            (f"The billing deploy authenticates with {secret('pipeline', 'fact')}", 0.9),
            entities=[("billing deploy", "uses", secret("pipeline", "entity"), 0.9)])
        self.decide = self._decide

    @staticmethod
    def _decide(call: Call) -> str:
        for cid, content in call.candidates():
            if "billing service deploys" in content:
                return decision_json("update", cid, f"replaces it {secret('pipeline', 'reason')}")
        return decision_json("add", reason=f"new {secret('pipeline', 'addreason')}")

    def __call__(self, call: Call) -> Any:
        if call.kind == "hints":
            return json.dumps({"hints": [f"Which token is {secret('pipeline', 'hint')}?"]})
        return super().__call__(call)


def ok(resp, *codes: int) -> dict[str, Any]:
    assert resp.status_code in (codes or (200, 201, 202)), resp.text
    return resp.json()


def idle(live: LiveDaemon) -> None:
    def done() -> bool:
        return live.service.db.reader().execute(
            "SELECT COUNT(*) FROM memory_jobs WHERE status IN ('pending', 'leased')"
        ).fetchone()[0] == 0
    assert wait_for(done, 60), "jobs did not finish"
    live.flush()


def write_everything(live: LiveDaemon) -> None:
    http = live.http
    # remember
    ok(http.post("/api/memory/remember", json={
        "content": f"Remember content {secret('remember', 'content')}",
        "tags": ["deploy", f"token {secret('remember', 'tags')}"],
        "who": f"agent {secret('remember', 'who')}",
        "why": f"because {secret('remember', 'why')}",
        "source_id": "chat-1", "transcript": f"user: {secret('remember', 'transcript')}"}))
    # import
    ok(http.post("/api/memory/import", json={"items": [{
        "content": f"Imported content {secret('import', 'content')}",
        "tags": [f"t {secret('import', 'tags')}"], "who": f"w {secret('import', 'who')}",
        "why": f"y {secret('import', 'why')}"}]}))
    # PATCH, modify, DELETE, recover, forget
    mid = ok(http.post("/api/memory/remember", json={"content": "A plain note to edit"}))["id"]
    ok(http.patch(f"/api/memory/{mid}", json={
        "content": f"A plain note, edited {secret('patch', 'content')}",
        "tags": [f"x {secret('patch', 'tags')}"], "who": f"w {secret('patch', 'who')}",
        "reason": f"r {secret('patch', 'reason')}"}))
    ok(http.post("/api/memory/modify", json={
        "reason": f"batch {secret('modify', 'reason')}",
        "changed_by": f"me {secret('modify', 'changedby')}",
        "patches": [{"id": mid, "importance": 0.3}]}))
    ok(http.request("DELETE", f"/api/memory/{mid}", json={
        "reason": f"gone {secret('delete', 'reason')}",
        "changed_by": f"me {secret('delete', 'changedby')}"}))
    ok(http.post(f"/api/memory/{mid}/recover", json={
        "reason": f"back {secret('recover', 'reason')}",
        "changed_by": f"me {secret('recover', 'changedby')}"}))
    ok(http.post("/api/memory/forget", json={
        "ids": [mid], "mode": "execute", "reason": f"bye {secret('forget', 'reason')}",
        "changed_by": f"me {secret('forget', 'changedby')}"}))
    ok(http.post("/api/memory/remember", json={"content": "Snorkel gear is in locker nine"}))
    preview = ok(http.post("/api/memory/forget", json={
        "query": f"snorkel locker {secret('forget', 'query')}"}))
    assert preview["count"] == 1
    ok(http.post("/api/memory/forget", json={
        "query": f"snorkel locker {secret('forget', 'query')}", "mode": "execute",
        "reason": "query forget", "confirm_token": preview["confirmToken"]}))
    # documents, and a document's delete
    doc = ok(http.post("/api/documents", json={
        "content": f"Document body with {secret('document', 'content')} inside.\n\n" * 3,
        "title": f"Doc {secret('document', 'title')}",
        "tags": [f"d {secret('document', 'tags')}"], "who": f"w {secret('document', 'who')}"}))
    wait_for(lambda: http.get(f"/api/documents/{doc['id']}").json()["status"] == "done", 60)
    ok(http.request("DELETE", f"/api/documents/{doc['id']}", json={
        "reason": f"old {secret('document', 'deletereason')}",
        "changed_by": f"me {secret('document', 'changedby')}"}))
    # checkpoints
    ok(http.post("/api/checkpoints", json={
        "session_key": "sess-1", "note": f"note {secret('checkpoint', 'note')}",
        "memory_queries": [f"q {secret('checkpoint', 'queries')}"],
        "recent_remembers": [f"r {secret('checkpoint', 'remembers')}"]}))
    # the pipeline: facts, decision reasons, entities, hints, the archive; then a restore
    old = ok(http.post("/api/memory/remember", json={
        "content": "The billing service deploys every Friday"}))["id"]
    idle(live)
    ok(http.post("/api/memory/remember", json={
        "content": "Notes on the billing deploy from the ops channel"}))
    idle(live)
    assert http.get(f"/api/memory/{old}").json()["superseded_at"], "no UPDATE happened"
    ok(http.post(f"/api/memory/{old}/restore", json={
        "reason": f"keep {secret('restore', 'reason')}",
        "changed_by": f"me {secret('restore', 'changedby')}"}))
    idle(live)


def test_no_credential_is_stored_by_any_write_path(tmp_path: Path) -> None:
    cfg = pipeline_config("", embedding={"provider": "local"}, allowUpdateDelete=True,
                          hints={"enabled": True, "poll": 1000})
    with FakeLlmServer(script=LeakyBrain()) as srv:
        cfg["memory"]["pipelineV2"]["extraction"]["baseUrl"] = srv.url
        cfg["memory"]["forget_min_coverage"] = 0.3  # the query's token is not in the memory
        with run_daemon(tmp_path, cfg) as live:
            write_everything(live)
            # the writes happened: each path stored its [REDACTED:...] marker in its place
            conn = live.service.db.reader()
            redacted = conn.execute(
                "SELECT COUNT(*) FROM memories WHERE content LIKE '%[REDACTED:github_token]%'"
            ).fetchone()[0]
            assert redacted >= 4
            hints = [r[0] for r in conn.execute("SELECT hint FROM memory_hints")]
            assert any("[REDACTED:github_token]" in h for h in hints)
            time.sleep(0.2)
            bodies = [t[4:] for t in SECRETS.values()]  # the part after "ghp_"
            leaks = everywhere(live.daemon.paths.database, bodies)
            named = {v[4:].lower(): k for k, v in SECRETS.items()}
            assert leaks == [], "\n".join(
                f"{leak}  <- {named.get(leak.rsplit(': ', 1)[1].lower(), '?')}"
                for leak in leaks)
