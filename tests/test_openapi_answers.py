"""The OpenAPI document declares what each route answers: the keys of the service's typed
answer (model/answers*.py), the deprecated camelCase twins marked so. A real answer holds every
key its schema requires and no key it does not declare: that keeps the types honest."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import LiveDaemon
from mnemonist.api.openapi import ANSWERS
from mnemonist.model.answers import LEGACY_KEYS


@pytest.fixture(scope="module")
def doc(live: LiveDaemon) -> dict[str, Any]:
    resp = live.http.get("/openapi.json")
    assert resp.status_code == 200
    return resp.json()


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    return doc["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else schema


def answer_schema(doc: dict[str, Any], method: str, path: str,
                  status: int = 200) -> dict[str, Any]:
    response = doc["paths"][path][method]["responses"][str(status)]
    return resolve(doc, response["content"]["application/json"]["schema"])


def conforms(doc: dict[str, Any], schema: dict[str, Any], value: Any, where: str) -> None:
    """`value` is what `schema` says, all the way down: an object of a TypedDict holds every
    key it requires and no key it does not declare; the values have the declared types."""
    schema = resolve(doc, schema)
    if "anyOf" in schema:
        problems = []
        for option in schema["anyOf"]:
            try:
                conforms(doc, option, value, where)
                return
            except AssertionError as exc:
                problems.append(str(exc))
        raise AssertionError(f"{where}: matches none of {problems}")
    kind = schema.get("type")
    if kind == "null":
        assert value is None, where
    elif kind == "object":
        assert isinstance(value, dict), (where, value)
        if "properties" in schema:
            props = schema["properties"]
            missing = set(schema.get("required", [])) - value.keys()
            extra = value.keys() - props.keys()
            assert not missing, (where, "missing", missing)
            assert not extra, (where, "undeclared", extra)
            for key, item in value.items():
                conforms(doc, props[key], item, f"{where}.{key}")
        elif isinstance(schema.get("additionalProperties"), dict):
            for key, item in value.items():
                conforms(doc, schema["additionalProperties"], item, f"{where}.{key}")
    elif kind == "array":
        assert isinstance(value, list), (where, value)
        for n, item in enumerate(value):
            conforms(doc, schema.get("items", {}), item, f"{where}[{n}]")
    elif kind == "string":
        assert isinstance(value, str), (where, value)
    elif kind == "integer":
        assert isinstance(value, int) and not isinstance(value, bool), (where, value)
    elif kind == "number":
        assert isinstance(value, int | float) and not isinstance(value, bool), (where, value)
    elif kind == "boolean":
        assert isinstance(value, bool), (where, value)


def assert_holds(doc: dict[str, Any], method: str, path: str, answer: dict[str, Any],
                 status: int = 200) -> None:
    """Every key the schema requires is in the answer, and every key of the answer is
    declared, at every depth the schema describes."""
    schema = answer_schema(doc, method, path, status)
    assert schema.get("required"), (method, path)
    conforms(doc, schema, answer, f"{method} {path}")


def test_every_declared_answer_is_a_route_with_its_schema(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    for method, path in ANSWERS:
        op = doc["paths"].get(path, {}).get(method)
        assert op is not None, (method, path)
        ok = [r for status, r in op["responses"].items() if status.startswith("2")]
        assert ok, (method, path)
        for response in ok:
            ref = response["content"]["application/json"]["schema"]["$ref"]
            assert ref.rsplit("/", 1)[1] in schemas, (method, path)
    # the write routes' statuses other than 200 declare the answer too
    remember = doc["paths"]["/api/memory/remember"]["post"]["responses"]
    assert remember["201"]["content"] == remember["200"]["content"]


def test_the_deprecated_twins_are_marked(doc: dict[str, Any]) -> None:
    patch = answer_schema(doc, "patch", "/api/memory/{memory_id}")["properties"]
    for snake in ("current_version", "new_version", "content_changed", "duplicate_memory_id"):
        assert not patch[snake].get("deprecated"), snake
        assert patch[LEGACY_KEYS[snake]]["deprecated"] is True, snake
    forget = answer_schema(doc, "post", "/api/memory/forget")["properties"]
    assert forget["confirmToken"]["deprecated"] is True
    assert "confirm_token" in forget and not forget["confirm_token"].get("deprecated")


def test_real_answers_hold_their_schemas(live: LiveDaemon, doc: dict[str, Any]) -> None:
    resp = live.http.post("/api/memory/remember", json={
        "content": "The billing service stores invoices in PostgreSQL and caches them in Redis",
        "tags": ["openapi"], "project": "openapi-answers"})
    assert resp.status_code == 201, resp.text
    made = resp.json()
    assert_holds(doc, "post", "/api/memory/remember", made, status=201)
    live.flush()

    recall = live.recall("where are invoices stored", project="openapi-answers")
    assert recall["count"] >= 1
    assert_holds(doc, "post", "/api/memory/recall", recall)

    got = live.http.get(f"/api/memory/{made['id']}").json()
    assert_holds(doc, "get", "/api/memory/{memory_id}", got)
    listed = live.http.get("/api/memories", params={"project": "openapi-answers"}).json()
    assert_holds(doc, "get", "/api/memories", listed)

    patched = live.http.patch(f"/api/memory/{made['id']}", json={
        "importance": 0.9, "reason": "the schema test"})
    assert patched.status_code == 200, patched.text
    assert_holds(doc, "patch", "/api/memory/{memory_id}", patched.json())
    history = live.http.get(f"/api/memory/{made['id']}/history").json()
    assert_holds(doc, "get", "/api/memory/{memory_id}/history", history)

    entities = live.http.get("/api/entities", params={"project": "openapi-answers"}).json()
    assert entities["entities"], "the remember names PostgreSQL and Redis"
    assert_holds(doc, "get", "/api/entities", entities)
    scope = {"project": "openapi-answers"}
    entity = live.http.get("/api/entities/PostgreSQL", params=scope).json()
    assert_holds(doc, "get", "/api/entities/{entity_id}", entity)
    hood = live.http.get("/api/graph/neighbourhood",
                         params={"entity": "billing service", **scope}).json()
    assert hood["edges"]
    assert_holds(doc, "get", "/api/graph/neighbourhood", hood)
    expand = live.http.post("/api/knowledge/expand", json={"entity": "PostgreSQL", **scope})
    assert_holds(doc, "post", "/api/knowledge/expand", expand.json())
    impact = live.http.post("/api/graph/impact", json={"entity": "PostgreSQL", **scope})
    assert_holds(doc, "post", "/api/graph/impact", impact.json())
    diagnostics = live.http.get("/api/diagnostics/graph").json()
    assert_holds(doc, "get", "/api/diagnostics/graph", diagnostics)

    status = live.http.get("/api/status").json()
    assert_holds(doc, "get", "/api/status", status)
    assert_holds(doc, "get", "/health", live.http.get("/health").json())


def test_a_key_the_schema_does_not_declare_is_caught(doc: dict[str, Any]) -> None:
    schema = answer_schema(doc, "post", "/api/hooks/compaction-complete")
    conforms(doc, schema, {"session_key": "s", "recovery_pending": True}, "ok")
    with pytest.raises(AssertionError, match="undeclared"):
        conforms(doc, schema, {"session_key": "s", "recovery_pending": True, "x": 1}, "extra")
    with pytest.raises(AssertionError, match="missing"):
        conforms(doc, schema, {"session_key": "s"}, "short")
    with pytest.raises(AssertionError):
        conforms(doc, schema, {"session_key": 1, "recovery_pending": True}, "type")


def test_sessions_hooks_and_writes_hold_their_schemas(live: LiveDaemon,
                                                      doc: dict[str, Any]) -> None:
    session = {"session_id": "openapi-answers-1", "cwd": "/tmp"}
    start = live.http.post("/api/hooks/session-start", json=session)
    assert_holds(doc, "post", "/api/hooks/session-start", start.json())
    prompt = live.http.post("/api/hooks/user-prompt-submit",
                            json={**session, "prompt": "where are the invoices stored?"})
    assert_holds(doc, "post", "/api/hooks/user-prompt-submit", prompt.json())
    pre = live.http.post("/api/hooks/pre-compaction", json=session)
    assert_holds(doc, "post", "/api/hooks/pre-compaction", pre.json())
    done = live.http.post("/api/hooks/compaction-complete", json=session)
    assert_holds(doc, "post", "/api/hooks/compaction-complete", done.json())
    end = live.http.post("/api/hooks/session-end", json=session)
    assert_holds(doc, "post", "/api/hooks/session-end", end.json())
    checkpoint = live.http.post("/api/checkpoints",
                                json={"session_key": "openapi-answers-1", "note": "a test"})
    assert checkpoint.status_code == 201, checkpoint.text
    assert_holds(doc, "post", "/api/checkpoints", checkpoint.json(), status=201)
    latest = live.http.get("/api/checkpoints/latest",
                           params={"session_key": "openapi-answers-1"}).json()
    assert_holds(doc, "get", "/api/checkpoints/latest", latest)
    listed = live.http.get("/api/checkpoints").json()
    assert_holds(doc, "get", "/api/checkpoints", listed)
    live.flush()
    got = live.http.get("/api/sessions/openapi-answers-1").json()
    assert_holds(doc, "get", "/api/sessions/{session_key}", got)

    made = live.remember("A memory the schema test forgets", project="openapi-forget")
    preview = live.http.post("/api/memory/forget", json={
        "ids": [made["id"]], "mode": "preview"}).json()
    assert_holds(doc, "post", "/api/memory/forget", preview)
    deleted = live.http.request("DELETE", f"/api/memory/{made['id']}",
                                json={"reason": "the schema test"})
    assert deleted.status_code == 200, deleted.text
    assert_holds(doc, "delete", "/api/memory/{memory_id}", deleted.json())
    recovered = live.http.post(f"/api/memory/{made['id']}/recover",
                               json={"reason": "the schema test"})
    assert_holds(doc, "post", "/api/memory/{memory_id}/recover", recovered.json())
    purged = live.http.request("DELETE", f"/api/memory/{made['id']}",
                               json={"reason": "the schema test", "purge": True})
    assert_holds(doc, "delete", "/api/memory/{memory_id}", purged.json())
    imported = live.http.post("/api/memory/import", json={"items": [
        {"content": "An imported memory for the schema test", "project": "openapi-import"}]})
    assert_holds(doc, "post", "/api/memory/import", imported.json())
