"""Scenarios both MCP transports must pass, driven through the official client's ClientSession."""

from __future__ import annotations

import json
from typing import Any

from mcp import ClientSession

TOOL_NAMES = {
    "memory_search", "memory_store", "memory_get", "memory_list", "memory_modify",
    "memory_forget", "memory_history", "knowledge_expand", "knowledge_expand_session",
    "graph_impact", "memory_feedback", "knowledge_relate", "review_list", "review_decide",
    "memory_restore",
}
REQUIRED = {
    "memory_search": ["query"],
    "memory_store": ["content"],
    "memory_get": ["id"],
    "memory_list": [],
    "memory_modify": ["id", "reason"],
    "memory_forget": [],
    "memory_history": ["id"],
    "knowledge_expand": [],  # one of entity and memory_id (oneOf)
    "knowledge_expand_session": ["session_key"],
    "graph_impact": ["entity"],
    "memory_feedback": ["id", "helpful"],
    "knowledge_relate": ["source", "target", "relation_type", "reason"],
    "review_list": [],
    "review_decide": ["id", "action", "reason"],
    "memory_restore": ["id", "reason"],
}
READ_ONLY = {"memory_search", "memory_get", "memory_list", "memory_history", "knowledge_expand",
             "knowledge_expand_session", "graph_impact", "review_list"}
#: a second rating counts again; a second retract, decision or restore finds nothing to do
NOT_IDEMPOTENT = {"memory_forget", "memory_feedback", "knowledge_relate", "review_decide",
                  "memory_restore"}
#: retract: true; keep_a / keep_b supersede the other memory
DESTRUCTIVE = {"memory_modify", "memory_forget", "knowledge_relate", "review_decide"}


