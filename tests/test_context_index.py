"""The context index: each memory indexed with its source neighbours, kept in step by every
write path, rebuilt when the window changes."""

from __future__ import annotations

import json
import sqlite3

from click.testing import CliRunner

from conftest import run_daemon
from mnemonist.cli.main import cli


def context_of(live, memory_id: str) -> str | None:
    conn = sqlite3.connect(live.daemon.paths.database)
    try:
        row = conn.execute(
            "SELECT c.text FROM memory_context c JOIN memories m ON m.seq = c.seq WHERE m.id = ?",
            (memory_id,),
        ).fetchone()
    finally:
        conn.close()
    return row[0] if row else None


def chat(live, source: str, lines: list[str], order: list[int]) -> dict[int, str]:
    ids = {}
    for i in order:
        ids[i] = live.remember(lines[i], source_id=source, project="ctx",
                               occurred_at=f"2024-03-01T10:0{i}:00Z")["id"]
    return ids


LINES = ["Ana: which bike should I buy", "Ben: the blue one", "Ana: why that one",
         "Ben: lighter frame", "Ana: ok ordering it"]


def test_context_follows_source_order_whatever_the_arrival_order(live):
    ids = chat(live, "bikes", LINES, [4, 0, 2, 1, 3])
    text = context_of(live, ids[2])
    assert text is not None
    # ±2 neighbours in source order, the memory itself twice, then its date
    expected = " ".join([LINES[0], LINES[1], LINES[2], LINES[2], LINES[3], LINES[4]])
    assert text == expected + " 1 March 2024"
    edge = context_of(live, ids[0])
    assert edge == " ".join([LINES[0], LINES[0], LINES[1], LINES[2]]) + " 1 March 2024"


def test_a_turn_is_found_by_what_its_neighbours_say(live):
    ids = chat(live, "bikes-2", LINES, [0, 1, 2, 3, 4])
    live.flush()
    out = live.recall("which bike to buy", project="ctx", limit=10)
    found = [r["id"] for r in out["results"]]
    assert ids[1] in found  # "the blue one" says no bike word; its neighbour does
    # the last line is out of the first line's window: it ranks below the blue one, if at all
    assert ids[4] not in found or found.index(ids[4]) > found.index(ids[1])


def test_delete_modify_recover_keep_neighbours_in_step(live):
    ids = chat(live, "bikes-3", LINES, [0, 1, 2, 3, 4])
    resp = live.http.request("DELETE", f"/api/memory/{ids[2]}", json={"reason": "test"})
    assert resp.status_code == 200
    assert context_of(live, ids[2]) is None
    assert LINES[2] not in context_of(live, ids[1])
    assert LINES[4] in context_of(live, ids[3]) and LINES[0] in context_of(live, ids[1])
    live.http.post(f"/api/memory/{ids[2]}/recover", json={"reason": "undo"})
    assert LINES[2] in context_of(live, ids[1])
    live.http.patch(f"/api/memory/{ids[3]}", json={"content": "Ben: carbon frame",
                                                   "reason": "typo"})
    assert "carbon frame" in context_of(live, ids[4])
    assert "lighter frame" not in context_of(live, ids[4])


def test_window_change_rebuilds_the_index(tmp_path):
    with run_daemon(tmp_path, {"search": {"context_window": 1}}) as live:
        ids = chat(live, "w", LINES, [0, 1, 2, 3, 4])
        assert context_of(live, ids[2]) == " ".join(
            [LINES[1], LINES[2], LINES[2], LINES[3]]) + " 1 March 2024"
    with run_daemon(tmp_path, {"search": {"context_window": 0}}) as live:
        assert context_of(live, ids[2]) is None
        out = live.recall("lighter frame", project="ctx")  # content index still answers
        assert out["results"][0]["id"] == ids[3]


def test_import_benchmark_reports_throughput():
    out = CliRunner().invoke(cli, ["bench", "import", "--n", "300", "--json"],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)["results"]
    assert report["first import"]["created"] == 300
    assert report["re-run (idempotent)"]["created"] == 0
    assert report["first import"]["per_s"] > 0


def test_derived_facts_are_not_lines_of_their_source(live):
    ids = chat(live, "bikes-4", LINES, [0, 1, 2, 3, 4])
    conn = sqlite3.connect(live.daemon.paths.database)
    try:  # a fact the pipeline derived from turn 2, written the way the pipeline writes it
        from mnemonist.store import context, memories
        from mnemonist.store.memories import NewMemory
        from mnemonist.text.normalize import normalize_and_hash

        conn.row_factory = sqlite3.Row
        context.configure(conn, 2)
        norm = normalize_and_hash("Ben recommends the blue bike")
        memories.insert(conn, NewMemory(
            id="derived-1", content=norm.storage, normalized_content=norm.normalized,
            content_hash=norm.content_hash, type="fact", importance=0.9, tags=[], pinned=False,
            who="pipeline-v2", why="extracted-fact", project="ctx", source_type=None,
            source_id="bikes-4", idempotency_key=None, occurred_at="2024-03-01T10:02:00.000Z",
            created_at="2026-01-01T00:00:00.000Z"))
        conn.commit()
    finally:
        conn.close()
    assert "recommends" not in context_of(live, ids[2])
    assert "recommends" not in context_of(live, ids[3])
    own = context_of(live, "derived-1")
    assert own.startswith(LINES[1]) and "Ben recommends the blue bike" in own


def test_context_vectors_when_turned_on(tmp_path):
    with run_daemon(tmp_path, {"search": {"context_vector_weight": 0.5, "alpha": 0.7}}) as live:
        ids = chat(live, "bikes-5", LINES, [0, 1, 2, 3, 4])
        live.flush()
        assert len(live.service.core.context_index) == 5
        assert live.service.core.embedder.stats.context_processed >= 5
        out = live.recall("which bike should I buy", project="ctx", limit=5)
        assert {ids[0], ids[1]} <= {r["id"] for r in out["results"]}
        seq = live.service.core.db.reader().execute(
            "SELECT seq FROM memories WHERE id = ?", (ids[1],)).fetchone()[0]
        assert seq in live.service.core.context_index
        live.http.request("DELETE", f"/api/memory/{ids[1]}", json={"reason": "x"})
        assert seq not in live.service.core.context_index
        again = live.recall("which bike should I buy", project="ctx", limit=5)
        assert ids[1] not in {r["id"] for r in again["results"]}
