"""The embedder's queue is bounded: a bulk import that outruns embedding stops being queued
one notification per memory, and every memory is embedded all the same (the embedder walks the
store in seq order from the first one it turned away). A real daemon, the real local model."""

from __future__ import annotations

import pytest

from conftest import run_daemon
from mnemonist.pipeline import embedder as embedder_module

MAX = 4


def test_a_full_queue_turns_memories_away_and_the_walk_embeds_every_one(tmp_path, monkeypatch):
    monkeypatch.setattr(embedder_module, "MAX_QUEUED", MAX)
    with run_daemon(tmp_path) as live:
        embedder = live.service.core.embedder
        embedder.stop()  # nothing drains the queue while the import notifies
        items = [{"content": f"Import line {i}: the {word} report goes to the team"}
                 for i, word in enumerate(["budget", "audit", "sales", "hiring", "travel",
                                           "security", "vendor", "roadmap", "launch", "churn",
                                           "pricing", "support"] * 3)]
        resp = live.http.post("/api/memory/import", json={"items": items})
        assert resp.status_code == 200 and resp.json()["created"] == 36, resp.text
        assert embedder._queue.qsize() <= MAX  # the stop's wake-up token counts too
        first_away = embedder._catch_up_from
        queued = live.query("SELECT min(seq), max(seq) FROM memories")[0]
        assert first_away is not None and queued[0] < first_away <= queued[1]
        embedder.start()
        live.flush()
        assert len(live.service.core.index) == 36
        assert live.query("SELECT count(*) FROM memories WHERE embedding_model IS NULL")[0][0] == 0


def test_a_failed_batch_of_the_walk_is_walked_again(tmp_path, monkeypatch):
    """A provider failure during the walk puts its start back: the stretch is embedded on the
    next try, not skipped (the periodic sweep is turned off here, so only the walk embeds)."""
    monkeypatch.setattr(embedder_module, "MAX_QUEUED", 0)  # every notification turned away
    monkeypatch.setattr(embedder_module, "MAX_BACKOFF_S", 0.05)
    with run_daemon(tmp_path) as live:
        embedder = live.service.core.embedder
        embedder.stop()
        for i in range(10):
            live.remember(f"Remembered note {i} about the office plants")
        assert embedder._catch_up_from is not None
        embedder.sweep_batch = 0
        real, calls = embedder.process, []

        def failing_first(seqs: list[int]) -> bool:
            calls.append(list(seqs))
            return False if len(calls) == 1 else real(seqs)

        monkeypatch.setattr(embedder, "process", failing_first)
        embedder.start()
        live.flush()
        assert len(calls) >= 2 and calls[1] == calls[0]
        assert live.query("SELECT count(*) FROM memories WHERE embedding_model IS NULL")[0][0] == 0


@pytest.mark.parametrize("seqs", [[9, 5, 7], [5]])
def test_the_walk_starts_at_the_lowest_seq_turned_away(tmp_path, monkeypatch, seqs):
    monkeypatch.setattr(embedder_module, "MAX_QUEUED", 0)
    with run_daemon(tmp_path) as live:
        embedder = live.service.core.embedder
        embedder.stop()
        embedder._catch_up_from = None
        for seq in seqs:
            embedder.notify(seq)
        assert embedder._catch_up_from == min(seqs)
        embedder.discard_queued()  # a caller that wrote the vectors itself
        assert embedder._catch_up_from is None
