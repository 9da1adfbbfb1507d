"""Bad input: every error is a 4xx JSON body {"error", "message"} naming the field, and writes
nothing. Hostile query text is data, never FTS5 syntax, and never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import LiveDaemon, run_daemon

pytestmark = pytest.mark.both_stores

MAX_CHARS = 200


@pytest.fixture(scope="module")
def live(daemon_store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    """This module's one daemon, with a low content limit."""
    home: Path = tmp_path_factory.mktemp("errors-home")
    with run_daemon(home, {"memory": {"max_content_chars": MAX_CHARS}}) as d:
        yield d


def row_counts(live: LiveDaemon) -> dict[str, int]:
    return {
        t: live.query(f"SELECT COUNT(*) FROM {t}")[0][0]
        for t in ("memories", "memory_history", "memory_jobs", "session_transcripts")
    }


def assert_error(resp, field: str, status: int = 400) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) >= {"error", "message"}
    assert isinstance(body["error"], str) and body["error"]
    assert field in body["message"], body
    return body


REMEMBER_BAD: list[tuple[Any, str]] = [
    ({}, "content"),
    ({"content": ""}, "content"),
    ({"content": "   \n\t "}, "content"),
    ({"content": "ok", "importance": 1.5}, "importance"),
    ({"content": "ok", "importance": -0.1}, "importance"),
    ({"content": "ok", "colour": "blue"}, "colour"),
    ({"content": 42}, "content"),
    ({"content": "ok", "tags": 5}, "tags"),
    ({"content": "ok", "tags": [1, 2]}, "tags"),
    ({"content": "ok", "pinned": "maybe"}, "pinned"),
    ({"content": "ok", "importance": "high"}, "importance"),
    ({"content": "ok", "type": "gossip"}, "type"),
    ({"content": "ok", "occurred_at": "yesterday-ish"}, "occurred_at"),
    ({"content": "ok", "occurred_at": "2023-13-45"}, "occurred_at"),
    ({"content": "ok", "idempotency_key": ""}, "idempotency_key"),
    ({"content": "x" * (MAX_CHARS + 1)}, "content"),
    ({"content": "critical: [a]: " + "y" * (MAX_CHARS + 1)}, "content"),
]


@pytest.mark.parametrize(("body", "field"), REMEMBER_BAD)
def test_remember_rejects_bad_input(live: LiveDaemon, body: Any, field: str) -> None:
    before = row_counts(live)
    assert_error(live.http.post("/api/memory/remember", json=body), field)
    assert row_counts(live) == before


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json",
        b'{"content": "x",}',
        b"",
        b"\xff\xfe",
        b'["content", "x"]',
        b"42",
        b'"just a string"',
        b"null",
    ],
)
def test_remember_rejects_non_object_bodies(live: LiveDaemon, raw: bytes) -> None:
    before = row_counts(live)
    resp = live.http.post(
        "/api/memory/remember", content=raw, headers={"content-type": "application/json"}
    )
    assert_error(resp, "body")
    assert row_counts(live) == before


RECALL_BAD: list[tuple[dict[str, Any], str]] = [
    ({}, "query"),
    ({"query": ""}, "query"),
    ({"query": "   "}, "query"),
    ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "limit": 10000}, "limit"),
    ({"query": "x", "limit": "ten"}, "limit"),
    ({"query": "x", "since": "yesterday-ish"}, "since"),
    ({"query": "x", "until": "2023-13-45"}, "until"),
    ({"query": "x", "type": "gossip"}, "type"),
    ({"query": "x", "importance_min": 1.5}, "importance_min"),
    ({"query": "x", "min_score": -1}, "min_score"),
    ({"query": "x", "bogus": True}, "bogus"),
    ({"query": ["a", "b"]}, "query"),
    ({"query": "x" * 10_001}, "query"),
]


@pytest.mark.parametrize(("body", "field"), RECALL_BAD)
def test_recall_rejects_bad_input(live: LiveDaemon, body: dict[str, Any], field: str) -> None:
    assert_error(live.http.post("/api/memory/recall", json=body), field)


def test_mutations_reject_bad_input_and_write_nothing(live: LiveDaemon) -> None:
    mid = live.remember("The error tests need one real memory")["id"]
    before = row_counts(live)
    cases = [
        (
            live.http.patch(f"/api/memory/{mid}", json={"importance": 2, "reason": "x"}),
            "importance",
        ),
        (live.http.patch(f"/api/memory/{mid}", json={"content": "", "reason": "x"}), "content"),
        (live.http.patch(f"/api/memory/{mid}", json={"type": "gossip", "reason": "x"}), "type"),
        (
            live.http.patch(f"/api/memory/{mid}", json={"if_version": "two", "reason": "x"}),
            "if_version",
        ),
        (
            live.http.patch(
                f"/api/memory/{mid}", content=b"[1]", headers={"content-type": "application/json"}
            ),
            "body",
        ),
        (live.http.post("/api/memory/modify", json={"patches": []}), "patches"),
        (live.http.post("/api/memory/modify", json={"patches": "all"}), "patches"),
        (
            live.http.post(
                "/api/memory/modify", json={"reason": "r", "patches": [{"importance": 0.1}]}
            ),
            "id",
        ),
        (
            live.http.request(
                "DELETE",
                f"/api/memory/{mid}",
                content=b"{oops",
                headers={"content-type": "application/json"},
            ),
            "JSON",
        ),
        (live.http.request("DELETE", f"/api/memory/{mid}", json=["reason"]), "object"),
        (
            live.http.request(
                "DELETE", f"/api/memory/{mid}", json={"reason": "x", "if_version": "one"}
            ),
            "if_version",
        ),
        (live.http.post(f"/api/memory/{mid}/recover", json={"reason": 5}), "reason"),
        (live.http.post("/api/memory/forget", json={"mode": "nuke", "ids": [mid]}), "mode"),
        (live.http.post("/api/memory/forget", json={"ids": mid}), "ids"),
        (live.http.get("/api/memories", params={"limit": "lots"}), "limit"),
        (live.http.get("/api/memories", params={"since": "2023-13-45"}), "since"),
        (live.http.get("/api/memories", params={"order": "random"}), "order"),
        (live.http.get("/api/memories", params={"offset": -1}), "offset"),
        (live.http.get("/memory/search", params={"q": "x", "limit": 0}), "limit"),
        (live.http.get("/memory/search", params={"q": "x", "limit": "many"}), "limit"),
        (live.http.get("/api/embeddings", params={"offset": -5}), "offset"),
    ]
    for resp, field in cases:
        assert_error(resp, field)
    assert row_counts(live) == before
    m = live.http.get(f"/api/memory/{mid}").json()
    assert m["version"] == 1 and m["is_deleted"] is False