async def call(session: ClientSession, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A successful call's structured result (checked against its JSON text content)."""
    result = await session.call_tool(name, args)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{name}({args}) failed: {text}"
    assert result.structured_content is not None
    assert json.loads(text) == result.structured_content
    return result.structured_content


async def fail(session: ClientSession, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A failed call's error body: {"error": code, "message": ...}, as a tool error."""
    result = await session.call_tool(name, args)
    assert result.is_error, f"{name}({args}) should fail: {result}"
    assert len(result.content) == 1 and result.content[0].type == "text"
    body = json.loads(result.content[0].text)
    assert set(body) >= {"error", "message"}, body
    return body


def daemon_error(live, method: str, path: str, body: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    """The same request straight to the daemon's HTTP API: the error it answers."""
    resp = live.http.request(method, path, json=body)
    assert resp.status_code >= 400, resp.text
    return resp.json()


async def check_tool_list(session: ClientSession) -> None:
    listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == TOOL_NAMES
    for name, tool in tools.items():
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["properties"], name
        assert schema["additionalProperties"] is False, name
        assert sorted(schema.get("required", [])) == sorted(REQUIRED[name]), name
        for field in REQUIRED[name]:
            assert field in schema["properties"], (name, field)
        for prop, spec in schema["properties"].items():
            assert spec.get("description"), (name, prop)
        assert tool.description and len(tool.description) > 80, name
        assert tool.output_schema and tool.output_schema["type"] == "object", name
        notes = tool.annotations
        assert notes is not None, name
        assert notes.read_only_hint is (name in READ_ONLY), name
        assert notes.destructive_hint is (name in DESTRUCTIVE), name
        assert notes.open_world_hint is False, name
        assert notes.idempotent_hint is (name not in NOT_IDEMPOTENT), name
    search = tools["memory_search"].input_schema["properties"]
    assert search["limit"]["minimum"] == 1 and search["limit"]["maximum"] == 200
    assert "rule" in search["type"]["enum"]
    assert tools["memory_forget"].input_schema["properties"]["mode"]["enum"] == [
        "preview", "execute"]
    assert "critical:" in tools["memory_store"].description
    assert "memory_list" in tools["memory_search"].description
    expand = tools["knowledge_expand"].input_schema
    assert expand["oneOf"] == [{"required": ["entity"]}, {"required": ["memory_id"]}]
    assert expand["properties"]["max_tokens"]["minimum"] == 10
    assert expand["properties"]["hops"] == {**expand["properties"]["hops"], "minimum": 1,
                                            "maximum": 10, "default": 2}
    impact = tools["graph_impact"]
    tier = impact.output_schema["properties"]["tiers"]["properties"]["will_break"]
    assert tier["items"]["properties"]["tier"]["enum"] == [
        "WILL BREAK", "LIKELY AFFECTED", "MAY NEED TESTING"]
    assert impact.input_schema["properties"]["min_confidence"]["maximum"] == 1.0
    relate = tools["knowledge_relate"].input_schema["properties"]
    assert "depends_on" in relate["relation_type"]["enum"]
    assert "loves" not in relate["relation_type"]["enum"]


async def check_round_trip(session: ClientSession, live, tag: str) -> None:
    """store → search → get → list → modify → history → forget (preview, execute) → gone."""
    stored = await call(session, "memory_store", {
        "content": f"The staging database of {tag} listens on port 6543",
        "type": "fact", "tags": [tag, "infra"], "importance": 0.7, "who": "mcp-test",
        "why": "asked twice", "project": tag, "source_type": "chat", "source_id": f"{tag}-s1",
        "occurred_at": "2026-03-01T09:00:00Z",
    })
    mid = stored["id"]
    assert stored["created"] is True and stored["version"] == 1
    assert stored["type"] == "fact" and stored["tags"] == [tag, "infra"]
    assert stored["project"] == tag and stored["importance"] == 0.7
    assert stored["occurred_at"].startswith("2026-03-01T09:00:00")
    again = await call(session, "memory_store", {
        "content": f"The staging database of {tag} listens on port 6543", "project": tag,
        "source_id": f"{tag}-s1"})
    assert again["id"] == mid and again["deduplicated"] is True
    live.flush()

    found = await call(session, "memory_search", {
        "query": f"which port does the {tag} staging database use?", "limit": 5,
        "project": tag, "tags": ["infra"], "type": "fact", "who": "mcp-test",
        "importance_min": 0.5, "since": "2026-01-01", "until": "2026-12-31", "context": 1,
        "time_filter": False, "now": "2026-06-01T00:00:00Z",
    })
    assert found["results"] and found["results"][0]["id"] == mid
    assert found["count"] == len(found["results"])
    for filters in ({"type": "rule"}, {"tags": ["elsewhere"]}, {"project": "other"},
                    {"importance_min": 0.9}, {"until": "2026-02-01"}, {"pinned": True}):
        miss = await call(session, "memory_search", {"query": f"{tag} staging database port",
                                                     **filters})
        assert mid not in [r["id"] for r in miss["results"]], filters

    got = await call(session, "memory_get", {"id": mid})
    assert got["content"].endswith("port 6543") and got["version"] == 1
    assert got["why"] == "asked twice" and got["is_deleted"] is False

    listed = await call(session, "memory_list", {"project": tag, "tags": ["infra"],
                                                 "pinned": False, "limit": 10})
    assert [m["id"] for m in listed["memories"]] == [mid] and listed["total"] == 1
    assert listed["has_more"] is False
    empty = await call(session, "memory_list", {"project": tag, "offset": 1})
    assert empty["memories"] == [] and empty["total"] == 1

    changed = await call(session, "memory_modify", {
        "id": mid, "content": f"The staging database of {tag} listens on port 6544",
        "tags": [tag, "infra", "db"], "reason": "the port moved", "if_version": 1,
    })
    assert changed["status"] == "updated" and changed["contentChanged"] is True
    assert changed["currentVersion"] == 1 and changed["newVersion"] == 2
    got = await call(session, "memory_get", {"id": mid})
    assert got["content"].endswith("port 6544") and got["version"] == 2
    assert got["tags"] == [tag, "infra", "db"]
    stale = await fail(session, "memory_modify", {"id": mid, "importance": 0.1,
                                                  "reason": "stale", "if_version": 1})
    direct = daemon_error(live, "PATCH", f"/api/memory/{mid}",
                          {"importance": 0.1, "reason": "stale", "if_version": 1})
    assert stale["error"] == direct["error"] == "version_conflict"
    assert stale["message"] == direct["message"]

    history = await call(session, "memory_history", {"id": mid})
    events = history["events"]
    assert [e["event"] for e in events] == ["created", "modified"]
    assert events[1]["reason"] == "the port moved"
    assert events[1]["old_content"].endswith("6543") and events[1]["new_content"].endswith("6544")

    preview = await call(session, "memory_forget", {"ids": [mid]})
    assert preview["mode"] == "preview" and preview["count"] == 1
    assert [c["id"] for c in preview["candidates"]] == [mid]
    assert preview["confirmToken"]
    assert (await call(session, "memory_get", {"id": mid}))["is_deleted"] is False
    no_reason = await fail(session, "memory_forget", {"mode": "execute", "ids": [mid]})
    assert no_reason["error"] == "invalid_request" and "reason" in no_reason["message"]
    done = await call(session, "memory_forget", {
        "mode": "execute", "ids": [mid], "reason": "the staging database is gone",
        "confirm_token": preview["confirmToken"],
    })
    assert done == {"mode": "execute", "deleted": 1, "ids": [mid], "hard": False}

    after = await call(session, "memory_search", {"query": f"{tag} staging database port"})
    assert mid not in [r["id"] for r in after["results"]]
    got = await call(session, "memory_get", {"id": mid})
    assert got["is_deleted"] is True
    history = await call(session, "memory_history", {"id": mid})
    assert [e["event"] for e in history["events"]] == ["created", "modified", "deleted"]
    assert history["events"][-1]["reason"] == "the staging database is gone"


async def check_bad_arguments(session: ClientSession, live) -> None:
    """Bad arguments come back as tool errors carrying the daemon's own code and message."""
    cases = [
        ("memory_store", {}, "POST", "/api/memory/remember", {}),
        ("memory_store", {"content": "x", "importance": 5},
         "POST", "/api/memory/remember", {"content": "x", "importance": 5}),
        ("memory_store", {"content": "x", "type": "gossip"},
         "POST", "/api/memory/remember", {"content": "x", "type": "gossip"}),
        ("memory_store", {"content": "x", "colour": "red"},
         "POST", "/api/memory/remember", {"content": "x", "colour": "red"}),
        ("memory_search", {"query": "x", "limit": 0},
         "POST", "/api/memory/recall", {"query": "x", "limit": 0}),
        ("memory_search", {"query": "x", "since": "last tuesday"},
         "POST", "/api/memory/recall", {"query": "x", "since": "last tuesday"}),
        ("memory_get", {"id": "0000-no-such-memory"},
         "GET", "/api/memory/0000-no-such-memory", None),
        ("memory_history", {"id": "0000-no-such-memory"},
         "GET", "/api/memory/0000-no-such-memory/history", None),
        ("memory_modify", {"id": "0000-no-such-memory", "content": "y", "reason": "r"},
         "PATCH", "/api/memory/0000-no-such-memory", {"content": "y", "reason": "r"}),
        ("memory_forget", {"mode": "execute"}, "POST", "/api/memory/forget",
         {"mode": "execute"}),
    ]
    for tool, args, method, path, body in cases:
        got = await fail(session, tool, args)
        want = daemon_error(live, method, path, body)
        assert (got["error"], got["message"]) == (want["error"], want["message"]), (tool, args)

    got = await fail(session, "memory_store", {})
    assert got == {"error": "invalid_request", "message": "content: is required"}
    got = await fail(session, "memory_store", {"content": "x", "importance": 5})
    assert got["error"] == "invalid_request" and got["message"].startswith("importance:")
    got = await fail(session, "memory_get", {"id": "0000-no-such-memory"})
    assert got == {"error": "not_found", "message": "no memory 0000-no-such-memory"}

    memory = await call(session, "memory_store", {"content": "bad-argument probe memory"})
    got = await fail(session, "memory_modify", {"id": memory["id"], "importance": 0.2})
    assert got["error"] == "invalid_request" and "reason is required" in got["message"]
    got = await fail(session, "memory_get", {})
    assert got["message"] == "id: is required"
    got = await fail(session, "memory_get", {"id": "../../health"})
    assert got["error"] == "not_found"
    got = await fail(session, "memory_search", {"query": "x", "expand": "lots", "bogus": 1})
    assert got == {"error": "invalid_request", "message": "bogus: unknown field"}
    got = await fail(session, "memory_teleport", {})
    assert got["error"] == "unknown_tool"
    # null stands for "not given"
    ok = await call(session, "memory_search", {"query": "probe memory", "type": None})
    assert ok["count"] >= 0


async def check_graph_tools(session: ClientSession, live, tag: str) -> None:
    """Plain memories make a service graph; the graph tools read it back, the same as the
    daemon's HTTP API answers, and memory_feedback rates a memory for a prompt."""
    api, db = f"{tag.capitalize()}Api", f"{tag.capitalize()}Db"
    first = await call(session, "memory_store", {
        "content": f"Our {api} depends on {db} for orders.", "project": tag})
    await call(session, "memory_store", {
        "content": f"The nightly {tag.capitalize()}Backup reads from {db}.", "project": tag})
    impact = await call(session, "graph_impact", {"entity": db, "project": tag})
    will_break = {i["entity"]["name"]: i for i in impact["tiers"]["will_break"]}
    assert set(will_break) == {api, f"{tag.capitalize()}Backup"}
    assert will_break[api]["supporting_memory_ids"] == [first["id"]]
    assert will_break[api]["tier"] == "WILL BREAK"
    assert impact.pop("notice").startswith("Memory text in this answer is quoted data")
    assert impact == live.http.post("/api/graph/impact",
                                    json={"entity": db, "project": tag}).json()
    expand = await call(session, "knowledge_expand",
                        {"entity": api, "hops": 1, "max_tokens": 500, "project": tag})
    assert [n["entity"]["name"] for n in expand["neighbours"]] == [db]
    assert expand["neighbours"][0]["relation"]["reason"] == "pattern-matched"
    assert expand["tokens"] <= 500
    missing = await fail(session, "graph_impact", {"entity": f"{tag}-nothing-named-so"})
    assert missing["error"] == "not_found"
    both = await fail(session, "knowledge_expand", {"entity": api, "memory_id": first["id"]})
    assert both["error"] == "invalid_request"
    # a stated relation: followed by graph_impact at once, with its reason; then retracted
    payments = f"{tag.capitalize()}Payments"
    stated = await call(session, "knowledge_relate", {
        "source": payments, "target": api, "relation_type": "calls", "project": tag,
        "reason": "checkout calls it for every order"})
    assert stated["created"] is True and stated["relation"]["reason"] == "user-stated"
    assert stated["relation"]["confidence"] == 1.0
    impact = await call(session, "graph_impact", {"entity": db, "project": tag})
    will_break = {i["entity"]["name"]: i for i in impact["tiers"]["will_break"]}
    assert [e["reason"] for e in will_break[payments]["edges"]] == [
        "pattern-matched", "user-stated"]
    assert will_break[payments]["edges"][1]["note"] == "checkout calls it for every order"
    bad = await fail(session, "knowledge_relate", {
        "source": payments, "target": api, "relation_type": "loves", "reason": "x"})
    assert bad["error"] == "invalid_request" and "relation_type" in bad["message"]
    gone = await call(session, "knowledge_relate", {
        "source": payments, "target": api, "relation_type": "calls", "project": tag,
        "reason": "wrong: it goes through the gateway", "retract": True})
    assert gone["retracted"] == stated["relation"]["id"]
    impact = await call(session, "graph_impact", {"entity": db, "project": tag})
    assert payments not in {i["entity"]["name"] for i in impact["tiers"]["will_break"]}
    again = await fail(session, "knowledge_relate", {
        "source": payments, "target": api, "relation_type": "calls", "project": tag,
        "reason": "again", "retract": True})
    assert again["error"] == "not_found"
    rated = await call(session, "memory_feedback", {
        "id": first["id"], "helpful": False, "query": f"how is {tag} deployed?"})
    assert rated == {**rated, "memory_id": first["id"], "helpful": False,
                     "unhelpful_for_prompt": 1, "suppressed_for_prompt": False}
    rated = await call(session, "memory_feedback", {
        "id": first["id"], "helpful": False, "query": f"How is {tag}   deployed?"})
    assert rated["unhelpful_for_prompt"] == 2 and rated["suppressed_for_prompt"] is True
