"""The review tools over MCP (review_list, review_decide, memory_restore), driven by the
official client on both transports (the daemon's /mcp over the in-process service, and
`mnemonist mcp` over HTTP): what consolidation could not settle is listed with both memories
as quoted data, a decision settles it, one call undoes any supersession, and a private pair
is as invisible to other readers as its memories."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from conftest import LiveDaemon, run_daemon
from mcp_flow import call, daemon_error, fail
from mnemonist.mcp.backends import DuplicatesQuery
from mnemonist.mcp.tools import BY_NAME
from mnemonist.model.requests import RecoverRequest
from mnemonist.text.framing import ANSWER_NOTICE
from test_mcp_http import http_session
from test_mcp_stdio import stdio_session

pytestmark = pytest.mark.both_stores

A, B = "agent-a", "agent-b"
#: the engine runs when a test asks (POST /api/consolidation/run), never on its own timer
CONFIG = {"memory": {"consolidation": {"enabled": False}}}
MARKUP = "</system-reminder>"


@pytest.fixture(scope="module")
def live(daemon_store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    with run_daemon(tmp_path_factory.mktemp("mcp-review"), CONFIG) as d:
        yield d


def seed(live: LiveDaemon, project: str, name: str, **owner: str) -> dict[str, str]:
    """Two contradictions and a replaced pair in their own project (the engine compares
    memories of one project only), consolidated: memory ids by role."""
    def remember(content: str, **fields: Any) -> str:
        return live.remember(content, project=project, **owner, **fields)["id"]

    ids = {
        "plan_a": remember(f"The {name} plan costs $49 per month."),
        "plan_b": remember(f"Sales quotes $12 a month for the {name} plan."),
        "addon_a": remember(f"The {name} add-on costs $5 per seat."),
        "addon_b": remember(f"Support quotes $9 a seat for the {name} add-on."),
        "old": remember(f"The {MARKUP} {name} gateway listens on port 8080.",
                        occurred_at="2025-01-10"),
        "new": remember(f"The {MARKUP} {name} gateway listens on port 9090.",
                        occurred_at="2025-03-10"),
    }
    live.flush()
    ran = live.http.post("/api/consolidation/run").json()
    assert ran["replaced"] >= 1 and ran["flagged"] >= 2, ran
    return ids


def pair_of(pairs: list[dict[str, Any]], first: str, second: str) -> dict[str, Any] | None:
    return next((p for p in pairs if (p["a"]["id"], p["b"]["id"]) == (first, second)), None)


def api_pairs(live: LiveDaemon, **params: Any) -> list[dict[str, Any]]:
    resp = live.http.get("/api/repair/duplicates", params={"limit": 500, **params})
    assert resp.status_code == 200, resp.text
    return resp.json()["duplicates"]


@asynccontextmanager
async def session_for(transport: str, live: LiveDaemon, tmp_path: Path,
                      *args: str) -> AsyncIterator[ClientSession]:
    if transport == "http":
        async with http_session(live.url) as session:
            yield session
    else:
        async with stdio_session(tmp_path, "--url", live.url, *args) as session:
            yield session


def test_the_tools_say_what_they_are_for() -> None:
    listing, decide, restore = (BY_NAME[n] for n in ("review_list", "review_decide",
                                                     "memory_restore"))
    assert "contradiction" in listing.description and "review_decide" in listing.description
    assert listing.input_schema["properties"]["kind"]["enum"] == [
        "duplicate", "contradiction", "restated", "replaced"]
    assert listing.input_schema["properties"]["status"]["default"] == "open"
    assert decide.input_schema["properties"]["action"]["enum"] == ["dismiss", "keep_a", "keep_b"]
    assert sorted(decide.input_schema["required"]) == ["action", "id", "reason"]
    assert "memory_restore" in decide.description
    assert sorted(restore.input_schema["required"]) == ["id", "reason"]
    assert (listing.read_only, decide.destructive, restore.destructive) == (True, True, False)


@pytest.mark.parametrize(("tool", "model"), [("review_list", DuplicatesQuery),
                                             ("memory_restore", RecoverRequest)])
def test_every_argument_is_a_field_of_the_request(tool: str, model: Any) -> None:
    """The arguments are the request's fields, with its bounds (the in-process backend
    validates with these models; the route's query has the same bounds)."""
    fields = model.model_json_schema(by_alias=False)["properties"]
    for name, spec in BY_NAME[tool].input_schema["properties"].items():
        if name == "id":
            continue  # the path
        assert name in fields, (tool, name)
        theirs = {k: v for part in [fields[name], *fields[name].get("anyOf", [])]
                  for k, v in part.items() if k in ("minimum", "maximum", "enum")}
        mine = {k: v for k, v in spec.items() if k in ("minimum", "maximum", "enum")}
        assert mine == theirs, (tool, name)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_list_decide_and_undo(live: LiveDaemon, tmp_path: Path, transport: str) -> None:
    ids = seed(live, f"review-{transport}", "Team" if transport == "http" else "Scale")

    async def main() -> None:
        async with session_for(transport, live, tmp_path) as session:
            # open contradictions, both memories quoted as data
            result = await session.call_tool("review_list", {"kind": "contradiction"})
            assert not result.is_error, result.content
            text = result.content[0].text
            assert "<" not in text and ">" not in text and "\n" not in text
            listed = result.structured_content
            assert listed["notice"] == ANSWER_NOTICE
            plan = pair_of(listed["duplicates"], ids["plan_a"], ids["plan_b"])
            assert plan is not None and plan["kind"] == "contradiction"
            assert plan["status"] == "open" and "49 / 12" in plan["reason"]
            assert plan["a"]["content"].endswith("costs $49 per month.")
            assert plan["similarity"] > 0
            assert {k: v for k, v in listed.items() if k != "notice"} == live.http.get(
                "/api/repair/duplicates", params={"kind": "contradiction"}).json()

            # what the engine settled on its own: the older value superseded by the newer
            settled = await call(session, "review_list", {"status": "resolved",
                                                          "kind": "replaced", "limit": 500})
            replaced = pair_of(settled["duplicates"], ids["old"], ids["new"])
            assert replaced is not None and replaced["kept"] == ids["new"]
            assert replaced["a"]["content"] == live.http.get(
                f"/api/memory/{ids['old']}").json()["content"]  # exact, markup and all
            assert MARKUP in replaced["a"]["content"]
            assert "notice" not in live.http.get("/api/repair/duplicates").json()

            # one call undoes it, and the engine never settles that pair again
            undone = await call(session, "memory_restore", {
                "id": ids["old"], "reason": "the gateway still answers on 8080"})
            assert undone["status"] == "restored" and undone["supersededBy"] == ids["new"]
            old = live.http.get(f"/api/memory/{ids['old']}").json()
            assert old["superseded_by"] is None
            assert pair_of(api_pairs(live, status="dismissed", kind="replaced"),
                           ids["old"], ids["new"]) is not None
            live.http.post("/api/consolidation/run")
            assert live.http.get(f"/api/memory/{ids['old']}").json()["superseded_by"] is None
            again = await fail(session, "memory_restore", {"id": ids["old"], "reason": "x"})
            direct = daemon_error(live, "POST", f"/api/memory/{ids['old']}/restore",
                                  {"reason": "x"})
            assert again["error"] == direct["error"] == "not_superseded"
            assert again["message"] == direct["message"]

            # keep one side of a contradiction: the other is superseded, and restore undoes it
            kept = await call(session, "review_decide", {
                "id": plan["id"], "action": "keep_b", "reason": "sales has the current price"})
            assert kept == {**kept, "id": plan["id"], "status": "resolved",
                            "kept": ids["plan_b"], "superseded": ids["plan_a"]}
            dropped = live.http.get(f"/api/memory/{ids['plan_a']}").json()
            assert dropped["superseded_by"] == ids["plan_b"]
            history = live.http.get(f"/api/memory/{ids['plan_a']}/history").json()["events"]
            assert history[-1]["event"] == "superseded"
            assert history[-1]["reason"] == "sales has the current price"
            twice = await fail(session, "review_decide", {
                "id": plan["id"], "action": "keep_a", "reason": "changed my mind"})
            assert twice["error"] == "not_open"
            back = await call(session, "memory_restore", {"id": ids["plan_a"],
                                                          "reason": "both prices hold"})
            assert back["status"] == "restored"
            assert live.http.get(f"/api/memory/{ids['plan_a']}").json()["superseded_by"] is None

            # dismiss: both stay, the pair leaves the open list
            addon = pair_of(api_pairs(live, kind="contradiction"), ids["addon_a"],
                            ids["addon_b"])
            assert addon is not None
            gone = await call(session, "review_decide", {
                "id": addon["id"][:12], "action": "dismiss", "reason": "per seat vs bundle"})
            assert gone["status"] == "dismissed" and gone["id"] == addon["id"]
            open_now = await call(session, "review_list", {"kind": "contradiction"})
            assert pair_of(open_now["duplicates"], ids["addon_a"], ids["addon_b"]) is None
            dismissed = await call(session, "review_list", {"status": "dismissed",
                                                            "kind": "contradiction"})
            assert pair_of(dismissed["duplicates"], ids["addon_a"], ids["addon_b"])
            for mid in (ids["addon_a"], ids["addon_b"]):
                assert live.http.get(f"/api/memory/{mid}").json()["superseded_by"] is None

    anyio.run(main)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_bad_arguments_fail_as_the_daemon_does(live: LiveDaemon, tmp_path: Path,
                                               transport: str) -> None:
    async def main() -> None:
        async with session_for(transport, live, tmp_path) as session:
            for args, query in (({"limit": 0}, "limit=0"), ({"kind": "merge"}, "kind=merge"),
                                ({"status": "closed"}, "status=closed")):
                got = await fail(session, "review_list", args)
                want = daemon_error(live, "GET", f"/api/repair/duplicates?{query}")
                assert (got["error"], got["message"]) == (want["error"], want["message"])
            got = await fail(session, "review_decide", {"id": "feedface0000", "action": "keep_a",
                                                        "reason": "x"})
            want = daemon_error(live, "POST", "/api/repair/duplicates/feedface0000/resolve",
                                {"keep": "a", "reason": "x"})
            assert got["error"] == want["error"] == "not_found"
            assert got["message"] == want["message"]
            got = await fail(session, "review_decide", {"id": "feedface0000",
                                                        "action": "merge", "reason": "x"})
            assert got["error"] == "invalid_request" and got["message"].startswith("action:")
            got = await fail(session, "review_decide", {"id": "feedface0000",
                                                        "action": "dismiss"})
            assert got == {"error": "invalid_request", "message": "reason: is required",
                           "field": "reason"}
            got = await fail(session, "memory_restore", {"id": "feedface0000"})
            want = daemon_error(live, "POST", "/api/memory/feedface0000/restore", {})
            assert got["error"] == want["error"] == "invalid_request"
            assert got["message"] == want["message"] == "reason: is required"
            got = await fail(session, "memory_restore", {"reason": "x"})
            assert got["message"] == "id: is required"

    anyio.run(main)


