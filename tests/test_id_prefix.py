"""Unique id prefixes name a memory on every route that takes an id (the service resolves
them, so HTTP, CLI and MCP agree); an ambiguous prefix is a 409 `ambiguous_id`."""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from conftest import LiveDaemon
from mnemonist.cli.main import cli

pytestmark = pytest.mark.both_stores


def _with_id(live: LiveDaemon, content: str, new_id: str, **fields) -> str:
    """A memory made by the daemon, then given a chosen id (to make two share a prefix)."""
    made = live.remember(content, **fields)
    with live.service.core.db.write_tx() as conn:
        for table, column in (("memories", "id"), ("memory_history", "memory_id")):
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?",
                         (new_id, made["id"]))
    return new_id


def test_every_id_route_takes_a_unique_prefix(live):
    made = live.remember("prefix routes: the deploy key lives in the vault",
                         source_id="prefix-src")
    live.remember("prefix routes: a second line of the same source", source_id="prefix-src")
    full, short = made["id"], made["id"][:8]
    http = live.http

    got = http.get(f"/api/memory/{short}")
    assert got.status_code == 200 and got.json()["id"] == full
    assert http.get(f"/api/memory/{full[:8].upper()}").json()["id"] == full
    four = _with_id(live, "prefix routes: four characters do",
                    "beef0000-0000-4000-8000-00000000000b")
    assert http.get("/api/memory/beef").json()["id"] == four
    hist = http.get(f"/api/memory/{short}/history").json()
    assert hist["memory_id"] == full and hist["events"][0]["event"] == "created"
    near = http.get(f"/api/memory/{short}/neighbours").json()
    assert near["id"] == full and len(near["after"]) == 1

    patched = http.patch(f"/api/memory/{short}", json={"importance": 0.9, "reason": "matters"})
    assert patched.status_code == 200 and patched.json()["id"] == full
    batch = http.post("/api/memory/modify", json={"patches": [
        {"id": short, "tags": ["vault"], "reason": "tagged"}]}).json()
    assert batch["results"][0]["id"] == full and batch["updated"] == 1

    preview = http.post("/api/memory/forget", json={"ids": [short]}).json()
    assert [c["id"] for c in preview["candidates"]] == [full]
    deleted = http.request("DELETE", f"/api/memory/{short}", json={"reason": "done"})
    assert deleted.status_code == 200 and deleted.json()["id"] == full
    recovered = http.post(f"/api/memory/{short}/recover", json={"reason": "back"})
    assert recovered.status_code == 200 and recovered.json()["id"] == full
    assert http.get(f"/api/memory/{full}").json()["is_deleted"] is False


def test_too_short_or_unknown_prefixes_are_404(live):
    made = live.remember("prefix routes: three characters are not enough")
    for ref in (made["id"][:3], "zzzz", str(uuid.uuid4())[:8] + "-no", "0" * 36):
        resp = live.http.get(f"/api/memory/{ref}")
        assert resp.status_code == 404, (ref, resp.text)
        assert resp.json()["error"] == "not_found"


def test_an_ambiguous_prefix_is_a_409_naming_the_matches(live):
    a = _with_id(live, "ambiguous one: the cat sleeps", "f00d1111-0000-4000-8000-000000000001")
    b = _with_id(live, "ambiguous two: the dog barks", "f00d2222-0000-4000-8000-000000000002")
    http = live.http
    for method, path, body in (
        ("GET", "/api/memory/f00d", None),
        ("GET", "/api/memory/f00d/history", None),
        ("GET", "/api/memory/f00d/neighbours", None),
        ("PATCH", "/api/memory/f00d", {"importance": 0.1, "reason": "x"}),
        ("DELETE", "/api/memory/f00d", {"reason": "x"}),
        ("POST", "/api/memory/f00d/recover", {"reason": "x"}),
        ("POST", "/api/memory/forget", {"ids": ["f00d"]}),
        ("POST", "/api/memory/modify", {"patches": [{"id": "f00d", "pinned": True}],
                                        "reason": "x"}),
    ):
        resp = http.request(method, path, json=body)
        assert resp.status_code == 409, (method, path, resp.text)
        err = resp.json()
        assert err["error"] == "ambiguous_id", err
        assert err["message"].startswith("prefix f00d matches 2 memories: ")
        assert a in err["message"] and b in err["message"]
    # nothing of the refused batch or delete happened
    assert http.get(f"/api/memory/{a}").json()["pinned"] is False
    assert http.get(f"/api/memory/{b}").json()["is_deleted"] is False
    # one more character settles it; an exact id always wins
    assert http.get("/api/memory/f00d1").json()["id"] == a
    assert http.get(f"/api/memory/{b}").json()["id"] == b

    out = CliRunner().invoke(cli, ["get", "f00d", "--url", live.url])
    assert out.exit_code == 1
    assert "ambiguous_id" in out.output and "matches 2 memories" in out.output
    assert "Traceback" not in out.output


def test_mcp_tools_take_prefixes_through_the_service(live):
    made = live.remember("mcp prefix: the staging database is read-only on fridays")
    resp = live.http.post("/mcp", json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "memory_get", "arguments": {"id": made["id"][:8]}}},
        headers={"accept": "application/json, text/event-stream"})
    assert resp.status_code == 200, resp.text
    text = resp.text
    assert made["id"] in text and "staging database" in text


def test_cli_commands_accept_the_prefix_recall_prints(live):
    def run(*args: str):
        return CliRunner().invoke(cli, [*args, "--url", live.url], catch_exceptions=False)

    made = json.loads(run("remember", "the release train leaves on tuesdays", "--json").output)
    live.flush()
    out = run("recall", "release", "train")
    short = made["id"][:8]
    assert short in out.output
    assert json.loads(run("get", short).output)["id"] == made["id"]
    assert "created" in run("history", short).output
    mod = run("modify", short, "--importance", "0.35", "--reason", "it matters")
    assert mod.exit_code == 0 and f"modified {made['id']}" in mod.output
    assert run("pin", short).exit_code == 0
    assert json.loads(run("get", short).output)["pinned"] is True
    pinned = run("forget", short, "--yes", "--reason", "gone")  # pinned: not selected
    assert pinned.exit_code == 1 and "--include-pinned" in pinned.output
    assert run("unpin", short, "--reason", "ordinary again").exit_code == 0
    gone = run("forget", short, "--yes", "--reason", "gone")
    assert gone.exit_code == 0 and "forgot 1" in gone.output
    back = run("recover", short, "--reason", "was right after all")
    assert back.exit_code == 0 and f"recovered {made['id']}" in back.output
    events = [line.split()[1] for line in run("history", short).output.splitlines()]
    assert events == ["created", "modified", "modified", "modified", "deleted", "recovered"]
