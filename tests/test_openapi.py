"""The OpenAPI document says what the API really answers: 400 `{"error", "message"}` instead of
FastAPI's 422, the boundary's statuses, and limits that used to live only in code."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import LiveDaemon

pytestmark = pytest.mark.both_stores

UNSAFE = ("post", "put", "patch", "delete")


def operations(doc: dict[str, Any]):
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            yield path, method, op


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    return doc["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else schema


def test_every_operation_declares_the_errors_it_answers(live: LiveDaemon) -> None:
    doc = live.http.get("/openapi.json").json()
    error = doc["components"]["schemas"]["Error"]
    assert error["required"] == ["error", "message"]
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    seen = 0
    for path, method, op in operations(doc):
        seen += 1
        responses = op["responses"]
        assert "422" not in responses, (method, path)
        expected = {"400", "421"} | ({"403", "413", "415"} if method in UNSAFE else set())
        if "{" in path:
            expected.add("404")
        if path != "/health":
            expected |= {"401", "507"}
        assert expected <= set(responses), (method, path, sorted(responses))
        for status in expected:
            schema = responses[status]["content"]["application/json"]["schema"]
            assert resolve(doc, schema) is error or schema == {"$ref": "#/components/schemas/Error"}
    assert seen >= 30
    paths = doc["paths"]
    assert {"409"} <= set(paths["/api/memory/{memory_id}"]["delete"]["responses"])
    assert {"201", "200"} <= set(paths["/api/memory/remember"]["post"]["responses"])
    assert "202" in paths["/api/documents"]["post"]["responses"]


def test_limits_enforced_by_the_api_are_in_the_schema(live: LiveDaemon) -> None:
    doc = live.http.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    tags = schemas["RememberRequest"]["properties"]["tags"]["anyOf"][0]
    assert tags["maxItems"] == 100 and tags["items"]["maxLength"] == 200
    forget = schemas["ForgetRequest"]["properties"]
    assert forget["ids"]["anyOf"][0]["maxItems"] == 100_000
    assert forget["who"]["anyOf"][0]["maxLength"] == 200

    def query(path: str, method: str = "get") -> dict[str, dict[str, Any]]:
        params = doc["paths"][path][method].get("parameters", [])
        return {p["name"]: p["schema"] for p in params}

    search = query("/memory/search")
    assert (search["limit"]["minimum"], search["limit"]["maximum"]) == (1, 200)
    assert search["q"]["maxLength"] == 10_000
    embeddings = query("/api/embeddings")
    assert embeddings["limit"]["maximum"] == 10_000 and embeddings["offset"]["minimum"] == 0
    assert query("/api/memory/{memory_id}/neighbours")["n"]["maximum"] == 50
    mode = query("/api/repair/{name}", "post")["mode"]["anyOf"][0]
    assert mode["enum"] == ["observe", "execute"]
    # the bodies that routes parse themselves are declared too
    imported = doc["paths"]["/api/memory/import"]["post"]["requestBody"]
    body = resolve(doc, imported["content"]["application/json"]["schema"])
    assert body["properties"]["items"]["maxItems"] == 100_000
    deleted = doc["paths"]["/api/memory/{memory_id}"]["delete"]["requestBody"]
    assert "reason" in resolve(doc, deleted["content"]["application/json"]["schema"])[
        "properties"]


def test_what_the_schema_declares_is_what_the_api_answers(live: LiveDaemon) -> None:
    resp = live.http.get("/memory/search", params={"q": "x", "limit": 201})
    assert resp.status_code == 400 and "limit" in resp.json()["message"]
    resp = live.http.get("/api/embeddings", params={"offset": 10**30})
    assert resp.status_code == 400 and "offset" in resp.json()["message"]
    resp = live.http.get("/api/memories", params={"offset": 10**30})
    assert resp.status_code == 400 and "offset" in resp.json()["message"]
    resp = live.http.post("/api/repair/check-fts", params={"mode": "destroy"})
    assert resp.status_code == 400 and "mode" in resp.json()["message"]
