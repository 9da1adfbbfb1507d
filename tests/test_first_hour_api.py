"""What a newcomer checks over HTTP in the first hour: `status` and `list` agree on how many
memories there are, and a 405 says which methods the path takes."""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest
from click.testing import CliRunner

from conftest import LiveDaemon, run_daemon
from dashboard_data import transcript_lines
from mnemonist.cli.main import cli


@pytest.fixture
def fresh(tmp_path) -> LiveDaemon:
    with run_daemon(tmp_path, {"embedding": {"provider": "none"}}) as d:
        yield d


def test_status_live_is_what_list_shows(fresh: LiveDaemon) -> None:
    fresh.remember("The shop database is MySQL 5.7", key="shop database", project="shop")
    fresh.remember("The shop database is PostgreSQL 16", key="shop database", project="shop")
    fresh.remember("Deploys happen on Tuesdays")
    fresh.remember("agent-a's scratch note", agent_id="agent-a")
    gone = fresh.remember("A memory forgotten at once")
    assert fresh.http.request("DELETE", f"/api/memory/{gone['id']}",
                              json={"reason": "test"}).status_code == 200
    counts = fresh.http.get("/api/status").json()["memories"]
    # 3 current memories (one of them private), 1 replaced version, 1 deleted
    assert (counts["live"], counts["private"], counts["superseded"], counts["deleted"]) == (
        3, 1, 1, 1)
    anonymous = fresh.http.get("/api/memories").json()
    assert anonymous["total"] == counts["live"] - counts["private"]
    everyone = fresh.http.get("/api/memories", params={"agents": "*", "users": "*"}).json()
    assert everyone["total"] == counts["live"]
    embedded = fresh.http.get("/api/status").json()["embeddings"]
    assert embedded == {} or embedded["live"] == counts["live"]
    out = CliRunner().invoke(cli, ["--url", fresh.url, "status"])
    assert out.exit_code == 0, out.output
    assert ("memories: 3 live (1 of them private to an agent or user" in out.output
            and "1 superseded (kept as history), 1 deleted" in out.output), out.output


def test_405_names_the_allowed_methods(fresh: LiveDaemon) -> None:
    resp = fresh.http.put("/api/memory/remember", json={"content": "x"})
    assert resp.status_code == 405 and resp.json()["error"] == "method_not_allowed"
    assert resp.headers["allow"] == "POST"
    assert "PUT" in resp.json()["message"] and "POST" in resp.json()["message"]
    resp = fresh.http.get("/mcp")
    assert resp.status_code == 405 and resp.headers["allow"] == "POST"
    resp = fresh.http.post("/api/memories", json={})
    assert resp.status_code == 405 and "GET" in resp.headers["allow"]


def test_the_dashboard_lists_by_when_it_happened(fresh: LiveDaemon) -> None:
    new = fresh.remember("dash order: something that happened today")
    old = fresh.remember("dash order: a chat message from March 2024",
                         occurred_at="2024-03-05T10:20:00Z")  # imported after it
    page = fresh.http.get("/")
    assert page.status_code == 200, page.text
    html = page.text
    assert html.index(f'data-id="{new["id"]}"') < html.index(f'data-id="{old["id"]}"')
    item = html[html.index(f'data-id="{old["id"]}"'):]
    item = item[: item.index("</li>")]
    assert ">2024-03-05 10:20<" in item  # when it happened
    assert f"stored {old['created_at'][:16].replace('T', ' ')}" in item  # and when stored


def test_a_second_session_end_writes_no_second_identical_checkpoint(
    fresh: LiveDaemon, tmp_path
) -> None:
    cwd = str(tmp_path / "shop-api")
    hook = {"session_id": "sess-twice", "cwd": cwd, "harness": "claude-code",
            "project": "shop-api"}
    end = {**hook, "reason": "prompt_input_exit", "transcript": transcript_lines(cwd)}

    def checkpoints() -> list[dict]:
        out = fresh.http.get("/api/checkpoints", params={"session_key": "sess-twice"})
        assert out.status_code == 200, out.text
        return out.json()["checkpoints"]

    assert fresh.http.post("/api/hooks/session-start", json={**hook, "source": "startup"}
                           ).status_code == 200
    fresh.http.post("/api/hooks/user-prompt-submit",
                    json={**hook, "prompt": "Which database does the shop API use?"})
    first = fresh.http.post("/api/hooks/session-end", json=end).json()
    again = fresh.http.post("/api/hooks/session-end", json=end).json()
    assert first["checkpoint_id"] and again["checkpoint_id"] == first["checkpoint_id"]
    assert [c["id"] for c in checkpoints()] == [first["checkpoint_id"]]
    # the session goes on (a resumed session): the next end says something new, and is kept
    fresh.http.post("/api/hooks/user-prompt-submit",
                    json={**hook, "prompt": "And which index did we add to orders?"})
    later = fresh.http.post("/api/hooks/session-end", json=end).json()
    assert later["checkpoint_id"] != first["checkpoint_id"]
    assert len(checkpoints()) == 2


