"""Named tokens on a team's PostgreSQL: two daemons share one database, so a token made (or
revoked) with `mnemonist token` on either home counts on both at their next request. Bob's
token cannot read Alice's private memory through either daemon by any claim (header, body
`user_id`, `users: ["*"]`, MCP); Alice's can; history names her token and the daemon each
change came through."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx

from conftest import LiveDaemon, run_daemon
from mcp_flow import call
from test_mcp_http import http_session
from test_tokens import as_token, ids, made, refused, token_cli

SECRET = "Alice keeps the wombatfig launch codes in locker twelve"
QUERY = {"query": "wombatfig launch codes", "min_score": 0}


def _config(url: str, name: str) -> dict:
    return {"storage": {"url": url}, "server": {"name": name}}


def _bob_sees_nothing(daemon: LiveDaemon, token: str, private: str) -> None:
    with as_token(daemon, token) as bob:
        assert bob.get(f"/api/memory/{private}").status_code == 404
        assert private not in ids(bob.post("/api/memory/recall", json=QUERY))
        listed = bob.get("/api/memories", params={"limit": 100})
        assert listed.status_code == 200 and SECRET not in listed.text
        for resp in (
            bob.get(f"/api/memory/{private}", headers={"X-Mnemonist-User": "alice"}),
            bob.post("/api/memory/recall", json=QUERY, headers={"X-Mnemonist-User": "alice"}),
            bob.post("/api/memory/recall", json={**QUERY, "user_id": "alice"}),
            bob.post("/api/memory/recall", json={**QUERY, "users": ["*"]}),
            bob.post("/api/memory/recall", json={**QUERY, "users": ["*"], "agents": ["*"]}),
            bob.get("/api/memories", params={"users": "*"}),
            bob.get(f"/api/memory/{private}", params={"user_id": "alice"}),
            bob.post("/api/memory/forget", json={"query": "wombatfig launch codes",
                                                 "users": ["*"]}),
        ):
            refused(resp, "identity_mismatch", "bob")
            assert SECRET not in resp.text
        refused(bob.get("/api/export", params={"all_scopes": "true"}), "owner_only")

    async def over_mcp() -> None:
        async with http_session(daemon.url, token) as session:
            got = await session.call_tool("memory_get", {"id": private})
            assert got.is_error and json.loads(got.content[0].text)["error"] == "not_found"
            got = await session.call_tool("memory_get", {"id": private, "user_id": "alice"})
            assert got.is_error
            assert json.loads(got.content[0].text)["error"] == "identity_mismatch"
            for claim in ({"user_id": "alice"}, {"users": ["*"]}, {"users": ["alice"]}):
                out = await session.call_tool("memory_search", {**QUERY, **claim})
                body = json.loads(out.content[0].text)
                assert out.is_error and body["error"] == "identity_mismatch", body
                assert "'bob'" in body["message"] and body["claimed"] == next(
                    iter(claim.values())), body
            found = await call(session, "memory_search", dict(QUERY))
            assert SECRET not in json.dumps(found)
            listed = await call(session, "memory_list", {"limit": 100})
            assert SECRET not in json.dumps(listed)

    anyio.run(over_mcp)


def test_tokens_on_two_daemons_sharing_one_postgresql(postgres_url: str, tmp_path: Path
                                                      ) -> None:
    home_a, home_b = tmp_path / "a", tmp_path / "b"
    with run_daemon(home_a, _config(postgres_url, "daemon-a")) as a, \
            run_daemon(home_b, _config(postgres_url, "daemon-b")) as b:
        # before any named token: as before, no token needed on loopback
        assert httpx.get(f"{a.url}/api/memories").status_code == 200
        alice = made(home_a, "alice", "--user", "alice")  # on A's home: in the database
        bob = made(home_b, "bob", "--user", "bob")  # on B's
        listed = json.loads(token_cli(home_b, "list", "--json").stdout)
        assert [t["name"] for t in listed] == ["alice", "bob"]
        for daemon in (a, b):  # both daemons, at once, without a restart
            assert httpx.get(f"{daemon.url}/api/memories").status_code == 401

        with as_token(a, alice) as alice_on_a:
            stored = alice_on_a.post("/api/memory/remember",
                                     json={"content": SECRET, "user_id": "alice"})
        assert stored.status_code == 201, stored.text
        private = stored.json()["id"]

        for daemon in (b, a):
            _bob_sees_nothing(daemon, bob, private)

        with as_token(b, alice) as alice_on_b:
            got = alice_on_b.get(f"/api/memory/{private}")
            assert got.status_code == 200 and got.json()["content"] == SECRET
            assert private in ids(alice_on_b.post("/api/memory/recall", json=QUERY))
            patched = alice_on_b.patch(f"/api/memory/{private}", json={
                "importance": 0.9, "reason": "checked on the other daemon"})
            assert patched.status_code == 200, patched.text
            events = alice_on_b.get(f"/api/memory/{private}/history").json()["events"]
        assert [(e["event"], e["changed_by"]) for e in events] == [
            ("created", "token:alice via daemon-a"), ("modified", "token:alice via daemon-b")]

        async def alice_over_mcp() -> None:
            async with http_session(b.url, alice) as session:
                got = await call(session, "memory_get", {"id": private})
                assert got["content"] == SECRET

        anyio.run(alice_over_mcp)

        # revoked on B's home: both daemons refuse it at the next request; bob is unaffected
        assert token_cli(home_b, "revoke", "alice").exit_code == 0
        for daemon in (a, b):
            with as_token(daemon, alice) as revoked, as_token(daemon, bob) as still:
                resp = revoked.get("/api/memories")
                assert resp.status_code == 401, resp.text
                assert "'alice' was revoked" in resp.json()["message"]
                assert still.get("/api/memories").status_code == 200

        async def revoked_over_mcp() -> None:
            headers = {"Authorization": f"Bearer {alice}",
                       "Accept": "application/json, text/event-stream"}
            resp = httpx.post(f"{a.url}/mcp", headers=headers, json={
                "jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert resp.status_code == 401

        anyio.run(revoked_over_mcp)
