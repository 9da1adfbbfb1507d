"""The in-flight-request gate: background embedding takes the extra cores only while no
request runs (the real local model; behaviour, never timing)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from mnemonist.model.config import EmbeddingConfig
from mnemonist.providers.embedding import LocalOnnxEmbedding
from mnemonist.providers.embedding.request_gate import REQUESTS, RequestGate, holds_gate

TEXTS = [f"memory {i}: the deploy of service {i % 7} needs the {i % 5} queue drained first"
         for i in range(48)]


@pytest.fixture(scope="module")
def reference() -> Iterator[np.ndarray]:
    one = LocalOnnxEmbedding(EmbeddingConfig(threads=1))
    yield one.embed(TEXTS)
    one.close()


@pytest.fixture
def gate() -> RequestGate:
    return RequestGate()


@pytest.fixture
def wide(gate: RequestGate) -> Iterator[LocalOnnxEmbedding]:
    provider = LocalOnnxEmbedding(EmbeddingConfig(threads=3), gate=gate)
    provider.warm()
    yield provider
    provider.close()


def test_idle_gate_lets_the_helpers_embed(wide: LocalOnnxEmbedding, reference: np.ndarray
                                          ) -> None:
    vectors = wide.embed(TEXTS)
    assert wide.helper_texts > 0  # two helpers beside the caller took some of the 48 texts
    assert (vectors * reference).sum(axis=1).min() > 0.9999


def test_request_in_flight_keeps_the_helpers_off(wide: LocalOnnxEmbedding, gate: RequestGate,
                                                 reference: np.ndarray) -> None:
    """A request held elsewhere: the caller embeds everything itself, and does not wait for
    the held-back helpers; once the request ends, the helpers take texts again."""
    gate.enter()
    try:
        vectors = wide.embed(TEXTS)
        assert wide.helper_texts == 0
        assert gate.in_flight == 1
    finally:
        gate.leave()
    assert (vectors * reference).sum(axis=1).min() > 0.9999
    wide.embed(TEXTS)
    assert wide.helper_texts > 0


def test_request_arriving_mid_batch_stops_new_helper_texts(
        wide: LocalOnnxEmbedding, gate: RequestGate, reference: np.ndarray,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A request enters while a batch is being embedded: from then on each helper finishes at
    most the one text it had already taken, and takes no other."""
    caller = threading.get_ident()
    original = wide._run
    caller_runs = 0
    at_entry: list[int] = []

    def run(session: Any, ids: list[list[int]]) -> np.ndarray:
        nonlocal caller_runs
        if threading.get_ident() == caller:
            caller_runs += 1
            if caller_runs == 4:  # the helpers have been going meanwhile
                gate.enter()
                with wide._lock:
                    at_entry.append(wide.helper_texts)
        return original(session, ids)

    monkeypatch.setattr(wide, "_run", run)
    try:
        vectors = wide.embed(TEXTS)
    finally:
        if at_entry:
            gate.leave()
    assert at_entry, "the caller ran fewer than 4 texts"
    assert wide.helper_texts - at_entry[0] <= 2  # one text in hand per helper at most
    assert wide.helper_texts + caller_runs == len(TEXTS)
    assert (vectors * reference).sum(axis=1).min() > 0.9999


def test_embedding_inside_a_request_is_not_held_back(wide: LocalOnnxEmbedding,
                                                     gate: RequestGate) -> None:
    """The request's own embedding (e.g. a synchronous prefetch) may use the helpers."""
    with gate.request():
        assert gate.inside_request()
        wide.embed(TEXTS)
    assert not gate.inside_request() and gate.in_flight == 0
    assert wide.helper_texts > 0


def test_service_calls_hold_the_process_gate() -> None:
    seen: list[tuple[int, bool]] = []

    @holds_gate
    def remember() -> None:
        seen.append((REQUESTS.in_flight, REQUESTS.inside_request()))

    before = REQUESTS.in_flight
    remember()
    assert seen == [(before + 1, True)]
    assert REQUESTS.in_flight == before


def test_every_http_request_holds_the_gate(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's middleware: a request that reaches no wrapped service call (listing
    memories) still counts as in flight while it runs, and no longer once answered."""
    from conftest import run_daemon

    with run_daemon(tmp_path / "home", {"embedding": {"provider": "none"}}) as live:
        service = live.daemon.service
        seen: list[int] = []
        original = service.reads.list

        def listing(*args: Any, **kwargs: Any) -> Any:
            seen.append(REQUESTS.in_flight)
            return original(*args, **kwargs)

        monkeypatch.setattr(service.reads, "list", listing)
        before = REQUESTS.in_flight
        assert live.http.get("/api/memories").status_code == 200
        assert seen == [before + 1]
        # the answer can reach the client a moment before the middleware's own return
        deadline = time.monotonic() + 10
        while REQUESTS.in_flight != before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert REQUESTS.in_flight == before
