"""Document ingest end to end on a running daemon: text and URL documents through the status
transitions to chunk memories that recall finds; list, get, chunks and delete; the retry and
failure paths; bad input and the private-address rule at the door."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import LiveDaemon, run_daemon
from doc_server import PAGE, DocServer, Route
from mnemonist.settings import ConfigError, load_config
from mnemonist.store import documents as doc_store

pytestmark = pytest.mark.both_stores

STATUSES = ["pending", "extracting", "chunking", "embedding", "indexing", "done"]

TOPICS = [
    "Lighthouse keepers on the Breton coast trimmed the wicks every evening before dusk.",
    "The harbour master records every trawler that leaves at dawn in a leather ledger.",
    "Sourdough starters need flour and water daily, or the culture turns sour and weak.",
    "Quantum tunnelling lets electrons cross barriers that classical physics forbids.",
    "The orchestra tuned to an oboe's A before the premiere of the new violin concerto.",
    "Glaciers in Patagonia retreat several metres each summer as the climate warms.",
]


def long_text() -> str:
    """Six paragraphs, each about 330 characters: several chunks at chunkSize 400."""
    return "\n\n".join((topic + " ") * 4 for topic in TOPICS)


@pytest.fixture(scope="module")
def srv(daemon_store: str) -> Iterator[DocServer]:
    """One per store: the tests count its hits."""
    with DocServer() as server:
        server.routes["/slow-page.html"] = Route(PAGE.encode(), "text/html", delay_s=1.5)
        yield server


@pytest.fixture(scope="module")
def live(daemon_store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    config = {"memory": {"pipelineV2": {
        "worker": {"maxRetries": 2},
        "documents": {"workerIntervalMs": 1000, "chunkSize": 400, "chunkOverlap": 80,
                      "allowPrivateUrls": True},
    }}}
    with run_daemon(tmp_path_factory.mktemp("docs-home"), config) as d:
        yield d


@pytest.fixture(scope="module")
def guarded(daemon_store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    """A daemon with the default rule: private addresses refused."""
    with run_daemon(tmp_path_factory.mktemp("guarded-home"),
                    {"embedding": {"provider": "none"}}) as d:
        yield d


def post(live: LiveDaemon, **body: Any) -> dict[str, Any]:
    resp = live.http.post("/api/documents", json=body)
    assert resp.status_code == 202, resp.text
    out = resp.json()
    assert out["status"] == "pending" and out["id"]
    return out


def wait_for(live: LiveDaemon, doc_id: str, final=("done", "failed"),
             timeout: float = 60) -> tuple[dict[str, Any], list[str]]:
    """Poll the document until it reaches a final status; returns it and the statuses seen."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = live.http.get(f"/api/documents/{doc_id}").json()
        if not seen or seen[-1] != doc["status"]:
            seen.append(doc["status"])
        if doc["status"] in final:
            return doc, seen
        time.sleep(0.02)
    raise AssertionError(f"document {doc_id} stuck; statuses seen {seen}")


def chunks_of(live: LiveDaemon, doc_id: str) -> list[dict[str, Any]]:
    resp = live.http.get(f"/api/documents/{doc_id}/chunks")
    assert resp.status_code == 200, resp.text
    return resp.json()["chunks"]