TOKEN = "first-hour-token-0123456789"


def test_the_login_cookie_is_not_the_token(tmp_path) -> None:
    """Browsers send a host's cookies to every port of it: the cookie holds a value derived
    from the token under this daemon's own secret, which opens this daemon and nothing else."""
    config = {"embedding": {"provider": "none"}, "server": {"token": TOKEN}}
    with run_daemon(tmp_path / "a", config) as a, run_daemon(tmp_path / "b", config) as b:
        def login(d: LiveDaemon) -> str:
            with httpx.Client(base_url=d.url, timeout=30) as http:
                ok = http.post("/login", json={"token": TOKEN})
                assert ok.status_code == 204, ok.text
                return ok.cookies["mnemonist_token"]

        cookie = login(a)
        assert TOKEN not in cookie and quote(TOKEN, safe="") not in cookie
        assert cookie != login(b)  # another daemon's secret, another value

        def with_cookie(d: LiveDaemon, value: str) -> int:
            with httpx.Client(base_url=d.url, timeout=30,
                              cookies={"mnemonist_token": value}) as http:
                return http.get("/api/memories").status_code

        assert with_cookie(a, cookie) == 200
        assert with_cookie(a, TOKEN) == 401  # the raw token is no cookie
        assert with_cookie(b, cookie) == 401  # nor is another daemon's
        assert with_cookie(a, "") == 401


def test_a_session_names_only_the_injected_memories_the_reader_may_see(fresh: LiveDaemon,
                                                                      tmp_path) -> None:
    mine = fresh.remember("critical: agent-a's deploy key rotation happens every Monday",
                          project="vault", agent_id="agent-a")
    shared = fresh.remember("critical: the vault project deploys from the main branch",
                            project="vault")
    hook = {"session_id": "sess-private", "cwd": str(tmp_path), "harness": "claude-code",
            "project": "vault", "agent_id": "agent-a"}
    start = fresh.http.post("/api/hooks/session-start", json={**hook, "source": "startup"})
    assert start.status_code == 200, start.text

    def injected(headers: dict[str, str]) -> set[str]:
        out = fresh.http.get("/api/sessions/sess-private", headers=headers)
        assert out.status_code == 200, out.text
        return {r["memory_id"] for r in out.json()["injected"]}

    as_agent = injected({"X-Mnemonist-Agent": "agent-a"})
    assert {mine["id"], shared["id"]} <= as_agent  # both pinned: both given to the session
    anyone = injected({})
    assert shared["id"] in anyone and mine["id"] not in anyone
    assert mine["id"] not in injected({"X-Mnemonist-Agent": "agent-b"})


def test_a_bundle_with_bad_names_is_refused_whole(fresh: LiveDaemon, tmp_path) -> None:
    """`who`, `updated_by`, `changed_by` and `observed_by` in a bundle are checked like a
    request's: a memory whose `observed_by` is not a list of names would fail every read."""
    fresh.remember("a memory to carry over to the other home", who="agent-a")
    lines = [json.loads(line) for line in
             fresh.http.get("/api/export").text.splitlines() if line.strip()]
    header, memory = lines[0], next(r for r in lines if r.get("kind") == "memory")
    with run_daemon(tmp_path / "other", {"embedding": {"provider": "none"}}) as other:
        for field, bad in (("observed_by", "agent-a, agent-b"), ("observed_by", '[""]'),
                           ("who", 42), ("who", "x" * 201), ("updated_by", ["a"])):
            body = "\n".join(json.dumps(r) for r in (header, {**memory, field: bad}))
            resp = other.http.post("/api/import/bundle", content=body.encode(),
                                   headers={"content-type": "application/x-ndjson"})
            assert resp.status_code == 400, (field, bad, resp.text)
            assert field in resp.json()["message"], resp.json()
            assert other.http.get("/api/memories").json()["total"] == 0
        good = "\n".join(json.dumps(r) for r in (header, memory))
        assert other.http.post("/api/import/bundle", content=good.encode(), headers={
            "content-type": "application/x-ndjson"}).status_code == 200
        assert other.http.get(f"/api/memory/{memory['id']}").json()["observed_by"] == [
            "agent-a"]