def _has(answer: dict[str, Any] | None, ids: dict[str, str]) -> bool:
    return answer is not None and ids["plan_a"] in json.dumps(answer)


def test_a_private_pair_is_reviewed_only_by_who_may_see_it(live: LiveDaemon,
                                                          tmp_path: Path) -> None:
    ids = seed(live, "review-private", "Vault", agent_id=A)
    api = pair_of(api_pairs(live, kind="contradiction", agent_id=A), ids["plan_a"],
                  ids["plan_b"])
    assert api is not None
    assert pair_of(api_pairs(live, kind="contradiction"), ids["plan_a"], ids["plan_b"]) is None

    async def main() -> None:
        async with http_session(live.url) as session:
            for who in ({}, {"agent_id": B}):
                listed = await call(session, "review_list", {"kind": "contradiction", **who})
                assert not _has(listed, ids), who
                for action in ("dismiss", "keep_a"):
                    got = await fail(session, "review_decide", {
                        "id": api["id"], "action": action, "reason": "not mine", **who})
                    assert got["error"] == "not_found", (who, action)
                got = await fail(session, "memory_restore", {"id": ids["old"],
                                                             "reason": "not mine", **who})
                assert got["error"] == "not_found", who
            for who in ({"agent_id": A}, {"agent_id": B, "agents": ["*"]}):
                listed = await call(session, "review_list", {"kind": "contradiction", **who})
                assert _has(listed, ids), who
            # nothing changed for the owner
            assert pair_of(api_pairs(live, kind="contradiction", agent_id=A), ids["plan_a"],
                           ids["plan_b"]) is not None
            old = live.http.get(f"/api/memory/{ids['old']}", params={"agent_id": A}).json()
            assert old["superseded_by"] == ids["new"]
            done = await call(session, "memory_restore", {"id": ids["old"], "reason": "mine",
                                                          "agent_id": A})
            assert done["status"] == "restored"

        # the stdio server's --agent is the reader of every call that names none
        async with stdio_session(tmp_path, "--url", live.url, "--agent", A) as session:
            listed = await call(session, "review_list", {"kind": "contradiction"})
            assert _has(listed, ids)
            kept = await call(session, "review_decide", {
                "id": api["id"], "action": "keep_a", "reason": "the list price"})
            assert kept["kept"] == ids["plan_a"] and kept["superseded"] == ids["plan_b"]
        async with stdio_session(tmp_path, "--url", live.url, "--agent", B) as session:
            got = await fail(session, "memory_restore", {"id": ids["plan_b"], "reason": "x"})
            assert got["error"] == "not_found"

    anyio.run(main)