def test_text_document_becomes_recallable_chunks(live):
    doc = post(live, content=long_text(), title="Assorted Notes", project="docs",
               tags=["Notes"], who="tester")
    final, seen = wait_for(live, doc["id"])
    assert final["status"] == "done", final
    assert seen[0] in STATUSES and seen[-1] == "done"
    assert [s for s in STATUSES if s in seen] == seen  # in order, none backwards
    chunks = chunks_of(live, doc["id"])
    assert final["chunk_count"] == len(chunks) >= 5
    assert [c["index"] for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c["type"] == "document_chunk" and c["importance"] == 0.3
        assert c["tags"][:2] == ["assorted notes", "notes"]
        assert (c["source_type"], c["source_id"], c["project"]) == ("document", doc["id"], "docs")
        assert c["who"] == "tester" and not c["pinned"] and len(c["content"]) <= 400
        assert c["embedding_model"]  # embedded before its write transaction
    # overlapping windows: each chunk starts with words the previous one ended with
    assert chunks[1]["content"].split()[0] in chunks[0]["content"]
    live.flush()
    found = live.recall("when does the glacier in Patagonia retreat", project="docs", limit=3)
    top = found["results"][0]
    assert "Glaciers in Patagonia" in top["content"] and top["type"] == "document_chunk"
    assert top["scores"]["vector"] and top["scores"]["keyword"]
    events = live.http.get(f"/api/memory/{chunks[0]['id']}/history").json()["events"]
    assert [e["event"] for e in events] == ["created"]
    assert events[0]["changed_by"] == "document-worker"
    # the vectors are in the index
    index = live.service.core.index
    conn = live.daemon.db.reader()
    seqs = [conn.execute("SELECT seq FROM memories WHERE id = ?", (c["id"],)).fetchone()[0]
            for c in chunks]
    assert all(s in index for s in seqs)


def test_url_document_title_backfilled_and_statuses_visible(live, srv):
    doc = post(live, url=srv.url("/slow-page.html"), project="web")
    assert doc["source_url"] == srv.url("/slow-page.html")
    final, seen = wait_for(live, doc["id"])
    assert final["status"] == "done", final
    assert "extracting" in seen  # the fetch takes 1.5 s: the row says so meanwhile
    assert final["title"] == "The Tide & Moon Almanac"
    assert final["content_type"] == "text/html"
    assert final["byte_length"] == len(PAGE.encode())
    text = live.http.get(f"/api/documents/{doc['id']}", params={"content": True}).json()
    assert "script text must vanish" not in text["content"]
    chunks = chunks_of(live, doc["id"])
    assert chunks and "the tide & moon almanac" in chunks[0]["tags"]
    assert any("twice a day the water rises" in c["content"] for c in chunks)
    # a title given by the caller is kept
    titled = post(live, url=srv.url("/page.html"), title="My Own Title")
    assert wait_for(live, titled["id"])[0]["title"] == "My Own Title"


def test_list_get_and_pagination(live):
    ids = [post(live, content=f"Short document number {i} about kites.", project="list")["id"]
           for i in range(3)]
    for doc_id in ids:
        wait_for(live, doc_id)
    page = live.http.get("/api/documents", params={"project": "list", "limit": 2}).json()
    assert page["total"] == 3 and len(page["documents"]) == 2 and page["has_more"]
    assert [d["id"] for d in page["documents"]] == ids[::-1][:2]  # newest first
    rest = live.http.get("/api/documents",
                         params={"project": "list", "limit": 2, "offset": 2}).json()
    assert [d["id"] for d in rest["documents"]] == [ids[0]] and not rest["has_more"]
    assert "content" not in rest["documents"][0]
    done = live.http.get("/api/documents", params={"status": "done", "limit": 500}).json()
    assert set(ids) <= {d["id"] for d in done["documents"]}
    one = live.http.get(f"/api/documents/{ids[0]}").json()
    assert one["chunk_count"] == 1 and one["job"]["status"] == "completed"
    assert live.http.get("/api/documents/nope").status_code == 404
    assert live.http.get("/api/documents/nope/chunks").status_code == 404
    assert live.http.get("/api/documents", params={"limit": 0}).status_code == 400
    assert live.http.get("/api/documents", params={"status": "odd"}).status_code == 400


def test_delete_soft_deletes_the_chunks(live):
    doc = post(live, content=long_text().replace("Glaciers", "Icefields"), project="del")
    wait_for(live, doc["id"])
    chunks = chunks_of(live, doc["id"])
    live.flush()
    assert live.recall("Icefields in Patagonia", project="del")["count"] >= 1
    conn = live.daemon.db.reader()
    seqs = [conn.execute("SELECT seq FROM memories WHERE id = ?", (c["id"],)).fetchone()[0]
            for c in chunks]
    resp = live.http.request("DELETE", f"/api/documents/{doc['id']}",
                             json={"reason": "outdated notes"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["chunks_deleted"] == len(chunks)
    after = chunks_of(live, doc["id"])
    assert all(c["is_deleted"] and c["delete_reason"] == "outdated notes" for c in after)
    assert live.recall("Icefields in Patagonia", project="del")["count"] == 0
    assert not any(s in live.service.core.index for s in seqs)
    events = live.http.get(f"/api/memory/{chunks[0]['id']}/history").json()["events"]
    assert [e["event"] for e in events] == ["created", "deleted"]
    got = live.http.get(f"/api/documents/{doc['id']}").json()
    assert got["status"] == "deleted" and got["delete_reason"] == "outdated notes"
    again = live.http.delete(f"/api/documents/{doc['id']}")
    assert again.status_code == 409 and again.json()["error"] == "already_deleted"
    listed = live.http.get("/api/documents", params={"project": "del"}).json()
    assert listed["total"] == 0  # deleted documents are left out unless asked for
    assert live.http.delete("/api/documents/nope").status_code == 404


def test_credentials_are_scrubbed_from_documents(live):
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    doc = post(live, content=f"Deploy notes. The token is {secret} for the CI bot.",
               title=f"notes {secret}")
    final, _ = wait_for(live, doc["id"])
    full = live.http.get(f"/api/documents/{doc['id']}", params={"content": True}).json()
    assert secret not in full["content"] and "[REDACTED:" in full["content"]
    assert secret not in (final["title"] or "")
    assert all(secret not in c["content"] for c in chunks_of(live, doc["id"]))
    resp = live.http.post("/api/documents", json={"url": "https://example.com/?token=abcdef1234"})
    assert resp.status_code == 400 and resp.json()["error"] == "url_has_credential"


def test_a_retry_reuses_the_chunks_it_already_wrote(live):
    doc = post(live, content=long_text(), project="retry")
    wait_for(live, doc["id"])
    before = chunks_of(live, doc["id"])
    row = doc_store.get(live.daemon.db.reader(), doc["id"])
    outcome = live.daemon.documents.ingest(row)  # what a re-run of the job does
    assert outcome["created"] == 0 and outcome["deduplicated"] == len(before)
    assert [c["id"] for c in chunks_of(live, doc["id"])] == [c["id"] for c in before]


def test_transient_failure_retries_then_fails(live, srv):
    doc = post(live, url=srv.url("/broken"))
    final, seen = wait_for(live, doc["id"], final=("failed",), timeout=60)
    assert "HTTP 500" in final["error"]
    assert final["job"]["status"] == "dead" and final["job"]["attempts"] == 2
    assert srv.hits["/broken"] == 2  # worker.maxRetries attempts
    assert "done" not in seen


def test_permanent_failure_fails_at_once(live, srv):
    doc = post(live, url=srv.url("/image.png"))
    final, _ = wait_for(live, doc["id"], final=("failed",))
    assert "image/png" in final["error"] and final["job"]["attempts"] == 1
    assert chunks_of(live, doc["id"]) == []


BAD = [
    ({}, "content"),
    ({"title": "no body"}, "content"),
    ({"content": "text", "url": "https://example.com/"}, "url"),
    ({"content": "   "}, "content"),
    ({"url": "ftp://example.com/file.txt"}, "url"),
    ({"url": "not a url at all"}, "url"),
    ({"content": "x", "colour": "blue"}, "colour"),
    ({"content": 42}, "content"),
    ({"content": "x", "tags": 5}, "tags"),
]


@pytest.mark.parametrize(("body", "field"), BAD)
def test_bad_input_is_a_400_naming_the_field(guarded, body, field):
    resp = guarded.http.post("/api/documents", json=body)
    assert resp.status_code == 400, resp.text
    assert field in resp.json()["message"]


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:{port}/page.html", "http://localhost:{port}/page.html",
    "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://[::1]/",
])
def test_private_addresses_are_refused_at_the_door(guarded, srv, url):
    hits = sum(srv.hits.values())
    resp = guarded.http.post("/api/documents", json={"url": url.format(port=srv.port)})
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["error"] == "url_not_allowed" and "allowPrivateUrls" in body["message"]
    assert sum(srv.hits.values()) == hits
    assert guarded.query("SELECT COUNT(*) FROM documents")[0][0] == 0


def test_content_over_the_byte_limit_is_refused(tmp_path):
    config = {"embedding": {"provider": "none"},
              "memory": {"pipelineV2": {"documents": {"maxContentBytes": 1024}}}}
    with run_daemon(tmp_path, config) as d:
        resp = d.http.post("/api/documents", json={"content": "é" * 600})  # 1200 bytes
        assert resp.status_code == 400 and "maxContentBytes" in resp.json()["message"]
        assert d.http.post("/api/documents", json={"content": "é" * 500}).status_code == 202


def test_overlap_must_be_smaller_than_the_chunk_size():
    with pytest.raises(ConfigError) as err:
        load_config(None, {"memory": {"pipelineV2": {
            "documents": {"chunkSize": 400, "chunkOverlap": 400}}}})
    assert "chunkOverlap" in str(err.value) and "documents" in str(err.value)
    cfg = load_config(None, {"memory": {"pipelineV2": {"documentChunkSize": 500}}})  # legacy key
    assert cfg.memory.pipeline_v2.documents.chunk_size == 500
    assert not cfg.memory.pipeline_v2.documents.allow_private_urls
    assert cfg.memory.pipeline_v2.documents.fetch_timeout_ms == 30000
