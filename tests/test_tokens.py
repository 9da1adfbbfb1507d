"""Named tokens, one per person (SQLite): `mnemonist token add | list | revoke | rotate` keep
only a hash; once a token exists every request needs one, and a request's identity and the
scopes it may read come from its token — a claim of anyone else (header, query string, body,
`users: ["*"]`, MCP arguments) is a 403 naming both; only an owner token (`--owner`, and
`server.token`) reads other people's private memories; history names the token and the
daemon; a revoked token is refused at its next request. Identity headers get the body's
limits on every route. (Two daemons on one PostgreSQL: test_tokens_postgres.py.)"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from click.testing import CliRunner, Result
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import LiveDaemon, run_daemon
from mcp_flow import call
from mnemonist.cli.main import cli
from mnemonist.store.db import Database
from test_mcp_http import http_session

SERVER_TOKEN = "the-daemons-own-owner-token-0123"
DAEMON = "daemon-a"
SECRET = "Alice keeps the quokkaberry launch codes in drawer nine"
BOB_NOTE = "Bob prefers the quokkaberry dashboard in dark mode"
SHARED = "The quokkaberry service deploys on Thursdays"


def token_cli(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["token", *args, "--home", str(home)])


def made(home: Path, name: str, *options: str) -> str:
    """A new token's secret, from `mnemonist token add` (stdout holds it alone)."""
    out = token_cli(home, "add", name, *options)
    assert out.exit_code == 0, out.output
    secret = out.stdout.strip()
    assert re.fullmatch(r"mn_[A-Za-z0-9_-]{43}", secret), out.stdout
    assert "shown only now" in out.stderr
    return secret


def as_token(live: LiveDaemon, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=live.url, headers=headers, timeout=60)


def ids(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [r["id"] for r in answer.json()["results"]]


def refused(resp: httpx.Response, code: str = "identity_mismatch", *named: str
            ) -> dict[str, Any]:
    assert resp.status_code == 403, resp.text
    body = resp.json()
    assert body["error"] == code, body
    for name in named:
        assert repr(name) in body["message"], (name, body["message"])
    return body


@dataclass
class Team:
    live: LiveDaemon
    home: Path
    tokens: dict[str, str]  # name -> secret
    alice_private: str
    bob_private: str
    shared: str

    def http(self, who: str | None) -> httpx.Client:
        secret = SERVER_TOKEN if who == "server" else self.tokens.get(who or "")
        return as_token(self.live, secret)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    home = tmp_path_factory.mktemp("team")
    config = {"server": {"token": SERVER_TOKEN, "name": DAEMON}}
    with run_daemon(home, config) as live:
        tokens = {"alice": made(home, "alice", "--user", "alice"),
                  "bob": made(home, "bob", "--user", "bob"),
                  "boss": made(home, "boss", "--owner")}
        with as_token(live, tokens["alice"]) as alice, as_token(live, tokens["bob"]) as bob, \
                as_token(live, SERVER_TOKEN) as server:
            mine = alice.post("/api/memory/remember", json={"content": SECRET,
                                                             "user_id": "alice"})
            assert mine.status_code == 201 and mine.json()["user_id"] == "alice", mine.text
            note = bob.post("/api/memory/remember", json={"content": BOB_NOTE, "user_id": "bob"})
            assert note.status_code == 201, note.text
            shared = server.post("/api/memory/remember", json={"content": SHARED})
            assert shared.status_code == 201, shared.text
        yield Team(live, home, tokens, mine.json()["id"], note.json()["id"],
                   shared.json()["id"])


# -- the CLI: made once, stored as a hash ------------------------------------------------------

def test_the_cli_works_on_a_stopped_home_and_keeps_only_hashes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    secret = made(home, "carol", "--user", "carol", "--agent", "laptop")
    listed = token_cli(home, "list", "--json")
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.stdout)
    assert row == {"name": "carol", "user_id": "carol", "agent_id": "laptop", "owner": False,
                   "created_at": row["created_at"], "revoked_at": None}
    table = token_cli(home, "list")
    assert "carol" in table.stdout and "laptop" in table.stdout
    db = Database(home / "memory" / "memories.db")
    try:
        (stored,) = db.reader().execute("SELECT token_hash FROM api_tokens").fetchall()
    finally:
        db.close()
    assert stored[0] == hashlib.sha256(secret.encode()).hexdigest()
    files = [p for p in (home / "memory").iterdir() if p.name.startswith("memories.db")]
    for path in files:  # the token itself is nowhere: not the file, not its WAL
        assert secret.encode() not in path.read_bytes(), path
    for shown in (listed.stdout, table.stdout):
        assert secret not in shown and stored[0] not in shown

    revoked = token_cli(home, "revoke", "carol")
    assert revoked.exit_code == 0 and "revoked token 'carol'" in revoked.stdout
    again = token_cli(home, "revoke", "carol")
    assert again.exit_code == 1 and "was revoked" in again.stderr
    assert json.loads(token_cli(home, "list", "--json").stdout)[0]["revoked_at"]


