"""The scrub matrix: every write path × every free-text field it stores, then every column of
every table and the raw bytes of the database files are searched for the credentials. The
first test plants GitHub tokens, the pipeline's LLM repeating them too; the second plants each
of 13 kinds of credential (KINDS) in each of 70 fields of the HTTP routes and MCP tools.

Each (path, field) gets its own GitHub token, so a failure names what leaked. Free text is what
a person or a model writes: content, why, tags, who, reasons, the actor (`changed_by`), a
forget query, a document's title, a checkpoint's note and lists, and whatever the pipeline's
LLM answers (facts, decision reasons, entity names, hints). Identifiers (project, source_id,
source_type, idempotency_key, session keys) are matched exactly by filters and are not
rewritten (docs/api.md)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from conftest import LiveDaemon, run_daemon
from llm_servers import Call, FakeLlmServer
from mnemonist.cli.main import cli
from mnemonist.service.session_turns import scrub_transcript_body
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
        return live.service.core.db.reader().execute(
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
            conn = live.service.core.db.reader()
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


# -- every kind of credential × every field ------------------------------------------------------

#: kind -> (planted text, the secret parts that must never be stored) for a serial number
Maker = Callable[[str], tuple[str, list[str]]]


def _pem(s: str) -> tuple[str, list[str]]:
    lines = [f"MIIBOgIBAAJBAK{s}Qq9ZzPl0X", f"b3BlbnNzaC1{s}rZXktdjEAAAA",
             f"Zm9vYmFy{s}YmF6cXV4AAAB"]
    return ("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines)
            + "\n-----END RSA PRIVATE KEY-----", lines)


KINDS: dict[str, Maker] = {
    "aws_access_key_id": lambda s: (f"AKIA{s}QWERTYUIOP"[:20], [f"AKIA{s}QWERTYUIOP"[:20]]),
    "github_token": lambda s: (f"ghp_{s}" + "Q7q7" * 8, [f"{s}" + "Q7q7" * 8]),
    "slack_xapp": lambda s: (f"xapp-1-A0{s}-1234567890123-{s.lower()}0fedcba9876543210",
                             [f"A0{s}-1234567890123-{s.lower()}0fedcba9876543210"]),
    "slack_xoxb": lambda s: (f"xoxb-1234{s}-9876543210987-{s}aBcDeFgHiJkL",
                             [f"1234{s}-9876543210987-{s}aBcDeFgHiJkL"]),
    "openai_key": lambda s: (f"sk-proj-{s}a1B2c3D4e5F6g7H8i9J0", [f"{s}a1B2c3D4e5F6g7H8i9J0"]),
    "jwt": lambda s: (f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOi{s}fQ.{s}sIgNaTuRe0123",
                      [f"eyJzdWIiOi{s}fQ.{s}sIgNaTuRe0123"]),
    "private_key": _pem,
    "url_password": lambda s: (f"postgres://app:Pw{s}x9@db.internal:5432/app", [f"Pw{s}x9"]),
    "password_assignment": lambda s: (f"password=Hx{s}42", [f"Hx{s}42"]),
    "word_colon_password": lambda s: (f"note: password=Nw{s}42", [f"Nw{s}42"]),
    "prose_password": lambda s: (f"my password is hunter{s}!", [f"hunter{s}"]),
    "prose_password_for": lambda s: (f"the password for the db is S3{s}-Pa55",
                                     [f"S3{s}-Pa55"]),
    "pw_colon": lambda s: (f"pw: Pw{s}9z", [f"Pw{s}9z"]),
}


class Planter:
    """Hands out credentials of one kind, each with its own serial, and remembers which field
    each one went into (so a leak names its field)."""

    serial = 0

    def __init__(self, kind: str, needles: dict[str, str], fields: set[str]) -> None:
        self.kind, self.needles, self.fields = kind, needles, fields

    def __call__(self, field: str, around: str = "{}") -> str:
        Planter.serial += 1
        text, secrets = KINDS[self.kind](f"K{Planter.serial:05d}Z")
        for part in secrets:
            self.needles[part] = f"{field} <- {self.kind}"
        self.fields.add(field)
        return around.format(text)


class Recorder:
    """live.http, keeping every answer's text (the answers must not hold a credential)."""

    def __init__(self, live: LiveDaemon) -> None:
        self.live, self.answers = live, []

    def __call__(self, method: str, url: str, *codes: int, **kw: Any) -> Any:
        resp = self.live.http.request(method, url, **kw)
        self.answers.append(f"{method} {url}: {resp.text}")
        assert resp.status_code in (codes or (200, 201, 202)), (url, resp.text)
        if resp.headers.get("content-type", "").startswith("application/json"):
            return resp.json()
        return resp.text


