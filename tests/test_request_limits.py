"""One request cannot stall the daemon, and input at the edges is a 400, never a 500: bounded
tags, dates within 1000..9999, bounded JSON nesting, documents sized before they are scrubbed.
Over a real daemon and real HTTP."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from conftest import LiveDaemon
from mnemonist.model.memory import format_ts
from mnemonist.model.requests import parse_when

pytestmark = pytest.mark.both_stores


def row_counts(live: LiveDaemon) -> tuple[int, int]:
    return (live.query("SELECT COUNT(*) FROM memories")[0][0],
            live.query("SELECT COUNT(*) FROM memory_history")[0][0])


def assert_400(resp: httpx.Response, field: str) -> dict[str, Any]:
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["error"] and field in body["message"], body
    return body


class HealthProbe:
    """Measures /health latency from another thread, on its own connection."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as http:
            while not self._stop.is_set():
                start = time.monotonic()
                assert http.get("/health").status_code == 200
                self.latencies.append(time.monotonic() - start)
                time.sleep(0.02)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        while not self.latencies:  # warm: the first answer came back
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: Any) -> None:
        time.sleep(0.1)
        self._stop.set()
        self._thread.join(60)


# -- item 4 ---------------------------------------------------------------------------------------


def test_thirty_thousand_tags_are_refused_fast_and_health_stays_responsive(
        live: LiveDaemon) -> None:
    before = row_counts(live)
    tags = [f"tag-{i}" for i in range(30_000)]
    with HealthProbe(live.url) as probe:
        start = time.monotonic()
        resp = live.http.post("/api/memory/remember", json={"content": "many tags", "tags": tags})
        took = time.monotonic() - start
        comma = live.http.post("/api/memory/remember",
                               json={"content": "many tags", "tags": ",".join(tags)})
        recall = live.http.post("/api/memory/recall", json={"query": "x", "tags": tags})
    assert "at most 100" in assert_400(resp, "tags")["message"]
    assert_400(comma, "tags")
    assert_400(recall, "tags")
    assert took < 2.0, f"a 30,000-tag request took {took:.1f}s"
    assert max(probe.latencies) < 2.0, f"/health stalled {max(probe.latencies):.1f}s"
    assert row_counts(live) == before


def test_tags_at_the_limit_are_kept_once_each(live: LiveDaemon) -> None:
    tags = [f"T{i % 50}" for i in range(100)]  # 100 given, 50 distinct after lower-casing
    out = live.remember("a memory with exactly one hundred tags", tags=tags)
    assert out["tags"] == [f"t{i}" for i in range(50)]
    assert_400(live.http.post("/api/memory/remember",
                              json={"content": "long tag", "tags": ["x" * 201]}), "tags.0")


def test_an_oversized_document_is_refused_before_it_is_scrubbed(live: LiveDaemon) -> None:
    limit = live.daemon.config.memory.pipeline_v2.documents.max_content_bytes
    text = "word password=abcdefgh1234\n" * (limit // 27 + 1000)  # slow to scrub: many secrets
    with HealthProbe(live.url) as probe:
        start = time.monotonic()
        resp = live.http.post("/api/documents", json={"content": text})
        took = time.monotonic() - start
    assert "maxContentBytes" in assert_400(resp, "content")["message"]
    assert took < 5.0, f"refusing an oversized document took {took:.1f}s"
    assert max(probe.latencies) < 2.0, f"/health stalled {max(probe.latencies):.1f}s"


# -- item 7: dates -------------------------------------------------------------------------------

EDGE_TIMES = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00", "0001-01-03",
              "0999-06-01", "0999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"]