@pytest.mark.parametrize(("args", "why"), [
    (("add", "carol"), "exists already"),  # made above, in this home
    (("add", "server"), "taken by server.token"),
    (("add", "no spaces"), "token name"),
    (("add", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"), "looks like a credential"),
    (("add", "ok", "--user", "x" * 201), "200 characters"),
    (("add", "ok", "--agent", "*"), "every scope"),
    (("revoke", "nobody"), "no token named 'nobody'"),
    (("rotate", "nobody"), "no token named 'nobody'"),
])
def test_the_cli_refuses_what_it_cannot_do(tmp_path: Path, args: tuple[str, ...], why: str
                                           ) -> None:
    made(tmp_path, "carol")
    out = token_cli(tmp_path, *args)
    assert out.exit_code != 0 and why in out.output, out.output
    assert [r["name"] for r in json.loads(token_cli(tmp_path, "list", "--json").stdout)] == [
        "carol"]


# -- identity comes from the token ---------------------------------------------------------------

def test_once_a_token_exists_every_request_needs_one(team: Team) -> None:
    with team.http(None) as nobody:
        resp = nobody.get("/api/memories")
        assert resp.status_code == 401 and resp.json()["error"] == "unauthorized"
        assert nobody.get("/health").status_code == 200
    with as_token(team.live, "mn_" + "x" * 43) as wrong:
        assert wrong.get("/api/memories").status_code == 401


def test_bob_cannot_read_alices_private_memory_by_any_claim(team: Team) -> None:
    query = {"query": "quokkaberry launch codes", "min_score": 0}
    with team.http("bob") as bob:
        assert bob.get(f"/api/memory/{team.alice_private}").status_code == 404
        mine = ids(bob.post("/api/memory/recall", json=query))
        assert team.alice_private not in mine and team.bob_private in mine
        assert team.shared in mine
        claims = [
            bob.get(f"/api/memory/{team.alice_private}", headers={"X-Mnemonist-User": "alice"}),
            bob.post("/api/memory/recall", json={**query, "user_id": "alice"}),
            bob.post("/api/memory/recall", json={**query, "users": ["*"]}),
            bob.post("/api/memory/recall", json={**query, "users": ["bob", "alice"]}),
            bob.get("/api/memories", params={"users": "*"}),
            bob.get("/api/memories", params={"agents": "*"}),
            bob.get(f"/api/memory/{team.alice_private}/history", params={"user_id": "alice"}),
            bob.post("/api/hooks/user-prompt-submit", json={
                "session_id": "bob-1", "prompt": "where are the launch codes?",
                "user_id": "alice"}),
            bob.post("/api/hooks/session-end", json={"session_id": "bob-1",
                                                     "user_id": "alice"}),
        ]
        for resp in claims:
            body = refused(resp, "identity_mismatch", "bob")
            assert body["token"] == "bob" and body["token_identity"]["user_id"] == "bob"
            assert body["claimed"] in ("alice", ["*"], "*", ["bob", "alice"]), body
            assert SECRET not in resp.text
        body = refused(bob.post("/api/memory/recall", json={**query, "user_id": "alice"}))
        assert "'alice'" in body["message"] and "'bob'" in body["message"]
        # an agent the token is not bound to is another identity too
        refused(bob.get("/api/memories", headers={"X-Mnemonist-Agent": "claude"}))
        # claiming its own identity is fine
        own = bob.post("/api/memory/recall", json={**query, "users": ["bob"]})
        assert team.bob_private in ids(own)


def test_writes_are_private_to_the_token_only(team: Team) -> None:
    with team.http("bob") as bob:
        refused(bob.post("/api/memory/remember", json={"content": "planted for alice",
                                                        "user_id": "alice"}), "identity_mismatch")
        refused(bob.post("/api/memory/import", json={"items": [
            {"content": "planted by import", "user_id": "alice"}]}), "identity_mismatch")
        refused(bob.post("/api/graph/relations", json={
            "source": "A", "target": "B", "relation_type": "depends_on", "reason": "x",
            "user_id": "alice"}), "identity_mismatch")
        for resp in (bob.get("/api/export", params={"all_scopes": "true"}),
                     bob.post("/api/backup", json={"name": "bob.db"}),
                     bob.post("/api/import/bundle", content=b"{}\n",
                              headers={"content-type": "application/x-ndjson"})):
            refused(resp, "owner_only", "bob")
        export = bob.get("/api/export")
        assert export.status_code == 200 and BOB_NOTE in export.text
        assert SECRET not in export.text


def test_alice_reads_her_own_and_only_an_owner_reads_everyones(team: Team) -> None:
    query = {"query": "quokkaberry launch codes", "min_score": 0}
    with team.http("alice") as alice:
        assert alice.get(f"/api/memory/{team.alice_private}").json()["content"] == SECRET
        assert team.alice_private in ids(alice.post("/api/memory/recall", json=query))
        assert team.bob_private not in ids(alice.post("/api/memory/recall", json=query))
    for owner in ("boss", "server"):
        with team.http(owner) as boss:
            # no claim: an owner bound to nobody reads global memories, as anyone would
            assert team.alice_private not in ids(boss.post("/api/memory/recall", json=query))
            everyone = ids(boss.post("/api/memory/recall", json={**query, "users": ["*"]}))
            assert {team.alice_private, team.bob_private} <= set(everyone)
            got = boss.get(f"/api/memory/{team.alice_private}",
                           headers={"X-Mnemonist-User": "alice"})
            assert got.status_code == 200 and got.json()["content"] == SECRET
            assert SECRET in boss.get("/api/export", params={"all_scopes": "true"}).text


def test_history_names_the_token_and_the_daemon(team: Team) -> None:
    with team.http("alice") as alice:
        made_now = alice.post("/api/memory/remember", json={
            "content": "Alice moved the quokkaberry standup to ten", "user_id": "alice"})
        mid = made_now.json()["id"]
        patched = alice.patch(f"/api/memory/{mid}", json={
            "importance": 0.9, "reason": "it matters", "changed_by": "someone-else"})
        assert patched.status_code == 200, patched.text
        deleted = alice.request("DELETE", f"/api/memory/{mid}", params={"reason": "moved back"})
        assert deleted.status_code == 200, deleted.text
        recovered = alice.post(f"/api/memory/{mid}/recover", json={"reason": "oops"})
        assert recovered.status_code == 200, recovered.text
        events = alice.get(f"/api/memory/{mid}/history").json()["events"]
    assert [e["event"] for e in events] == ["created", "modified", "deleted", "recovered"]
    assert {e["changed_by"] for e in events} == {f"token:alice via {DAEMON}"}
    row = team.live.query("SELECT updated_by, who FROM memories WHERE id = ?", mid)[0]
    assert row["updated_by"] == f"token:alice via {DAEMON}"


def test_mcp_follows_the_token(team: Team) -> None:
    async def main() -> None:
        async with http_session(team.live.url, team.tokens["bob"]) as bob:
            got = await bob.call_tool("memory_get", {"id": team.alice_private})
            assert got.is_error and json.loads(got.content[0].text)["error"] == "not_found"
            for args in ({"user_id": "alice"}, {"users": ["*"]}, {"agents": ["*"]}):
                out = await bob.call_tool("memory_search", {"query": "launch codes", **args})
                body = json.loads(out.content[0].text)
                assert out.is_error and body["error"] == "identity_mismatch", body
                assert "'bob'" in body["message"] and SECRET not in out.content[0].text
            plain = await call(bob, "memory_search", {"query": "quokkaberry launch codes",
                                                      "min_score": 0})
            assert SECRET not in json.dumps(plain)
            stored = await bob.call_tool("memory_store", {"content": "x", "user_id": "alice"})
            assert stored.is_error and "identity_mismatch" in stored.content[0].text
        async with http_session(team.live.url, team.tokens["alice"]) as alice:
            got = await call(alice, "memory_get", {"id": team.alice_private})
            assert got["content"] == SECRET
            note = await call(alice, "memory_store", {"content": "Alice's quokkaberry MCP note",
                                                      "user_id": "alice"})
            await call(alice, "memory_modify", {"id": note["id"], "importance": 0.8,
                                                "reason": "via MCP"})
            history = await call(alice, "memory_history", {"id": note["id"]})
            assert {e["changed_by"] for e in history["events"]} == {
                f"token:alice via {DAEMON}"}

    anyio.run(main)


@asynccontextmanager
async def mcp_with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def test_mcp_headers_are_claims_too(team: Team) -> None:
    async def main() -> None:
        headers = {"Authorization": f"Bearer {team.tokens['bob']}",
                   "X-Mnemonist-User": "alice"}
        async with mcp_with_headers(team.live.url, headers) as bob:
            for name, args in (("memory_search", {"query": "launch codes"}),
                               ("memory_get", {"id": team.alice_private}),
                               ("memory_store", {"content": "bob as alice"})):
                out = await bob.call_tool(name, args)
                body = json.loads(out.content[0].text)
                assert out.is_error and body["error"] == "identity_mismatch", (name, body)
                assert "the header names 'alice'" in body["message"]
        own = {"Authorization": f"Bearer {team.tokens['bob']}", "X-Mnemonist-User": "bob"}
        async with mcp_with_headers(team.live.url, own) as bob:
            found = await call(bob, "memory_search", {"query": "quokkaberry dark mode",
                                                      "min_score": 0})
            assert team.bob_private in [r["id"] for r in found["results"]]

    anyio.run(main)


def test_a_token_made_or_revoked_counts_at_the_next_request(team: Team) -> None:
    secret = made(team.home, "dave", "--user", "dave")
    with as_token(team.live, secret) as dave:
        assert dave.get("/api/memories").status_code == 200  # no restart
        assert token_cli(team.home, "revoke", "dave").exit_code == 0
        resp = dave.get("/api/memories")
        assert resp.status_code == 401 and "'dave' was revoked" in resp.json()["message"]
    secret = made(team.home, "erin", "--user", "erin")
    rotated = token_cli(team.home, "rotate", "erin")
    assert rotated.exit_code == 0, rotated.output
    with as_token(team.live, secret) as old, as_token(team.live, rotated.stdout.strip()) as new:
        assert old.get("/api/memories").status_code == 401
        assert new.get("/api/memories").status_code == 200


def test_the_dashboard_is_an_owners(team: Team) -> None:
    with team.http(None) as browser:
        assert browser.get("/", headers={"accept": "text/html"}).status_code == 303
        bob = browser.post("/login", json={"token": team.tokens["bob"]})
        assert bob.status_code == 403 and bob.json()["error"] == "owner_only"
        assert "set-cookie" not in bob.headers
        owner = made(team.home, "frank", "--owner")
        ok = browser.post("/login", json={"token": owner})
        assert ok.status_code == 204 and owner not in ok.headers["set-cookie"]
        assert browser.get("/").status_code == 200  # the cookie opens the pages
        assert browser.get("/api/memories", params={"users": "*"}).status_code == 200
        assert token_cli(team.home, "revoke", "frank").exit_code == 0
        assert browser.get("/api/memories").status_code == 401
        assert browser.get("/", headers={"accept": "text/html"}).status_code == 303
    with team.http("bob") as bob:
        refused(bob.get("/"), "owner_only", "bob")
        refused(bob.get(f"/ui/memory/{team.bob_private}"), "owner_only")


# -- without named tokens: as before, and identity headers keep the body's limits ------------------

@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    with run_daemon(tmp_path_factory.mktemp("plain")) as live:
        yield live


def test_without_named_tokens_identity_claims_work_as_before(plain: LiveDaemon) -> None:
    private = plain.remember("Gina's quokkaberry scratch note", agent_id="gina")["id"]
    http = plain.http
    assert http.get(f"/api/memory/{private}").status_code == 404
    assert http.get(f"/api/memory/{private}",
                    headers={"X-Mnemonist-Agent": "gina"}).status_code == 200
    assert private in json.dumps(http.get("/api/memories", params={"agents": "*"}).json())
    mid = plain.remember("A quokkaberry fact to patch")["id"]
    http.patch(f"/api/memory/{mid}", json={"importance": 0.7, "reason": "x"})
    events = http.get(f"/api/memory/{mid}/history").json()["events"]
    assert [e["changed_by"] for e in events] == ["api", "api"]


LONG = "x" * 5000


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/api/memory/remember", {"content": "a long-named agent wrote this"}),
    ("GET", "/api/memories", None),
    ("POST", "/api/hooks/session-end", {"session_id": "long-header"}),
    ("POST", "/api/checkpoints", {"session_key": "long-header", "trigger": "explicit"}),
    ("GET", "/api/status", None),
    ("GET", "/health", None),
])
@pytest.mark.parametrize("header", ["X-Mnemonist-Agent", "X-Mnemonist-User"])
def test_identity_headers_have_the_body_fields_limits(plain: LiveDaemon, method: str, path: str,
                                                      body: dict[str, Any] | None,
                                                      header: str) -> None:
    before = plain.query("SELECT COUNT(*) FROM memories")[0][0]
    resp = plain.http.request(method, path, json=body, headers={header: LONG})
    assert resp.status_code == 400, resp.text
    answer = resp.json()
    assert answer["error"] == "invalid_request" and answer["field"] == header
    assert header in answer["message"] and "200 characters" in answer["message"]
    assert plain.query("SELECT COUNT(*) FROM memories")[0][0] == before
    assert not plain.query("SELECT id FROM memories WHERE length(who) > 200")


def test_an_identity_header_at_the_limit_is_stored(plain: LiveDaemon) -> None:
    agent = "a" * 200
    resp = plain.http.post("/api/memory/remember", json={"content": "at the limit exactly"},
                           headers={"X-Mnemonist-Agent": agent})
    assert resp.status_code == 201, resp.text
    assert plain.query("SELECT who FROM memories WHERE id = ?", resp.json()["id"])[0][0] == agent


def test_mcp_identity_headers_have_the_same_limits(plain: LiveDaemon) -> None:
    resp = plain.http.post("/mcp", json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "memory_store", "arguments": {"content": "via mcp"}}},
        headers={"X-Mnemonist-Agent": LONG, "Accept": "application/json, text/event-stream"})
    assert resp.status_code == 400 and resp.json()["field"] == "X-Mnemonist-Agent"