def test_patch_content_is_checked_like_remember(live: LiveDaemon) -> None:
    mid = live.remember("Patched content must respect the same limits")["id"]
    before = row_counts(live)
    for content in ("   ", "\t\n", "w" * (MAX_CHARS + 1)):
        resp = live.http.patch(f"/api/memory/{mid}", json={"content": content, "reason": "r"})
        assert_error(resp, "content")
        batch = live.http.post(
            "/api/memory/modify", json={"reason": "r", "patches": [{"id": mid, "content": content}]}
        )
        assert batch.status_code == 200, batch.text
        (result,) = batch.json()["results"]
        assert result["status"] == "invalid" and "content" in result["message"]
    assert row_counts(live) == before
    m = live.http.get(f"/api/memory/{mid}").json()
    assert m["content"] == "Patched content must respect the same limits" and m["version"] == 1


def test_lone_surrogates_are_rejected(live: LiveDaemon) -> None:
    before = row_counts(live)
    for raw in (b'{"content": "bad \\ud800 text"}', b'{"content": "ok", "who": "\\udfff"}'):
        resp = live.http.post(
            "/api/memory/remember", content=raw, headers={"content-type": "application/json"}
        )
        assert resp.status_code == 400, resp.text
        assert "content" in resp.json()["message"] or "who" in resp.json()["message"]
    assert row_counts(live) == before


def test_unknown_route_and_method_are_json(live: LiveDaemon) -> None:
    resp = live.http.get("/api/nope")
    assert resp.status_code == 404 and resp.json()["error"] == "not_found"
    resp = live.http.put("/api/memory/remember", json={"content": "x"})
    assert resp.status_code == 405 and resp.json()["error"] == "method_not_allowed"


HOSTILE = [
    '"',
    'a"b',
    "NEAR(a b)",
    "foo*",
    "-bar",
    "(x OR",
    "content:secret",
    "AND",
    "NOT x",
    "^x",
    "🦄🔥",
    "'; DROP TABLE memories; --",
    "nul\x00byte",
    "*",
    ")",
    "{col1 col2}: x",
    "\\",
    "OR OR OR",
    "a" * 10_000,
    "quokka " * 1400,
]


@pytest.fixture(scope="module")
def hostile_memory(live: LiveDaemon) -> str:
    mid = live.remember(
        "Quokka notes: NEAR the secret content column; foo bar; drop tables carefully"
    )["id"]
    live.flush()
    return mid


@pytest.mark.parametrize("query", HOSTILE, ids=lambda q: repr(q[:20]))
def test_hostile_queries_are_data(live: LiveDaemon, hostile_memory: str, query: str) -> None:
    before = row_counts(live)
    resp = live.http.post("/api/memory/recall", json={"query": query})
    assert resp.status_code == 200, resp.text
    assert resp.json()["count"] == len(resp.json()["results"])
    resp = live.http.get("/memory/search", params={"q": query})
    assert resp.status_code == 200, resp.text
    assert row_counts(live)["memories"] == before["memories"]
    # the memory holding those words is still found by a normal query
    found = live.recall("quokka secret content column")["results"]
    assert found and found[0]["id"] == hostile_memory
    legacy = live.http.get("/memory/search", params={"q": "NEAR secret content"}).json()
    assert hostile_memory in [r["id"] for r in legacy["results"]]


def test_hostile_words_match_as_words(live: LiveDaemon, hostile_memory: str) -> None:
    cases = {
        "content:secret": ("content", "secret"),
        "NEAR(secret column)": ("near", "secret", "column"),
        "secret*": ("secret",),
        "-drop tables": ("drop", "table"),
    }
    for query, words in cases.items():
        legacy = live.http.get("/memory/search", params={"q": query}).json()
        assert hostile_memory in [r["id"] for r in legacy["results"]], query
        for r in legacy["results"]:  # plain word matches, no operator semantics
            assert any(w in r["content"].lower() for w in words), (query, r["content"])


def test_over_long_query_is_a_clear_400(live: LiveDaemon) -> None:
    body = assert_error(live.http.post("/api/memory/recall", json={"query": "q" * 10_001}), "query")
    assert body["error"] == "invalid_request"
    resp = live.http.get("/memory/search", params={"q": "q" * 10_001})
    assert resp.status_code in (200, 400)
    if resp.status_code == 400:
        assert_error(resp, "q")


def test_content_at_the_limit_is_accepted(live: LiveDaemon) -> None:
    resp = live.http.post("/api/memory/remember", json={"content": "z" * MAX_CHARS})
    assert resp.status_code == 201, resp.text
