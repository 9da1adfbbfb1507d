"""The learned sparse leg over a real daemon: expansions computed in the background, the
inverted index and `sparse_terms` kept in step with remember / modify / delete / recover,
and bad settings refused with a message naming them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import LiveDaemon, run_daemon
from mnemonist.daemon import Daemon
from mnemonist.providers.sparse.model_files import SparseModelError
from mnemonist.settings import ConfigError, Paths, load_config

#: the sparse leg alone ranks (alpha 0: no vector share; weight 1: no FTS5 share)
SPARSE_ONLY = {"sparse": {"enabled": True, "fields": "content"},
               "search": {"alpha": 0.0, "sparse_weight": 1.0, "sparse_fields": "content",
                          "min_score": 0.01}}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    with run_daemon(tmp_path_factory.mktemp("sparse-home"), SPARSE_ONLY) as d:
        yield d


def rows(live: LiveDaemon, memory_id: str) -> list[tuple[str, str]]:
    conn = sqlite3.connect(live.daemon.paths.database)
    try:
        return conn.execute(
            "SELECT s.field, s.text_hash = m.content_hash FROM sparse_terms s"
            " JOIN memories m ON m.seq = s.seq WHERE m.id = ?", (memory_id,)).fetchall()
    finally:
        conn.close()


def seq_of(live: LiveDaemon, memory_id: str) -> int:
    conn = sqlite3.connect(live.daemon.paths.database)
    try:
        return conn.execute("SELECT seq FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
    finally:
        conn.close()


def found(live: LiveDaemon, query: str, project: str) -> list[str]:
    return [r["id"] for r in live.recall(query, project=project, limit=5)["results"]]


def test_a_memory_is_found_through_words_it_never_says(live):
    mid = live.remember("I bought a new automobile last week", project="cars")["id"]
    live.remember("The weather is nice today", project="cars")
    live.flush()
    assert rows(live, mid) == [("content", 1)]
    assert seq_of(live, mid) in live.service.core.sparse.indexes["content"]
    # no word in common: FTS5 alone finds nothing, the expansions meet on car/bought/acquired
    assert live.service.core.searcher._keyword(live.service.core.db.reader(), "vehicle purchase",
                                               None) == {}
    assert found(live, "vehicle purchase", "cars")[0] == mid


def test_modify_delete_recover_keep_the_index_in_step(live):
    mid = live.remember("Our old sedan finally got sold to a neighbour", project="edit")["id"]
    live.flush()
    assert found(live, "car sale", "edit") == [mid]
    resp = live.http.patch(f"/api/memory/{mid}",
                           json={"content": "Lunch today was a bowl of ramen", "reason": "t"})
    assert resp.status_code == 200, resp.text
    live.flush()
    assert rows(live, mid) == [("content", 1)]  # re-expanded from the new text
    assert found(live, "car sale", "edit") == []
    assert found(live, "noodle soup", "edit") == [mid]
    resp = live.http.request("DELETE", f"/api/memory/{mid}", json={"reason": "t"})
    assert resp.status_code == 200, resp.text
    live.flush()
    assert rows(live, mid) == []
    assert seq_of(live, mid) not in live.service.core.sparse.indexes["content"]
    assert found(live, "noodle soup", "edit") == []
    resp = live.http.post(f"/api/memory/{mid}/recover", json={"reason": "t"})
    assert resp.status_code == 200, resp.text
    live.flush()
    assert found(live, "noodle soup", "edit") == [mid]


def test_a_restart_reloads_the_index_from_the_table(tmp_path: Path):
    home = tmp_path / "home"
    with run_daemon(home, SPARSE_ONLY) as d:
        mid = d.remember("The puppy has a fever and will not eat", project="vet")["id"]
        d.flush()
    with run_daemon(home, SPARSE_ONLY) as d:
        assert seq_of(d, mid) in d.service.core.sparse.indexes["content"]
        assert d.service.core.sparse.pending() == 0  # nothing re-encoded
        assert found(d, "sick dog", "vet") == [mid]


def test_a_weight_out_of_range_is_refused_by_name(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "agent.yaml").write_text("search:\n  sparse_weight: 1.5\n")
    with pytest.raises(ConfigError, match="sparse_weight"):
        load_config(Paths(home))


def test_enabled_without_the_model_files_fails_at_start_naming_them(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    empty = tmp_path / "no-model"
    empty.mkdir()
    (home / "agent.yaml").write_text(f"sparse:\n  enabled: true\n  model_dir: {empty}\n")
    paths = Paths(home)
    with pytest.raises(SparseModelError, match=r"model\.safetensors is missing"):
        Daemon(paths, load_config(paths)).start()


def test_status_reports_the_sparse_leg(live):
    live.remember("The staging database is reset every Sunday", project="status")
    live.flush()
    status = live.http.get("/api/status").json()["sparse"]
    assert status["enabled"] is True
    assert status["expanded"]["content"] == status["index"]["content"] >= 1
    assert status["last_error"] is None


def test_a_sparse_weight_without_the_leg_shows_as_degraded(tmp_path: Path):
    with run_daemon(tmp_path / "home", {"search": {"sparse_weight": 0.3}}) as d:
        health = d.http.get("/health").json()
        assert "sparse_leg_unavailable" in health["degraded"]
        assert d.http.get("/api/status").json()["sparse"] == {"enabled": False}
        d.remember("recall still works without the leg", project="p")
        d.flush()
        assert d.recall("recall works", project="p")["results"]
