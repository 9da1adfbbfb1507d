"""Many agents, one memory: a private memory is invisible to every other reader on every read
path (each HTTP route, each MCP tool), visible to its owner and to explicit cross-scope
reads; identities are validated; duplicates stored by other agents corroborate."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from conftest import LiveDaemon, run_daemon
from mcp_flow import call, fail
from mnemonist.web import create_app
from test_mcp_http import http_session

pytestmark = pytest.mark.both_stores

WORD = "zebrafruit"  # what readers ask for
MARK = "lockerseven"  # what only the memory holds: seen in an answer means it leaked
SECRET = f"The {WORD} vault code is kept in {MARK}"
A, B = "agent-a", "agent-b"
#: a private memory the graph reads: its entities exist only through it
GRAPH_SECRET = f"The VaultApi depends on LockerDb to keep the {WORD} codes in {MARK}"
ENTITY = "VaultApi"
PARAPHRASE = f"The {WORD} vault code is stored in {MARK}"
SESSION = "scope-graph-session"  # a session of A's that was given the private memory


@dataclass
class World:
    live: LiveDaemon
    private: str  # A's private memory (pinned, keyed, in source scope-src)
    shared: str  # a global memory in the same source


@pytest.fixture(scope="module")
def world(daemon_store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    # the write gate in shadow: its log (GET /api/gates/log) holds the paraphrase, A's
    config = {"memory": {"writeGate": {"mode": "shadow"}}}
    with run_daemon(tmp_path_factory.mktemp("scopes"), config) as live:
        private = live.remember(SECRET, agent_id=A, pinned=True, key="vault code",
                                source_id="scope-src", occurred_at="2026-01-02")
        assert private["agent_id"] == A and private["created"] is True
        shared = live.remember("The nightly scope harness runs at midnight",
                               source_id="scope-src", occurred_at="2026-01-01")
        live.remember(GRAPH_SECRET, agent_id=A)
        live.remember(PARAPHRASE, agent_id=A)  # a near-duplicate of the secret, A's too
        live.flush()
        swept = live.http.post("/api/repair/dedup-sweep").json()
        assert swept["result"]["flagged"] >= 1, swept
        given = live.http.post("/api/hooks/user-prompt-submit", json={
            "session_id": SESSION, "prompt": f"where is the {WORD} vault code kept?"},
            headers={"X-Mnemonist-Agent": A})
        assert MARK in given.text, given.text
        yield World(live, private["id"], shared["id"])


# -- identities: as whom each probe reads ---------------------------------------------------

AS_NOBODY: dict[str, Any] = {}
AS_B = {"agent_id": B}
AS_A = {"agent_id": A}
CROSS = {"agent_id": B, "agents": ["*"]}
CROSS_NAMED = {"agents": [A]}


def _params(identity: dict[str, Any]) -> dict[str, str]:
    return {k: ",".join(v) if isinstance(v, list) else v for k, v in identity.items()}


Probe = Callable[[World, dict[str, Any]], httpx.Response]


def _get(path: str, **params: Any) -> Probe:
    def probe(w: World, who: dict[str, Any]) -> httpx.Response:
        return w.live.http.get(path.format(p=w.private, s=w.shared),
                               params={**params, **_params(who)})
    return probe


def _send(method: str, path: str, body: dict[str, Any] | None = None,
          identity_in_body: bool = True, **params: Any) -> Probe:
    def probe(w: World, who: dict[str, Any]) -> httpx.Response:
        data = json.loads(json.dumps(body or {}).replace("{p}", w.private))
        query = dict(params)
        if identity_in_body:
            data.update(who)
        else:
            query.update(_params(who))
        return w.live.http.request(method, path.format(p=w.private), json=data or None,
                                   params=query)
    return probe


def _hook(route: str, body: dict[str, Any]) -> Probe:
    count = iter(range(1000))

    def probe(w: World, who: dict[str, Any]) -> httpx.Response:
        session = f"scope-{route}-{next(count)}"  # a fresh session holds nothing yet
        headers = {"X-Mnemonist-Agent": who["agent_id"]} if "agent_id" in who else {}
        return w.live.http.post(f"/api/hooks/{route}", json={"session_id": session, **body},
                                headers=headers)
    return probe


#: every route that can answer a memory's content: (how to call it, what it answers)
#: "content": the secret's word is in the answer or not; "by_id": 404 for others, another
#: status (listed) for the owner
READS: dict[tuple[str, str], tuple[Probe, str, int]] = {
    ("POST", "/api/memory/recall"): (
        _send("POST", "/api/memory/recall", {"query": f"{WORD} vault code", "min_score": 0}),
        "content", 200),
    ("GET", "/api/memories"): (_get("/api/memories"), "content", 200),
    ("POST", "/api/memory/forget"): (
        _send("POST", "/api/memory/forget", {"query": f"{WORD} vault code",
                                            "include_pinned": True}), "content", 200),
    ("GET", "/memory/search"): (_get("/memory/search", q=WORD), "content", 200),
    ("GET", "/api/embeddings"): (_get("/api/embeddings", vectors="false"), "content", 200),
    ("GET", "/api/export"): (_get("/api/export"), "content", 200),
    ("GET", "/api/memory/{memory_id}"): (_get("/api/memory/{p}"), "by_id", 200),
    ("GET", "/api/memory/{memory_id}/history"): (_get("/api/memory/{p}/history"), "by_id", 200),
    ("GET", "/api/memory/{memory_id}/chain"): (_get("/api/memory/{p}/chain"), "by_id", 200),
    ("GET", "/api/memory/{memory_id}/archive"): (_get("/api/memory/{p}/archive"), "by_id", 200),
    ("GET", "/api/memory/{memory_id}/neighbours"): (
        _get("/api/memory/{p}/neighbours"), "by_id", 200),
    # changes by id: a stale if_version (or the wrong state) makes the owner's call a 409
    # that changes nothing, so the probe can run as often as the table needs
    ("PATCH", "/api/memory/{memory_id}"): (
        _send("PATCH", "/api/memory/{p}", {"importance": 0.5, "reason": "x",
                                           "if_version": 999}, identity_in_body=False),
        "by_id", 409),
    ("DELETE", "/api/memory/{memory_id}"): (
        _send("DELETE", "/api/memory/{p}", None, identity_in_body=False, reason="x",
              if_version="999"), "by_id", 409),
    ("POST", "/api/memory/{memory_id}/recover"): (
        _send("POST", "/api/memory/{p}/recover", {"reason": "x"}), "by_id", 409),
    ("POST", "/api/memory/{memory_id}/restore"): (
        _send("POST", "/api/memory/{p}/restore", {"reason": "x"}), "by_id", 409),
    ("POST", "/api/memory/modify"): (
        _send("POST", "/api/memory/modify", {"patches": [
            {"id": "{p}", "importance": 0.5, "if_version": 999}], "reason": "x"}),
        "by_id", 200),
    ("POST", "/api/hooks/session-start"): (
        _hook("session-start", {"cwd": "/nowhere"}), "content", 200),
    ("GET", "/api/entities"): (_get("/api/entities", q="vault"), "names", 200),
    ("GET", "/api/entities/{entity_id}"): (_get(f"/api/entities/{ENTITY}"), "by_id", 200),
    ("GET", "/api/graph/neighbourhood"): (
        _get("/api/graph/neighbourhood", entity=ENTITY), "by_id", 200),
    ("POST", "/api/knowledge/expand"): (
        _send("POST", "/api/knowledge/expand", {"entity": ENTITY}), "by_id", 200),
    ("POST", "/api/graph/impact"): (
        _send("POST", "/api/graph/impact", {"entity": "LockerDb"}), "by_id", 200),
    ("POST", "/api/knowledge/expand-session"): (
        _send("POST", "/api/knowledge/expand-session", {"session_key": SESSION}),
        "content", 200),
    ("POST", "/api/memory/{memory_id}/feedback"): (
        _send("POST", "/api/memory/{p}/feedback", {"helpful": True}), "by_id", 200),
    ("GET", "/api/repair/duplicates"): (_get("/api/repair/duplicates"), "content", 200),
    ("GET", "/api/gates/log"): (_get("/api/gates/log"), "content", 200),
    ("POST", "/api/hooks/user-prompt-submit"): (
        _hook("user-prompt-submit", {"prompt": f"where is the {WORD} vault code kept?"}),
        "content", 200),
}

#: routes that never answer a memory's content, and why
EXEMPT: dict[tuple[str, str], str] = {
    ("GET", "/health"): "liveness only",
    ("GET", "/api/status"): "counts and component states, no memory content",
    ("GET", "/api/diagnostics"): "index consistency counts",
    ("GET", "/api/diagnostics/graph"): (
        "an operator's graph sizes; community labels are entity names, never memory text"),
    ("POST", "/api/repair/{name}"): "maintenance actions answer counts",
    ("POST", "/api/repair/sleep-replay"): "a replay cycle answers counts and its settings",
    ("POST", "/api/repair/backfill-skipped"): "queues session summaries; answers session keys",
    ("GET", "/api/gates/significance/{session_key}"): (
        "a session's three checks: counts, the project's global entity names, a session key"),
    ("POST", "/api/consolidation/run"): "a run of the consolidation engine answers counts",
    ("GET", "/api/principles"): (
        "principles are drawn only from shared memories (no agent or user owner)"),
    ("POST", "/api/principles/{principle_id}/confirm"): (
        "a change by principle id; principles hold no private memory text"),
    ("POST", "/api/principles/{principle_id}/reject"): (
        "a change by principle id; principles hold no private memory text"),
    ("GET", "/api/consolidation/status"): "the engine's settings and counts",
    ("GET", "/api/predictor/status"): (
        "pair counts and the guard's figures; no query text or memory content"),
    ("POST", "/api/predictor/train"): "a refit answers counts, figures and trees (numbers)",
    ("POST", "/api/repair/duplicates/{candidate_id}/dismiss"): (
        "a change by candidate id: 404 unless both memories are visible (tested below)"),
    ("POST", "/api/repair/duplicates/{candidate_id}/resolve"): (
        "a change by candidate id: 404 unless both memories are visible (tested below)"),
    ("GET", "/api/pipeline/status"): "job counts and settings",
    ("POST", "/api/memory/remember"): "a write: answers the writer's own row",
    ("POST", "/api/graph/relations"): (
        "a write: answers the stated relation and its two entities (names the caller gave)"),
    ("DELETE", "/api/graph/relations/{relation_id}"): (
        "a change by relation id: 404 unless its scope is visible (tested below)"),
    ("POST", "/api/memory/import"): "a write: answers counts and the new ids",
    ("POST", "/api/import/bundle"): "a write: answers counts",
    ("POST", "/api/backup"): "an operator's full copy of the database file (like cp)",
    ("GET", "/api/documents"): "documents are global (ingested text, never private)",
    ("POST", "/api/documents"): "a write",
    ("GET", "/api/documents/{doc_id}"): "documents are global",
    ("DELETE", "/api/documents/{doc_id}"): "documents are global",
    ("GET", "/api/documents/{doc_id}/chunks"): "chunks of a global document",
    ("GET", "/api/files"): "memory files are global (the file on disk is the truth)",
    ("POST", "/api/files/sync"): "answers counts",
    ("GET", "/api/sessions"): "session states: counts and times",
    ("GET", "/api/sessions/{session_key}"): (
        "turns are transcript lines (global); injected memories are listed by id only"),
    ("GET", "/api/checkpoints"): "digests hold only global memories and the session's own",
    ("POST", "/api/checkpoints"): "a write",
    ("GET", "/api/checkpoints/latest"): "as GET /api/checkpoints",
    ("POST", "/api/hooks/pre-compaction"): "a checkpoint (see GET /api/checkpoints)",
    ("POST", "/api/hooks/compaction-complete"): "marks the session; no memories",
    ("POST", "/api/hooks/session-end"): "a checkpoint and the transcript",
}


def test_every_route_is_listed(world: World) -> None:
    """A new route must say here whether it can answer memories (then it is probed)."""
    doc = create_app(world.live.daemon).openapi()
    routes = {(method.upper(), path) for path, ops in doc["paths"].items() for method in ops}
    assert routes == set(READS) | set(EXEMPT), (
        routes - set(READS) - set(EXEMPT), (set(READS) | set(EXEMPT)) - routes)


def _sees(resp: httpx.Response, kind: str, owner_status: int) -> bool:
    if kind == "by_id":
        if resp.status_code == 404:
            assert resp.json()["error"] == "not_found", resp.text
            return False
        assert resp.status_code == owner_status, resp.text
        return True
    assert resp.status_code == owner_status, resp.text
    return (ENTITY if kind == "names" else MARK) in resp.text


@pytest.mark.parametrize("route", sorted(READS), ids=lambda r: f"{r[0]} {r[1]}")
def test_private_memory_is_invisible_to_others(world: World, route: tuple[str, str]) -> None:
    probe, kind, status = READS[route]
    assert not _sees(probe(world, AS_B), kind, status), f"{route} leaks to agent B"
    assert not _sees(probe(world, AS_NOBODY), kind, status), f"{route} leaks to no identity"
    assert _sees(probe(world, AS_A), kind, status), f"{route} hides it from its owner"
    if route[1].startswith("/api/hooks/"):
        return  # a hook reads as its agent; cross-scope reads are for the API and tools
    assert _sees(probe(world, CROSS), kind, status), f"{route}: agents=['*'] misses it"
    assert _sees(probe(world, CROSS_NAMED), kind, status), f"{route}: agents=[A] misses it"


def test_a_missing_id_and_a_hidden_one_answer_alike(world: World) -> None:
    http = world.live.http
    hidden = http.get(f"/api/memory/{world.private}", params=AS_B)
    missing = http.get("/api/memory/00000000-0000-4000-8000-000000000000", params=AS_B)
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["error"] == missing.json()["error"] == "not_found"
    # an id prefix resolves only among what the reader sees
    prefix = world.private[:8]
    assert http.get(f"/api/memory/{prefix}", params=AS_B).status_code == 404
    assert http.get(f"/api/memory/{prefix}", params=AS_A).json()["id"] == world.private


def test_neighbours_leave_out_the_private_line(world: World) -> None:
    http = world.live.http
    as_b = http.get(f"/api/memory/{world.shared}/neighbours", params=AS_B).json()
    as_a = http.get(f"/api/memory/{world.shared}/neighbours", params=AS_A).json()
    assert MARK not in json.dumps(as_b) and MARK in json.dumps(as_a)


def test_duplicate_review_acts_only_on_pairs_the_reviewer_sees(world: World) -> None:
    http = world.live.http
    pairs = http.get("/api/repair/duplicates", params=AS_A).json()["duplicates"]
    mine = next(p for p in pairs if world.private in (p["a"]["id"], p["b"]["id"]))
    for who in (AS_B, AS_NOBODY):
        for action, body in (("dismiss", {}), ("resolve", {"keep": "a", "reason": "x"})):
            resp = http.post(f"/api/repair/duplicates/{mine['id']}/{action}", json=body,
                             params=_params(who))
            assert resp.status_code == 404 and resp.json()["error"] == "not_found", resp.text
    still = http.get("/api/repair/duplicates", params=AS_A).json()["duplicates"]
    assert mine["id"] in {p["id"] for p in still}  # nothing changed


def test_export_all_scopes_is_explicit(world: World) -> None:
    http = world.live.http
    assert MARK not in http.get("/api/export").text
    assert MARK in http.get("/api/export", params={"all_scopes": "true"}).text


def test_headers_name_the_reader_and_must_agree(world: World) -> None:
    http = world.live.http
    body = {"query": f"{WORD} vault code", "min_score": 0}
    as_a = http.post("/api/memory/recall", json=body, headers={"X-Mnemonist-Agent": A})
    assert world.private in [r["id"] for r in as_a.json()["results"]]
    clash = http.post("/api/memory/recall", json={**body, "agent_id": B},
                      headers={"X-Mnemonist-Agent": A})
    assert clash.status_code == 400 and clash.json()["error"] == "identity_conflict"
    got = http.get(f"/api/memory/{world.private}", headers={"X-Mnemonist-Agent": A})
    assert got.status_code == 200 and got.json()["agent_id"] == A


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", "tab\there", "x" * 201, "*"])
def test_bad_identities_are_refused_and_change_nothing(world: World, bad: str) -> None:
    http = world.live.http
    before = http.get("/api/memories", params={"agents": "*", "users": "*",
                                               "limit": 1}).json()["total"]
    wrote = http.post("/api/memory/remember", json={"content": "never stored", "agent_id": bad})
    assert wrote.status_code == 400 and "agent_id" in wrote.text, wrote.text
    read = http.post("/api/memory/recall", json={"query": "anything", "user_id": bad})
    assert read.status_code == 400 and "user_id" in read.text
    if bad.strip() == bad and "\x00" not in bad:  # httpx refuses to send the others
        header = http.get("/api/memories", headers={"X-Mnemonist-Agent": bad})
        assert header.status_code == 400, header.text
    after = http.get("/api/memories", params={"agents": "*", "users": "*",
                                              "limit": 1}).json()["total"]
    assert after == before


def test_a_private_statement_is_visible_only_to_its_owner(world: World) -> None:
    """A relation stated for agent A (knowledge_relate / POST /api/graph/relations with
    agent_id) lives in A's scope: its entities and edge are invisible to others, and only a
    reader that sees the scope can retract it."""
    http = world.live.http
    stated = http.post("/api/graph/relations", json={
        "source": "VaultApi", "target": "HiddenStore", "relation_type": "depends_on",
        "reason": f"the {MARK} codes sit there", "agent_id": A})
    assert stated.status_code == 201, stated.text
    rid = stated.json()["relation"]["id"]
    assert stated.json()["relation"]["source"]["agent_id"] == A
    body = {"entity": "HiddenStore"}
    for who in (AS_B, AS_NOBODY):
        hidden = http.post("/api/graph/impact", json={**body, **who})
        assert hidden.status_code == 404, hidden.text
        assert MARK not in http.get("/api/entities", params={"q": "hidden", **who}).text
        assert "HiddenStore" not in http.get("/api/export", params=_params(who)).text
        retract = http.delete(f"/api/graph/relations/{rid}", params=_params(who))
        assert retract.status_code == 404 and retract.json()["error"] == "not_found"
    mine = http.post("/api/graph/impact", json={**body, **AS_A}).json()
    will_break = mine["tiers"]["will_break"]
    assert [i["entity"]["name"] for i in will_break] == ["VaultApi"]
    assert will_break[0]["edges"][0]["reason"] == "user-stated"
    assert will_break[0]["edges"][0]["note"] == f"the {MARK} codes sit there"
    done = http.delete(f"/api/graph/relations/{rid}", params=_params(AS_A))
    assert done.status_code == 200 and done.json()["retracted"] == rid
    assert http.post("/api/graph/impact", json={**body, **AS_A}).status_code == 404


# -- MCP: every tool, over the daemon's /mcp ---------------------------------------------------

def _tool_sees(result: dict[str, Any] | None, mark: str = MARK) -> bool:
    return result is not None and mark in json.dumps(result)


async def _try(session, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """The tool's answer, or None for a not_found tool error."""
    out = await session.call_tool(name, args)
    if out.is_error:
        body = json.loads(out.content[0].text)
        assert body["error"] in ("not_found", "version_conflict"), body
        return None if body["error"] == "not_found" else body
    return out.structured_content