@pytest.mark.parametrize("when", EDGE_TIMES)
def test_times_outside_the_range_are_a_400_naming_the_field(live: LiveDaemon, when: str) -> None:
    before = row_counts(live)
    mid = live.remember(f"a memory to patch with {when}")["id"]
    before = row_counts(live)
    cases = [
        (live.http.post("/api/memory/remember", json={"content": "edge", "occurred_at": when}),
         "occurred_at"),
        (live.http.post("/api/memory/recall", json={"query": "edge", "since": when}), "since"),
        (live.http.post("/api/memory/recall", json={"query": "edge", "until": when}), "until"),
        (live.http.post("/api/memory/recall", json={"query": "last week", "now": when}), "now"),
        (live.http.get("/api/memories", params={"since": when}), "since"),
        (live.http.post("/api/memory/forget", json={"until": when}), "until"),
        (live.http.patch(f"/api/memory/{mid}", json={"occurred_at": when, "reason": "r"}),
         "occurred_at"),
        (live.http.post("/api/memory/import", json=[{"content": "edge", "occurred_at": when}]),
         "items.0.occurred_at"),
    ]
    for resp, field in cases:
        assert "1000-01-01..9999-12-31" in assert_400(resp, field)["message"]
    assert row_counts(live) == before


def test_times_at_the_edges_are_kept_with_four_digit_years(live: LiveDaemon) -> None:
    early = live.remember("the earliest memory", occurred_at="1000-01-01T00:00:00Z")
    late = live.remember("the latest memory", occurred_at="9999-12-31T23:59:59Z")
    assert early["occurred_at"] == "1000-01-01T00:00:00.000Z"
    assert late["occurred_at"] == "9999-12-31T23:59:59.000Z"
    # within range after conversion to UTC
    zoned = live.remember("zoned", occurred_at="1000-01-01T10:00:00+09:00")
    assert zoned["occurred_at"] == "1000-01-01T01:00:00.000Z"
    listed = live.http.get("/api/memories", params={"until": "1000-01-02",
                                                    "order": "occurred_at"}).json()
    assert {m["id"] for m in listed["memories"]} == {early["id"], zoned["id"]}
    # a relative time near the start of the range reaches before it, written with 4 digits
    out = live.recall("what happened last week", now="1000-01-03")
    window = out["time_window"]
    assert window["start"].startswith("0999-12-") and window["end"] < "1000-01-03"
    # absurd amounts of time name no window, and are no 500
    for query in ("99999999 days ago", "999999999 years ago", "the last 99999999 years"):
        resp = live.http.post("/api/memory/recall", json={"query": query, "now": "9999-12-30"})
        assert resp.status_code == 200, resp.text


def test_format_ts_always_writes_four_digit_years() -> None:
    from datetime import UTC, datetime

    assert format_ts(datetime(999, 6, 1, tzinfo=UTC)) == "0999-06-01T00:00:00.000Z"
    assert format_ts(datetime(1, 1, 1, tzinfo=UTC)) == "0001-01-01T00:00:00.000Z"
    assert sorted([format_ts(datetime(999, 1, 1, tzinfo=UTC)),
                   format_ts(datetime(1000, 1, 1, tzinfo=UTC))])[0].startswith("0999")
    assert parse_when("2024-02-29T12:00:00+02:00") == "2024-02-29T10:00:00.000Z"


# -- item 7: JSON nesting -------------------------------------------------------------------------

DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"reason": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001


@pytest.mark.parametrize(("method", "path", "raw"), [
    ("POST", "/api/memory/import", DEEP),
    ("POST", "/api/memory/import", b'{"items": ' + DEEP + b"}"),
    ("POST", "/api/memory/remember", b'{"content": "x", "tags": ' + DEEP + b"}"),
    ("DELETE", "/api/memory/some-id", DEEP_OBJECT),
    ("DELETE", "/api/documents/some-id", DEEP_OBJECT),
    ("POST", "/mcp", DEEP),
])
def test_deeply_nested_json_is_a_400(live: LiveDaemon, method: str, path: str,
                                     raw: bytes) -> None:
    before = row_counts(live)
    headers = {"content-type": "application/json", "accept": "application/json"}
    resp = live.http.request(method, path, content=raw, headers=headers)
    body = assert_400(resp, "body")
    assert body["error"] == "json_too_deep" and "64" in body["message"]
    assert row_counts(live) == before
    assert live.http.get("/health").status_code == 200


def test_json_lines_are_bounded_too(live: LiveDaemon) -> None:
    raw = b'{"content": "fine"}\n' + b'{"content": "x", "tags": ' + DEEP + b"}\n"
    resp = live.http.post("/api/memory/import", content=raw,
                          headers={"content-type": "application/x-ndjson"})
    assert resp.json()["error"] == "json_too_deep"
