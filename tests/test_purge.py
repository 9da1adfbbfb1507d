"""Purge: a hard delete removes the memory's text from every table, from the FTS5 segments and
from the database file and its WAL, leaving a `purged` tombstone without content.

A secret the scrubber does not recognise (a made-up passphrase) goes through every place a
memory's text can reach: the row, its keyword and context indexes, the neighbours' context
texts and their vectors, an edit (history old/new content), hints, the pipeline's derived
fact, its audit rows and job results, the graph (an entity named after it), the archive (the
pipeline superseded the derived fact), then a soft delete. After the purge the needle is in no
column of any table and in no byte of the files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import LiveDaemon, current_store, run_daemon
from llm_servers import Call, FakeLlmServer
from mnemonist.cli.main import cli
from mnemonist.model.requests import RememberRequest
from mnemonist.settings import Paths
from mnemonist.store import memories
from pipeline_helpers import Brain, decision_json, facts_json, pipeline_config, wait_for
from secret_scan import file_hits, store_everywhere, stored_hits, table_hits

pytestmark = pytest.mark.both_stores

#: a secret the scrubber does not recognise: plain lower-case letters, which "the passphrase is
#: ..." in prose does not redact (a digit or a symbol would: `prose_password`)
SECRET = "zorblattwibquux"
NEEDLES = [SECRET, "wibquux", "zorblatt"]


class SecretBrain(Brain):
    """Extraction, decisions and hints for the scenario (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.extractions["passphrase is " + SECRET] = facts_json(
            (f"Ops use {SECRET} as the staging vault passphrase", 0.9),
            entities=[("staging vault", "opens with", SECRET, 0.9)])
        self.extractions["moved to the team password manager"] = facts_json(
            ("The staging vault passphrase lives in the team password manager", 0.9))
        self.decide = self._decide

    @staticmethod
    def _decide(call: Call) -> str:
        for cid, content in call.candidates():
            if SECRET in content and "password manager" in call.prompt:
                return decision_json("update", cid, "the passphrase moved")
        return decision_json("add", reason="new")

    def __call__(self, call: Call) -> Any:
        if call.kind == "hints":
            if SECRET not in call.note_text():
                return json.dumps({"hints": ["What did we set up?"]})
            return json.dumps({"hints": [f"What does {SECRET} open?",
                                         "What is the staging vault passphrase?"]})
        return super().__call__(call)


def config(url: str) -> dict[str, Any]:
    cfg = pipeline_config(url, embedding={"provider": "local"}, allowUpdateDelete=True,
                          hints={"enabled": True, "poll": 1000})
    cfg["search"] = {"context_window": 2, "context_vector_weight": 0.3}
    return cfg


def quiet(live: LiveDaemon) -> None:
    """Every job done and every vector written."""
    def idle() -> bool:
        row = live.service.core.db.reader().execute(
            "SELECT COUNT(*) FROM memory_jobs WHERE status IN ('pending', 'leased')").fetchone()
        return row[0] == 0
    assert wait_for(idle, 60), "jobs did not finish"
    live.flush()


def test_a_purged_secret_is_in_no_table_and_no_byte_of_the_files(tmp_path: Path) -> None:
    with FakeLlmServer(script=SecretBrain()) as srv, run_daemon(tmp_path, config(srv.url)) as live:
        db = live.daemon.paths.database
        src = {"source_id": "chat-7", "project": "ops"}
        live.remember("We set up the staging vault this morning", **src,
                      occurred_at="2026-05-01T10:00:00Z")
        mid = live.remember(f"The staging vault passphrase is {SECRET}", **src,
                            occurred_at="2026-05-01T10:01:00Z")["id"]
        live.remember("Next we configure the nightly backups", **src,
                      occurred_at="2026-05-01T10:02:00Z")
        quiet(live)
        resp = live.http.patch(f"/api/memory/{mid}", json={
            "content": f"The staging vault passphrase is {SECRET}, rotated monthly",
            "tags": ["vault"], "reason": "add the rotation"})
        assert resp.status_code == 200, resp.text
        quiet(live)
        later = live.remember("The staging vault passphrase moved to the team password manager",
                              project="ops")["id"]
        quiet(live)
        derived = [m for m in live.http.get("/api/memories", params={
            "who": "pipeline-v2", "include_deleted": "true", "limit": 100}).json()["memories"]
            if SECRET in m["content"]]
        assert len(derived) == 1
        # the scenario reached every place it should: otherwise the test proves nothing
        reached = stored_hits(live, [SECRET])
        for place in ("memories.content", "memory_history.old_content", "memory_hints.hint",
                      "memory_context.text", "memory_archive.content", "entities.name",
                      "memory_history.metadata", "memory_jobs.result"):
            assert f"{place}: {SECRET}" in reached, (place, reached)
        assert live.http.request("DELETE", f"/api/memory/{mid}",
                                 json={"reason": "leaked"}).status_code == 200

        out = live.http.post("/api/memory/forget", json={
            "ids": [derived[0]["id"]], "mode": "execute", "reason": "leaked", "force": True})
        assert out.status_code == 200 and out.json()["ids"] == [derived[0]["id"]], out.text
        resp = live.http.request("DELETE", f"/api/memory/{mid}",
                                 json={"reason": "leaked secret", "purge": True})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["status"] == "purged" and body["wasDeleted"] is True
        assert body["walTruncated"] is True

        left = store_everywhere(live, NEEDLES)
        assert left == [], "\n".join(left)
        assert live.http.get(f"/api/memory/{mid}").status_code == 404
        events = live.http.get(f"/api/memory/{mid}/history").json()["events"]
        assert [e["event"] for e in events][-1] == "purged"
        assert events[-1]["reason"] == "leaked secret" and events[-1]["changed_by"] == "api"
        assert all(e["old_content"] is None and e["new_content"] is None for e in events)
        assert "modified" in [e["event"] for e in events]  # the trail stays, without text
        # what did not hold the secret is untouched: the fact that superseded the purged one
        # keeps its text, in its row and in its own history
        assert live.http.get(f"/api/memory/{later}").json()["content"].startswith("The staging")
        successor = [m for m in live.http.get("/api/memories", params={
            "who": "pipeline-v2"}).json()["memories"] if "password manager" in m["content"]]
        assert len(successor) == 1
        created = live.http.get(f"/api/memory/{successor[0]['id']}/history").json()["events"][0]
        assert created["new_content"] == successor[0]["content"]
        assert live.recall("nightly backups")["results"]
        if current_store() == "sqlite":
            assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_purge_of_a_soft_deleted_memory_and_its_answers(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as live:
        token = "quarkfizzle0042blob"
        mid = live.remember(f"The lab door code is {token}")["id"]
        (pinned,) = [live.remember(f"critical: the alarm code is {token}x")["id"]]
        live.flush()
        # a pinned live memory needs force, like a delete
        resp = live.http.request("DELETE", f"/api/memory/{pinned}",
                                 json={"reason": "x", "purge": True})
        assert resp.status_code == 409 and resp.json()["error"] == "pinned"
        resp = live.http.request("DELETE", f"/api/memory/{pinned}",
                                 json={"reason": "x", "purge": True, "force": True})
        assert resp.status_code == 200 and resp.json()["wasDeleted"] is False
        # soft delete, then purge (a delete without purge on it stays a 409)
        live.http.request("DELETE", f"/api/memory/{mid}", json={"reason": "oops"})
        again = live.http.request("DELETE", f"/api/memory/{mid}", json={"reason": "again"})
        assert again.status_code == 409 and again.json()["error"] == "already_deleted"
        resp = live.http.request("DELETE", f"/api/memory/{mid}",
                                 params={"reason": "remove it", "purge": "true"})
        assert resp.status_code == 200, resp.text
        assert resp.json()["purged"]["history_rows"] == 2  # created, deleted
        # purging twice: only the tombstone is left, and purging it again changes no text
        resp = live.http.request("DELETE", f"/api/memory/{mid}",
                                 json={"reason": "again", "purge": True})
        assert resp.status_code == 200 and resp.json()["wasDeleted"] is True
        assert live.http.request("DELETE", "/api/memory/no-such-id",
                                 json={"reason": "x", "purge": True}).status_code == 404
        assert store_everywhere(live, [token]) == []


def test_cli_forget_purge(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as live:
        token = "wibblecorn5531zap"
        mid = live.remember(f"The router admin word is {token}")["id"]
        live.http.request("DELETE", f"/api/memory/{mid}", json={"reason": "first"})
        out = CliRunner().invoke(cli, ["--url", live.url, "forget", mid, "--purge", "--yes",
                                       "--reason", "leaked"], catch_exceptions=False)
        assert out.exit_code == 0, out.output
        assert "purged 1" in out.output
        assert store_everywhere(live, [token]) == []


def test_retention_purges_the_text_of_expired_tombstones(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as live:
        token = "glimmerpost8820vex"
        svc = live.service
        mid = svc.memories.remember(RememberRequest(content=f"The wifi key is {token}"))["id"]
        live.http.request("DELETE", f"/api/memory/{mid}", json={"reason": "old"})
        assert stored_hits(live, [token])  # the tombstone keeps it
        with svc.core.db.write_tx() as conn:
            conn.execute("UPDATE memories SET deleted_at = '2000-01-01T00:00:00.000Z'"
                         " WHERE id = ?", (mid,))
        assert live.daemon.retention.sweep().tombstones == 1
        assert store_everywhere(live, [token]) == []
        events = [e["event"] for e in svc.reads.history(mid)["events"]]
        assert events == ["created", "deleted", "purged"]


@pytest.mark.sqlite_only("reads the bytes of the SQLite file and its WAL")
def test_forget_force_clears_the_text_from_the_file(tmp_path: Path) -> None:
    """The text is in the database file (checkpointed there), then a forget with force: its
    bytes are gone from the file, not left in free space (secure_delete, FTS merge,
    checkpoint), and the other memories are intact."""
    with run_daemon(tmp_path) as live:
        token = "plonkvista4471mur"
        filler = [live.remember(f"Filler memory number {i} about the garden")["id"]
                  for i in range(30)]
        mid = live.remember(f"The safe combination is {token}")["id"]
        live.flush()
        db = live.daemon.paths.database
        live.service.core.db.checkpoint()
        assert file_hits(db, [token])  # it is in the file now
        out = live.http.post("/api/memory/forget", json={
            "ids": [mid], "mode": "execute", "reason": "x", "force": True}).json()
        assert out["walTruncated"] is True
        assert file_hits(db, [token]) == []
        assert all(live.http.get(f"/api/memory/{m}").status_code == 200 for m in filler)


@pytest.mark.sqlite_only("replays SQLite's migration 9 on a SQLite file")
def test_migration_9_clears_what_earlier_hard_deletes_left(tmp_path: Path) -> None:
    """A database from before purges: a hard delete removed the row but kept its text in the
    history. Migration 9 empties that history (and leaves live memories' history alone)."""
    token = "frobnitz9917lark"
    with run_daemon(tmp_path) as live:
        gone = live.remember(f"The garage code is {token}")["id"]
        kept = live.remember(f"A live note that mentions {token}x too")["id"]
        with live.service.core.db.write_tx() as conn:  # the old hard delete: row and indexes
            memories.hard_delete(conn, gone)
            conn.execute("DELETE FROM schema_migrations WHERE version = 9")
    assert table_hits(Paths(tmp_path).database, [f"is {token}"])
    with run_daemon(tmp_path) as live:  # start-up applies migration 9 again
        events = live.service.reads.history(gone)["events"]
        assert events and all(e["new_content"] is None for e in events)
        assert live.service.reads.history(kept)["events"][0]["new_content"].endswith(
            f"{token}x too")
        assert table_hits(live.daemon.paths.database, [f"is {token}"]) == []