def test_every_mcp_tool_hides_the_private_memory(world: World) -> None:
    from mnemonist.mcp.tools import TOOLS

    def tools(mid: str) -> dict[str, dict[str, Any]]:
        return {
            "memory_search": {"query": f"{WORD} vault code", "min_score": 0},
            "memory_get": {"id": mid},
            "memory_list": {},
            "memory_history": {"id": mid},
            "memory_forget": {"query": f"{WORD} vault code", "include_pinned": True},
            # a stale if_version: the owner gets version_conflict (nothing changes), others
            # not_found
            "memory_modify": {"id": mid, "importance": 0.5, "reason": "x", "if_version": 999},
            "knowledge_expand": {"entity": ENTITY},
            "graph_impact": {"entity": "LockerDb"},
            "knowledge_expand_session": {"session_key": SESSION},
            "memory_feedback": {"id": mid, "helpful": True},
            "review_list": {},  # the private near-duplicate pair (A's)
        }

    #: what shows that a tool's answer holds the private memory (or what only it names)
    marks = {"graph_impact": ENTITY, "memory_feedback": world.private}

    async def main() -> None:
        calls = tools(world.private)
        readers = set(calls)
        writers = {t.name for t in TOOLS} - readers
        # review_decide and memory_restore act by id: probed in test_mcp_review.py
        assert writers == {"memory_store", "knowledge_relate", "review_decide",
                           "memory_restore"}, "a new tool must be probed here"
        async with http_session(world.live.url) as session:
            for name, args in calls.items():
                mark = marks.get(name, MARK)
                assert not _tool_sees(await _try(session, name, {**args, **AS_B}), mark), name
                assert not _tool_sees(await _try(session, name, dict(args)), mark), name
                mine = await _try(session, name, {**args, **AS_A})
                if name == "memory_modify":
                    assert mine is not None and mine["error"] == "version_conflict"
                else:
                    assert _tool_sees(mine, mark), name
                    assert _tool_sees(await _try(session, name, {**args, **CROSS}), mark), name
            await fail(session, "memory_store", {"content": "x", "agent_id": "*"})

    anyio.run(main)


