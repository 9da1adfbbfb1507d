"""The reranker interface: embedding reranker, an HTTP cross-encoder server, the timeout."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import run_daemon
from mnemonist.search.rerank import EmbeddingReranker, HttpReranker, rerank_head

pytestmark = pytest.mark.both_stores


@dataclass
class M:
    content: str


@dataclass
class H:
    memory: M
    score: float
    vector_score: float | None = None


class Slow:
    name = "slow"

    def rerank(self, query, hits):
        time.sleep(0.5)
        return hits[::-1]


class Broken:
    name = "broken"

    def rerank(self, query, hits):
        raise RuntimeError("model crashed")


def hits():
    return [H(M("a"), 0.9, 0.1), H(M("b"), 0.8, 0.9), H(M("c"), 0.7, 0.2), H(M("tail"), 0.1)]


def test_embedding_reranker_blends_in_the_cosine():
    out, outcome = rerank_head(EmbeddingReranker(0.3), "q", hits(), top_n=3, timeout_s=30)
    assert outcome == "reranked"
    assert [h.memory.content for h in out] == ["b", "a", "c", "tail"]
    assert out[0].score == pytest.approx(0.7 * 0.8 + 0.3 * 0.9)


@pytest.mark.parametrize(("reranker", "outcome", "timeout_s"),
                         [(Slow(), "timeout", 0.1), (Broken(), "error", 30.0)])
def test_a_slow_or_failing_reranker_keeps_the_original_order(reranker, outcome, timeout_s):
    original = hits()  # a crash is told apart from a timeout however slow the machine is
    out, got = rerank_head(reranker, "q", original, top_n=3, timeout_s=timeout_s)
    assert got == outcome
    assert [h.memory.content for h in out] == ["a", "b", "c", "tail"]
    assert [h.score for h in out] == [0.9, 0.8, 0.7, 0.1]


class RerankServer:
    """POST /v1/rerank: scores each document by how many query words it contains."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.bodies: list[dict] = []

    def __enter__(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.bodies.append(body)
                time.sleep(server.delay_s)
                words = set(body["query"].lower().split())
                results = [{"index": i, "relevance_score": len(words & set(d.lower().split()))}
                           for i, d in enumerate(body["documents"])]
                payload = json.dumps({"results": results}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        return self

    def __exit__(self, *_):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_http_reranker_reorders_by_the_servers_scores():
    with RerankServer() as srv:
        reranker = HttpReranker(srv.url, model="bge-reranker")
        docs = [H(M("nothing here"), 0.9), H(M("the blue bike is light"), 0.5)]
        out, outcome = rerank_head(reranker, "blue bike", docs, top_n=5, timeout_s=5)
    assert outcome == "reranked"
    assert [h.memory.content for h in out] == ["the blue bike is light", "nothing here"]
    assert srv.bodies[0]["model"] == "bge-reranker" and srv.bodies[0]["top_n"] == 2


def test_daemon_uses_a_configured_reranker_and_survives_its_timeout(tmp_path):
    with RerankServer() as fast:
        config = {"memory": {"pipelineV2": {"reranker": {
            "enabled": True, "baseUrl": fast.url, "timeoutMs": 2000}}}}
        with run_daemon(tmp_path / "a", config) as live:
            live.remember("Deploy checklist: run migrations first", project="p")
            live.remember("Deploy notes: the blue bike is light", project="p")
            live.flush()
            out = live.recall("deploy blue bike", project="p", min_score=0.0)
            assert out["results"][0]["content"].endswith("the blue bike is light")
            assert "reranker_timeout" not in out["degraded"] and fast.bodies
    with RerankServer(delay_s=1.0) as slow:
        config = {"memory": {"pipelineV2": {"reranker": {
            "enabled": True, "baseUrl": slow.url, "timeoutMs": 200}}}}
        with run_daemon(tmp_path / "b", config) as live:
            live.remember("Deploy checklist: run migrations first", project="p")
            live.remember("Deploy notes: the blue bike is light", project="p")
            live.flush()
            out = live.recall("deploy blue bike", project="p", min_score=0.0)
            assert "reranker_timeout" in out["degraded"] and len(out["results"]) == 2