def jsonl(session: str, texts: list[str], cwd: Path) -> str:
    lines = []
    for n, text in enumerate(texts):
        role = "user" if n % 2 == 0 else "assistant"
        content = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(json.dumps({
            "type": role, "message": {"role": role, "content": content},
            "timestamp": f"2025-10-01T10:{n:02d}:00.000Z", "sessionId": session,
            "cwd": str(cwd), "uuid": f"{session}-{n}"}))
    return "\n".join(lines) + "\n"


def mcp(rec: Recorder, n: int, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    answer = rec("POST", "/mcp", json={"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                       "params": {"name": tool, "arguments": args}},
                 headers={"Accept": "application/json, text/event-stream"})
    assert not answer["result"].get("isError"), answer
    return answer["result"]


def plant_everything(live: LiveDaemon, rec: Recorder, plant: Planter, n: int, base: Path,
                     bundle_header: dict[str, Any], memory_record: dict[str, Any]) -> None:
    """One credential of `plant`'s kind in every free-text field of every write path."""
    single_line = plant.kind != "private_key"
    # remember: content, key, tags, who, why, the lossless transcript
    made = rec("POST", "/api/memory/remember", json={
        "content": plant("remember.content", "Remember this: {} for the deploy"),
        "key": plant("remember.key", "deploy credential {}"),
        "tags": ["deploy", plant("remember.tags")], "who": plant("remember.who", "agent {}"),
        "why": plant("remember.why", "because {}"), "source_id": f"chat-{n}",
        "transcript": plant("remember.transcript", "user: {}")})
    # bulk import
    rec("POST", "/api/memory/import", json={"who": plant("import.who"), "items": [{
        "content": plant("import.content", "Imported note {}"),
        "tags": [plant("import.tags")], "who": plant("import.item_who"),
        "why": plant("import.why"), "key": plant("import.key", "imported {}")}]})
    # PATCH, modify, DELETE, recover, forget by id
    mid = rec("POST", "/api/memory/remember", json={"content": f"A plain note {n} to edit"})["id"]
    rec("PATCH", f"/api/memory/{mid}", json={
        "content": plant("patch.content", "A plain note, edited: {}"),
        "tags": [plant("patch.tags")], "who": plant("patch.who"),
        "reason": plant("patch.reason")})
    rec("POST", "/api/memory/modify", json={
        "reason": plant("modify.reason"), "changed_by": plant("modify.changed_by"),
        "patches": [{"id": mid, "content": plant("modify.content", "Edited again: {}"),
                     "tags": [plant("modify.tags")], "who": plant("modify.who"),
                     "reason": plant("modify.patch_reason")}]})
    rec("DELETE", f"/api/memory/{mid}", json={"reason": plant("delete.reason"),
                                              "changed_by": plant("delete.changed_by")})
    rec("POST", f"/api/memory/{mid}/recover", json={"reason": plant("recover.reason"),
                                                    "changed_by": plant("recover.changed_by")})
    rec("POST", f"/api/memory/{made['id']}/feedback", json={
        "helpful": True, "query": plant("feedback.query")})
    rec("POST", "/api/memory/forget", json={
        "ids": [mid], "mode": "execute", "reason": plant("forget.reason"),
        "changed_by": plant("forget.changed_by")})
    # documents, and a document's delete
    doc = rec("POST", "/api/documents", json={
        "content": plant("document.content", "Runbook.\n\nThe service logs in with {}.\n\n"),
        "title": plant("document.title", "Runbook {}"), "tags": [plant("document.tags")],
        "who": plant("document.who")})
    assert wait_for(lambda: live.http.get(f"/api/documents/{doc['id']}").json()["status"]
                    == "done", 60)
    rec("DELETE", f"/api/documents/{doc['id']}", json={
        "reason": plant("document.delete_reason"), "changed_by": plant("document.changed_by")})
    # stated relations and their reason, over HTTP and MCP
    rec("POST", "/api/graph/relations", json={
        "source": plant("relation.source", "svc {}"), "target": plant("relation.target", "db {}"),
        "relation_type": "uses", "reason": plant("relation.reason", "it says so: {}")})
    mcp(rec, 2 * n, "memory_store", {
        "content": plant("mcp.memory_store.content", "Stored over MCP: {}"),
        "tags": [plant("mcp.memory_store.tags")], "who": plant("mcp.memory_store.who"),
        "why": plant("mcp.memory_store.why"),
        "key": plant("mcp.memory_store.key", "mcp key {}")})
    mcp(rec, 2 * n + 1, "knowledge_relate", {
        "source": plant("mcp.knowledge_relate.source", "api {}"),
        "target": plant("mcp.knowledge_relate.target", "queue {}"),
        "relation_type": "calls", "reason": plant("mcp.knowledge_relate.reason")})
    # checkpoints, prompts, compaction notes
    session = f"sess-{n}"
    rec("POST", "/api/checkpoints", json={
        "session_key": session, "note": plant("checkpoint.note", "session context:\n{}\n"),
        "memory_queries": [plant("checkpoint.memory_queries")],
        "recent_remembers": [plant("checkpoint.recent_remembers")]})
    rec("POST", "/api/hooks/user-prompt-submit", json={
        "session_id": session, "prompt": plant("hook.prompt", "use {} to log in")})
    transcripts = base / "transcripts"
    file = transcripts / f"{session}.jsonl"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(jsonl(session, [
        plant("transcript_file.user", "Deploy with {} please"),
        plant("transcript_file.assistant", "Deployed; it authenticated with {}."),
        plant("transcript_file.user2", "And the staging box uses {} too")], base))
    rec("POST", "/api/hooks/pre-compaction", json={
        "session_id": session, "transcript_path": str(file),
        "custom_instructions": plant("hook.custom_instructions", "keep {} in mind")})
    rec("POST", "/api/hooks/session-end", json={
        "session_id": session, "transcript_path": str(file),
        "reason": plant("hook.session_end_reason") if single_line else "logout"})
    body_session = f"body-{n}"
    rec("POST", "/api/hooks/session-end", json={
        "session_id": body_session, "transcript": jsonl(body_session, [
            plant("session_end.transcript.user", "The prod password? {}"),
            plant("session_end.transcript.assistant", "Noted: {}."),
            plant("session_end.transcript.user2", "Also {} for staging")], base)})
    # memory files
    project = base / "project"
    (project / "memory").mkdir(parents=True, exist_ok=True)
    (project / "memory" / f"notes-{n}.md").write_text(
        "# Access\n\n" + plant("memory_file.line", "- CI logs in with {}\n"))
    rec("POST", "/api/files/sync", json={})
    # a bundle: its text fields are scrubbed, an owner id holding a credential is refused
    record = {**memory_record, "id": f"0000bundle{n:04d}", "idempotency_key": None,
              "content": plant("bundle.content", "Bundled: {}"),
              "tags": [plant("bundle.tags")], "who": plant("bundle.who"),
              "why": plant("bundle.why"), "key": plant("bundle.key", "bundle {}"),
              "source_id": f"bundle-{n}"}
    rec("POST", "/api/import/bundle", content="\n".join(
        json.dumps(r) for r in (bundle_header, record)),
        headers={"content-type": "application/x-ndjson"})
    if single_line:
        owned = {**record, "id": f"0000owned{n:04d}", "content": f"Owned note {n}",
                 "agent_id": plant("bundle.agent_id")}
        refused = rec("POST", "/api/import/bundle", 400, content="\n".join(
            json.dumps(r) for r in (bundle_header, owned)),
            headers={"content-type": "application/x-ndjson"})
        assert refused["error"] == "invalid_record" and "agent_id" in refused["message"]
        assert live.http.get(f"/api/memory/{owned['id']}").status_code == 404
        # identity: headers, query string and body fields name an id, never a secret
        for where, kw in (
                ("header.x-mnemonist-agent",
                 {"headers": {"X-Mnemonist-Agent": plant("header.x-mnemonist-agent")}}),
                ("header.x-mnemonist-user",
                 {"headers": {"X-Mnemonist-User": plant("header.x-mnemonist-user")}}),
                ("query.agent_id", {"params": {"agent_id": plant("query.agent_id")}}),
                ("remember.agent_id", {"json_extra": {"agent_id": plant("remember.agent_id")}}),
                ("remember.user_id", {"json_extra": {"user_id": plant("remember.user_id")}})):
            body = {"content": f"Scoped note {n} via {where}", **kw.pop("json_extra", {})}
            answer = rec("POST", "/api/memory/remember", 400, json=body, **kw)
            assert "credential" in answer["message"], answer
        assert not live.http.get("/api/memories", params={"limit": 500}).json()[
            "memories"] or all(f"Scoped note {n}" not in m["content"] for m in live.http.get(
                "/api/memories", params={"limit": 500}).json()["memories"])


def test_every_kind_of_credential_in_every_field_is_replaced(tmp_path: Path) -> None:
    """The matrix of issue 30: each kind of credential (KINDS) in each free-text field of each
    write route and tool, through the real HTTP API of a real daemon; then no credential in
    any column of any table, in the bytes of the database, its WAL and shared memory, in
    `mnemonist export` or in any answer. Owner ids (agent_id, user_id: body, query string,
    headers, bundles) are names matched exactly, so one holding a credential is refused
    (400), not rewritten. The pipeline's LLM paths are the test above's."""
    base = tmp_path / "work"
    config = {"hooks": {"transcriptRoots": [str(base / "transcripts")]},
              "sessions": {"min_substantive_turns": 1},
              "files": {"roots": [str(base / "project")], "watch": False,
                        "interval_minutes": 0}}
    needles: dict[str, str] = {}
    fields: set[str] = set()
    with run_daemon(tmp_path / "home", config) as live:
        rec = Recorder(live)
        seed = rec("POST", "/api/memory/remember", json={"content": "A seed for the bundle"})
        exported = live.http.get("/api/export").text.splitlines()
        header = json.loads(exported[0])
        memory_record = next(r for r in map(json.loads, exported[1:])
                             if r["kind"] == "memory" and r["id"] == seed["id"])
        for n, kind in enumerate(KINDS):
            plant_everything(live, rec, Planter(kind, needles, fields), n, base, header,
                             memory_record)
        assert live.service.sessions.wait_sessions(120)
        live.flush()
        conn = live.service.core.db.reader()
        assert conn.execute("SELECT COUNT(*) FROM memories WHERE source_type = 'session'"
                            ).fetchone()[0] >= 3 * len(KINDS)  # the transcripts were read
        notes = [r[0] for r in conn.execute("SELECT note FROM relations WHERE note IS NOT NULL")]
        # (both Slack kinds scrub to the same entity names: one relation, stated twice)
        assert len(notes) >= 2 * (len(KINDS) - 1) and all("[REDACTED:" in n for n in notes)
        for route in ("/api/memories?limit=500&include_deleted=true", "/api/checkpoints",
                      "/api/sessions", "/api/entities?limit=500", "/api/documents",
                      "/api/files", "/api/export?all_scopes=true"):
            rec("GET", route)
        exported_cli = CliRunner().invoke(cli, ["--url", live.url, "export", "--all-scopes"])
        assert exported_cli.exit_code == 0, exported_cli.output
        time.sleep(0.2)
        secrets = list(needles)
        leaks = everywhere(live.daemon.paths.database, secrets)
        leaks += [f"mnemonist export: {s}" for s in secrets
                  if s.lower() in exported_cli.output.lower()]
        leaks += [f"answer {a.split(':', 1)[0]}: {s}" for a in rec.answers for s in secrets
                  if s.lower() in a.lower()]
    assert leaks == [], f"{len(leaks)} leaks of {len(secrets)} secrets planted:\n" + "\n".join(
        f"{leak}  <- {needles.get(leak.rsplit(': ', 1)[1], '?')}" for leak in leaks)
    # the matrix: every kind in every field (a key block spans lines: not in the 7 fields that
    # are one line by nature, headers and ids); 70 fields × 13 kinds - 7 = 903 when written
    per_kind = Counter(where.split(" <- ")[1] for where in set(needles.values()))
    assert set(per_kind) == set(KINDS) and len(fields) >= 70
    assert all(n >= len(fields) - 7 for n in per_kind.values()), per_kind


def test_a_transcript_body_is_scrubbed_line_by_line_and_stays_json_lines() -> None:
    """The body a session-end hook sends is stored in its job's payload: scrubbed before, each
    JSON line still one valid JSON line, the same lines scrubbed to the same bytes when a
    longer copy comes later (the job's read position stays valid)."""
    key_block, key_lines = _pem("K99999Z")
    lines = [
        json.dumps({"type": "user", "message": {"content": f"deploy key:\n{key_block}"}}),
        json.dumps({"type": "tool_use", "input": {"password": "hunter2hunter2"}}),
        json.dumps({"type": "user", "message": {"content": "my password is Pw0rd!x and"}}),
        json.dumps({"type": "assistant", "message": {"content": "nothing secret here"}}),
        "plain text with AKIA" + "QWERTYUIOP234567",
        key_block,
    ]
    body = "\n".join(lines) + "\n"
    clean = scrub_transcript_body(body)
    for secret in (*key_lines, "hunter2hunter2", "Pw0rd!x", "QWERTYUIOP234567"):
        assert secret not in clean
    out = clean.split("\n")
    assert len(out) == len(body.split("\n"))  # line numbers stay
    for line in out[:4]:
        json.loads(line)
    assert out[3] == lines[3]  # a clean line is kept byte for byte
    longer = scrub_transcript_body(body + json.dumps({"type": "user", "message": {
        "content": "and ghp_" + "Q7q7" * 9}}) + "\n")
    assert longer.startswith(clean) and "Q7q7Q7q7" not in longer
    assert scrub_transcript_body("no secrets\n") == "no secrets\n"
