"""A remote embedder that accepts connections and never answers does not stall recall: the
query's vector is waited for at most `embedding.query_timeout_ms`, later recalls skip the
provider at once (keyword results, `degraded: query_embedding_failed`), and one recall tries
again after `embedding.query_retry_ms`."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import run_daemon
from embedding_servers import FakeEmbeddingServer

MEMORIES = (
    "Deploys happen on Tuesdays after the standup",
    "The staging database runs PostgreSQL 16",
    "Invoices are sent by the billing service on the first of the month",
)


def _timed_recall(live, query: str) -> tuple[dict, float]:
    started = time.monotonic()
    answer = live.recall(query, limit=5)
    return answer, time.monotonic() - started


def _contents(answer: dict) -> list[str]:
    return [r["content"] for r in answer["results"]]


def test_a_silent_embedder_costs_one_short_wait_then_none(tmp_path: Path) -> None:
    with FakeEmbeddingServer(dim=8) as srv:
        config = {"embedding": {"provider": "openai", "base_url": srv.url, "model": "m",
                                "query_timeout_ms": 3000, "query_retry_ms": 2000}}
        with run_daemon(tmp_path / "home", config) as live:
            for text in MEMORIES:
                live.remember(text)
            live.flush()
            healthy, _ = _timed_recall(live, "what day do deploys happen")
            assert "query_embedding_failed" not in healthy["degraded"]
            assert healthy["results"][0]["scores"]["vector"] is not None

            srv.hang = True  # from now on: connections accepted, requests read, no answer
            first, waited = _timed_recall(live, "when do deploys happen")
            assert waited < 7.0, f"recall waited {waited:.1f} s for a silent embedder"
            assert "query_embedding_failed" in first["degraded"]
            assert MEMORIES[0] in _contents(first)  # the keyword leg still answers

            asked = len(srv.posts())
            second, waited = _timed_recall(live, "deploys happen on which weekday")
            # well under the 3 s it would wait for the provider (room for a loaded machine)
            assert waited < 1.5, f"a provider known down still cost {waited:.2f} s"
            assert "query_embedding_failed" in second["degraded"]
            assert MEMORIES[0] in _contents(second)
            assert len(srv.posts()) == asked  # skipped at once: not even asked
            queries = live.http.get("/api/status").json()["embedding_provider"]["queries"]
            assert queries["skipping"] and queries["skipped"] >= 1 and queries["failed"] == 1
            assert "timed out after 3000 ms" in queries["last_error"]

            srv.hang = False  # back: after the back-off one recall asks again and gets it
            time.sleep(2.2)
            back, _ = _timed_recall(live, "deploys happen after the standup")
            assert "query_embedding_failed" not in back["degraded"]
            assert back["results"][0]["scores"]["vector"] is not None
            assert live.http.get("/api/status").json()[
                "embedding_provider"]["queries"]["skipping"] is False


def test_a_background_timeout_is_enough_to_skip(tmp_path: Path) -> None:
    """What another request of the provider saw counts: a background embedding that got no
    answer makes recall skip the provider without waiting for its own timeout first."""
    with FakeEmbeddingServer(dim=8) as srv:
        config = {"embedding": {"provider": "openai", "base_url": srv.url, "model": "m",
                                "timeout_ms": 3000, "query_timeout_ms": 5000,
                                "query_retry_ms": 30000}}
        with run_daemon(tmp_path / "home", config) as live:
            live.remember(MEMORIES[1])
            live.flush()
            srv.hang = True
            live.remember(MEMORIES[0])  # the background embedder's request times out (3 s)
            deadline = time.monotonic() + 20
            while live.service.core.embedder.stats.provider_ok and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not live.service.core.embedder.stats.provider_ok
            answer, waited = _timed_recall(live, "when do deploys happen")
            assert waited < 2.5, f"recall waited {waited:.2f} s for a provider known down"
            assert "query_embedding_failed" in answer["degraded"]
            assert MEMORIES[0] in _contents(answer)