def test_mcp_store_of_the_same_text_by_another_agent_is_its_own_row(tmp_path: Path) -> None:
    """(Its own daemon: B's copy would be what B legitimately sees in the shared world.)"""
    async def main(live: LiveDaemon) -> None:
        async with http_session(live.url) as session:
            mine = await call(session, "memory_store", {"content": SECRET, "agent_id": A})
            own = await call(session, "memory_store", {"content": SECRET, "agent_id": B})
            assert own["id"] != mine["id"] and own["agent_id"] == B
            assert own["created"] is True and own["corroborated"] is False
            got = await _try(session, "memory_get", {"id": mine["id"], "agent_id": B})
            assert got is None

    with run_daemon(tmp_path) as live:
        anyio.run(main, live)


def test_mcp_identity_headers_read_as_that_agent(world: World) -> None:
    """On /mcp the X-Mnemonist-Agent header is the server's identity for each call."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> None:
        for agent, expect in ((A, True), (B, False)):
            async with (
                httpx2.AsyncClient(headers={"X-Mnemonist-Agent": agent}, timeout=60) as http,
                streamable_http_client(f"{world.live.url}/mcp", http_client=http) as (r, w),
                ClientSession(r, w) as session,
            ):
                await session.initialize()
                got = await _try(session, "memory_get", {"id": world.private})
                assert _tool_sees(got) is expect, agent

    anyio.run(main)


# -- corroboration ------------------------------------------------------------------------------

def test_25_agents_one_row_20_observers_count_25(tmp_path: Path) -> None:
    text = "The shared staging cluster lives in eu-west-1"
    with run_daemon(tmp_path) as live:
        answers = [live.remember(text, who=f"agent-{i:02d}") for i in range(25)]
        again = live.remember(text, who="agent-03")  # the same agent again: plain dedup
        ids = {a["id"] for a in answers}
        assert len(ids) == 1
        assert answers[0]["created"] is True and answers[0]["observation_count"] == 1
        assert all(a["corroborated"] for a in answers[1:])
        assert again["corroborated"] is False and again["deduplicated"] is True
        got = live.http.get(f"/api/memory/{answers[0]['id']}").json()
        assert got["observation_count"] == 25
        assert got["observed_by"] == [f"agent-{i:02d}" for i in range(20)]
        rows = live.http.get("/api/memories", params={"limit": 100}).json()
        assert rows["total"] == 1
        history = live.http.get(f"/api/memory/{answers[0]['id']}/history").json()["events"]
        assert [e["event"] for e in history].count("corroborated") == 24


def test_private_copies_are_separate_rows_and_global_corroborates(tmp_path: Path) -> None:
    text = "Use the blue deploy pipeline for hotfixes"
    with run_daemon(tmp_path) as live:
        a = live.remember(text, agent_id=A)
        b = live.remember(text, agent_id=B)
        g = live.remember(text, who=A)
        g2 = live.remember(text, who=B)
        assert len({a["id"], b["id"], g["id"]}) == 3
        assert a["observed_by"] == [A] and b["observed_by"] == [B]
        assert g2["id"] == g["id"] and g2["corroborated"] is True
        assert g2["observed_by"] == [A, B] and g2["observation_count"] == 2
        # the same agent's private copy again: deduplicated, not corroborated
        a2 = live.remember(text, agent_id=A)
        assert a2["id"] == a["id"] and a2["corroborated"] is False
        assert a2["observation_count"] == 1


def test_concurrent_stores_by_many_agents_make_one_consistent_row(tmp_path: Path) -> None:
    text = "The incident channel is #ops-war-room"
    agents = [f"agent-{i}" for i in range(12)]
    with run_daemon(tmp_path) as live:
        answers: list[dict[str, Any]] = []
        lock = threading.Lock()
        start = threading.Barrier(len(agents))

        def store(agent: str) -> None:
            with httpx.Client(base_url=live.url, timeout=60) as http:
                start.wait()
                for _ in range(3):  # each agent three times: one observation each
                    resp = http.post("/api/memory/remember",
                                     json={"content": text, "who": agent})
                    assert resp.status_code in (200, 201), resp.text
                    with lock:
                        answers.append(resp.json())

        threads = [threading.Thread(target=store, args=(a,)) for a in agents]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({a["id"] for a in answers}) == 1
        assert sum(a["created"] for a in answers) == 1
        assert sum(a["corroborated"] for a in answers) == len(agents) - 1
        got = live.http.get(f"/api/memory/{answers[0]['id']}").json()
        assert got["observation_count"] == len(agents)
        assert sorted(got["observed_by"]) == sorted(agents)


def test_corroboration_lifts_ranking_and_weight_zero_turns_it_off(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as live:
        lone = live.remember("The reports service deploys from the release branch", who="x")
        many = live.remember("The reports service deploys from the main branch", who="a")
        for agent in ("b", "c", "d"):
            live.remember("The reports service deploys from the main branch", who=agent)
        live.flush()
        query = "which branch does the reports service deploy from?"
        ranked = [r["id"] for r in live.recall(query, min_score=0)["results"]]
        assert ranked.index(many["id"]) < ranked.index(lone["id"])
        results = {r["id"]: r for r in live.recall(query, min_score=0)["results"]}
        live.service.core.config.search.corroboration_weight = 0.0
        plain = {r["id"]: r for r in live.recall(query, min_score=0)["results"]}
        assert results[many["id"]]["score"] > plain[many["id"]]["score"]
        assert results[lone["id"]]["score"] == pytest.approx(plain[lone["id"]]["score"])


def test_supersession_stays_within_a_scope(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as live:
        shared = live.remember("The build runs on Jenkins", key="build system")
        private = live.remember("The build runs on Buildkite", key="build system", agent_id=A)
        assert private["superseded"] is None  # A's private note does not replace the shared
        got = live.http.get(f"/api/memory/{shared['id']}").json()
        assert got["superseded_by"] is None
        newer = live.remember("The build runs on GitHub Actions", key="build system")
        assert newer["superseded"] == shared["id"]


def test_vector_index_masks_hidden_rows_before_taking_the_top_k() -> None:
    import numpy as np

    from mnemonist.search.vector_index import VectorIndex

    index = VectorIndex(2)
    index.add(1, np.array([1.0, 0.0], dtype=np.float32))
    index.add(2, np.array([0.9, 0.1], dtype=np.float32) / np.linalg.norm([0.9, 0.1]))
    index.add(3, np.array([0.0, 1.0], dtype=np.float32))
    query = np.array([1.0, 0.0], dtype=np.float32)
    assert [s for s, _ in index.search(query, 2)] == [1, 2]
    # the hidden rows give their places to the next best, they are not merely dropped
    assert [s for s, _ in index.search(query, 2, hidden={1})] == [2, 3]
    assert index.search(query, 2, hidden={1, 2, 3}) == []


def test_cli_reads_and_writes_as_an_agent(world: World) -> None:
    from click.testing import CliRunner

    from mnemonist.cli.main import cli

    def run(*args: str, env: dict[str, str] | None = None):
        return CliRunner(env=env).invoke(cli, [*args, "--url", world.live.url],
                                         catch_exceptions=False)

    stored = run("remember", "The cli-only quokkanote stays with agent c", "--private",
                 "--agent", "agent-c", "--json")
    assert stored.exit_code == 0, stored.output
    mid = json.loads(stored.output)["id"]
    assert json.loads(stored.output)["agent_id"] == "agent-c"
    assert run("get", mid).exit_code == 1  # no identity: not found
    assert "quokkanote" in run("get", mid, "--agent", "agent-c").output
    assert "quokkanote" in run("get", mid, env={"MNEMONIST_AGENT": "agent-c"}).output
    seen = run("recall", "quokkanote", "--json", env={"MNEMONIST_AGENT": "agent-b"})
    assert mid not in seen.output
    refused = run("remember", "no owner to be private to", "--private")
    assert refused.exit_code == 1 and "--agent" in refused.output


def test_others_private_memories_take_no_place_in_the_vector_leg(tmp_path: Path) -> None:
    """The vector leg's top k is taken after the mask: A's many close private memories do not
    push the global answer out of B's candidates (the keyword leg cannot find it here).
    `min_relevance=0`: every candidate is returned, whatever its relevance."""
    with run_daemon(tmp_path, {"search": {"top_k": 3}}) as live:
        answer = live.remember("The quarterly offsite happens in Lisbon")
        for city in ("Porto", "Madrid", "Seville", "Valencia", "Bilbao", "Malaga"):
            live.remember(f"Our team retreat is held in {city} this year", agent_id=A)
        live.flush()
        query = "where is the company retreat held?"
        seen = live.recall(query, agent_id=B, min_score=0, min_relevance=0)["results"]
        as_b = [r["id"] for r in seen]
        assert answer["id"] in as_b
        as_a = live.recall(query, agent_id=A, min_score=0, min_relevance=0)["results"]
        assert all(r["agent_id"] == A for r in as_a[:3])


def test_private_text_never_reaches_a_neighbours_context(world: World) -> None:
    """Memories are indexed with their source's neighbours (the context index): a private
    line must not be one of them, or a global memory beside it would match its words."""
    out = world.live.recall(MARK, agent_id=B, min_score=0, min_relevance=0)
    shared = [r for r in out["results"] if r["id"] == world.shared]
    assert shared and not shared[0]["scores"]["keyword"], shared
    mine = world.live.recall(MARK, agent_id=A, min_score=0, min_relevance=0)["results"]
    assert mine[0]["id"] == world.private and mine[0]["scores"]["keyword"]


def test_export_and_import_keep_owners_and_observers(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "one") as one:
        private = one.remember("Agent a keeps its deploy checklist here", agent_id=A,
                               user_id="maria")
        shared = one.remember("The on-call rota changes on Mondays", who=A)
        one.remember("The on-call rota changes on Mondays", who=B)
        bundle = one.http.get("/api/export", params={"all_scopes": "true"}).content
        before = {m: one.http.get(f"/api/memory/{m}", params={"agents": "*", "users": "*"})
                  .json() for m in (private["id"], shared["id"])}
    with run_daemon(tmp_path / "two") as two:
        resp = two.http.post("/api/import/bundle", content=bundle,
                             headers={"content-type": "application/x-ndjson"})
        assert resp.status_code == 200, resp.text
        for mid, was in before.items():
            now = two.http.get(f"/api/memory/{mid}",
                               params={"agents": "*", "users": "*"}).json()
            for field in ("agent_id", "user_id", "observed_by", "observation_count"):
                assert now[field] == was[field], field
        assert before[shared["id"]]["observed_by"] == [A, B]
        assert two.http.get(f"/api/memory/{private['id']}").status_code == 404
