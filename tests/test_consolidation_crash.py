"""kill -9 in the middle of a consolidation pass: the pass resumes where its last batch
committed and, at the end, has settled every pair exactly once, the same pairs an
uninterrupted pass settles on an identical copy of the store.

A store of a few hundred memories (60 services whose port changed, each pair in a project of
its own, and notes that settle nothing), copied before anything runs; the uninterrupted pass
on the copy; a real separate process running `service.curation.consolidate(max_batches=1)` in a loop
(10 memories a batch) on the original, SIGKILLed after 15 batches, either inside the 16th
batch's write transaction (held open there) or a random moment later, wherever it is; then the
pass finished in-process on the same home. No timing is asserted: the waits are generous
deadlines."""

from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mnemonist.daemon import open_memory
from mnemonist.model.requests import RememberRequest
from mnemonist.settings import Paths
from mnemonist.store import consolidation as store
from mnemonist.text.same_fact import relation

PAIRS = 60
NOTES_PER_PAIR = 4
#: the background worker off (the test runs every pass itself), 10 memories a batch
CONFIG = {"memory": {"consolidation": {"enabled": False, "batchSize": 10}}}
#: batches the process reports before the kill, of 36: past a dozen settled pairs, with
#: seconds of work left (it pauses PAUSE_S between runs), so a busy machine cannot end it first
KILL_AFTER_BATCHES = 15
PAUSE_S = 0.15
DEADLINE_S = 300.0  # for the process to open the home and report them (a loaded machine)

#: the process: the pass, one batch a run, progress on stdout. With a hold (`argv[4]` ≥ 0), the
#: batch after that many committed ones stops inside its write transaction, its actions and
#: cursor written but not committed, says so and waits there to be killed.
CHILD = """
import json, sys, time
from mnemonist.daemon import open_memory
from mnemonist.store import consolidation as store

home, config = sys.argv[1], json.loads(sys.argv[2])
pause, hold_from = float(sys.argv[3]), int(sys.argv[4])
committed = 0
advance = store.advance


def held_advance(conn, last_seq, at, **counts):
    advance(conn, last_seq, at, **counts)
    if 0 <= hold_from <= committed:
        print(json.dumps({"writing": last_seq, **counts}), flush=True)
        time.sleep(600)


store.advance = held_advance
daemon = open_memory(home, config)
while True:
    out = daemon.service.curation.consolidate(max_batches=1)
    committed += out["batches"]
    print(json.dumps({"batches": committed, "cursor": out["cursor"], "done": out["done"]}),
          flush=True)
    if out["done"]:
        break
    time.sleep(pause)  # the worker waits far longer between runs
print(json.dumps({"finished": True}), flush=True)
daemon.stop()
"""


def old(i: int) -> str:
    return f"The service-{i} listens on port 80{i:02d}."


def new(i: int) -> str:
    return f"The service-{i} listens on port 90{i:02d} now."


def note(i: int) -> str:
    return f"Note {i}: the tide gauge {i} reads {i * 7} cm"


def expected_pairs() -> set[tuple[str, str]]:
    return {(old(i), new(i)) for i in range(PAIRS)}


def test_the_pairs_are_ones_the_rules_settle_whatever_the_embeddings() -> None:
    """Each service pair (alone in its project) is `replaces` by the rules alone, and no two
    notes (one project) are settled or flagged, whatever the masked-sentence cosine: the
    outcome cannot depend on where a pass was cut (a resumed run embeds those afresh)."""
    def kinds(a: str, b: str) -> set[str | None]:
        return {getattr(relation(a, b, lambda x, y, c=c: c), "kind", None) for c in (0.0, 1.0)}

    for i in range(PAIRS):
        assert kinds(old(i), new(i)) == {"replaces"}
    notes = [note(i) for i in range(40)]  # the notes' pattern, near and far numbers
    for i, a in enumerate(notes):
        for b in notes[i + 1:]:
            assert kinds(a, b) == {None}, (a, b)


def prepare(home: Path) -> int:
    """The store: the old ports, then each new port after four notes; all embedded. Returns
    the last seq the engine reads."""
    daemon = open_memory(home, CONFIG)
    try:
        service = daemon.service

        def remember(content: str, project: str, when: str | None = None) -> None:
            out = service.memories.remember(RememberRequest(content=content, project=project,
                                                            occurred_at=when))
            assert out["created"], (content, out)

        for i in range(PAIRS):
            remember(old(i), f"svc-{i}", "2025-01-01T00:00:00Z")
        for i in range(PAIRS):
            for j in range(NOTES_PER_PAIR):
                remember(note(i * NOTES_PER_PAIR + j), "ops")
            remember(new(i), f"svc-{i}", "2025-06-01T00:00:00Z")
        assert service.flush(300), "background embedding did not finish"
        conn = service.core.db.reader()
        total = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        assert total == PAIRS * (2 + NOTES_PER_PAIR)
        assert store.pending(conn, 0) == total  # every one is a statement the engine reads
        assert conn.execute("SELECT COUNT(*) FROM memories WHERE superseded_at IS NOT NULL"
                            ).fetchone()[0] == 0  # nothing settled on the way in
        return int(conn.execute("SELECT MAX(seq) FROM memories").fetchone()[0])
    finally:
        daemon.stop()


def finish(home: Path) -> None:
    """The rest of the pass, in-process: runs until one says it read to the end."""
    daemon = open_memory(home, CONFIG)
    try:
        for _ in range(1000):
            if daemon.service.curation.consolidate()["done"]:
                return
        raise AssertionError("the pass never reached the end")
    finally:
        daemon.stop()


def settled(home: Path) -> dict[str, Any]:
    """What the engine wrote, read from the file: per superseded memory its events and
    rows, the (older, newer) contents, the cursor and the counts."""
    conn = sqlite3.connect(f"file:{Paths(home).database}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        superseded = {r[0]: r[1] for r in conn.execute(
            "SELECT id, superseded_by FROM memories WHERE superseded_at IS NOT NULL")}
        events: dict[str, list[str]] = {}
        for memory_id, meta in conn.execute(
                "SELECT memory_id, metadata FROM memory_history WHERE event = 'superseded'"):
            events.setdefault(memory_id, []).append(meta)
        rows: dict[str, int] = {}
        kinds = ", ".join(f"'{k}'" for k in store.SETTLED)
        for a, b, kept, status in conn.execute(
                "SELECT memory_a, memory_b, kept, status FROM duplicate_candidates"
                f" WHERE kind IN ({kinds})"):
            assert status == "resolved", status
            loser = a if kept == b else b
            assert kept in (a, b) and superseded.get(loser) == kept
            rows[loser] = rows.get(loser, 0) + 1
        content = dict(conn.execute("SELECT id, content FROM memories"))
        cursor, restated, replaced = conn.execute(
            "SELECT last_seq, restated, replaced FROM consolidation_progress WHERE id = 1"
        ).fetchone()
        return {"superseded": superseded, "events": events, "rows": rows, "cursor": cursor,
                "counted": restated + replaced,
                "pairs": {(content[o], content[n]) for o, n in superseded.items()}}
    finally:
        conn.close()


def check_once(found: dict[str, Any]) -> None:
    """Every superseded memory: one `superseded` event, by the engine, and one resolved row;
    the counts moved with them."""
    superseded = found["superseded"]
    assert set(found["events"]) == set(superseded)
    for memory_id, metas in found["events"].items():
        assert len(metas) == 1, f"{memory_id} superseded {len(metas)} times"
        meta = json.loads(metas[0])
        assert meta["lifecycle"] == "consolidation" and meta["relation"] == "replaces"
        assert meta["supersededBy"] == superseded[memory_id]
    assert found["rows"] == dict.fromkeys(superseded, 1)
    assert found["counted"] == len(superseded)
    assert len(found["pairs"]) == len(superseded)  # no newer memory took two olds


def read_lines(stream: Any, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def run_and_kill(home: Path, log: Path, hold: bool) -> list[dict[str, Any]]:
    """Start the process on `home`, SIGKILL it once it has committed KILL_AFTER_BATCHES
    batches (with `hold`: inside the next batch's write; else a moment later, wherever it
    is); what it reported."""
    args = [str(home), json.dumps(CONFIG), str(PAUSE_S), str(KILL_AFTER_BATCHES if hold else -1)]
    with log.open("wb") as err:  # a file, not a pipe: a full pipe would block the process
        proc = subprocess.Popen([sys.executable, "-c", CHILD, *args], stdout=subprocess.PIPE,
                                stderr=err, text=True, cwd=log.parent)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=read_lines, args=(proc.stdout, lines), daemon=True).start()
    reported: list[dict[str, Any]] = []

    def ready() -> bool:
        if not reported:
            return False
        if hold:
            return "writing" in reported[-1]
        return reported[-1].get("batches", 0) >= KILL_AFTER_BATCHES

    try:
        deadline = time.monotonic() + DEADLINE_S
        while not ready():
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no progress in time: {log.read_text()[-2000:]}"
                                     ) from None
            if line is None:
                raise AssertionError(f"the process ended: {log.read_text()[-2000:]}")
            reported.append(json.loads(line))
        if not hold:
            time.sleep(random.uniform(0.0, PAUSE_S))  # reading, writing or pausing
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(60)
        if proc.stdout is not None:
            proc.stdout.close()
    assert not any(r.get("finished") or r.get("done") for r in reported)
    return reported


@pytest.mark.parametrize("hold", [True, False], ids=["inside-a-batch-write", "anywhere"])
def test_a_pass_killed_mid_way_resumes_without_repeating_or_losing_work(
        tmp_path: Path, hold: bool) -> None:
    crashed, reference = tmp_path / "crashed", tmp_path / "reference"
    last_seq = prepare(crashed)
    shutil.copytree(crashed, reference)  # an identical copy, before any pass

    finish(reference)  # the uninterrupted pass
    expected = settled(reference)
    check_once(expected)
    assert expected["pairs"] == expected_pairs()
    assert expected["cursor"] == last_seq

    reported = run_and_kill(crashed, tmp_path / "process.log", hold)
    committed = [r for r in reported if "cursor" in r][-1]["cursor"]
    mid = settled(crashed)  # what the killed process committed, consistent as it stands
    check_once(mid)
    assert mid["pairs"] and mid["pairs"] < expected["pairs"]  # some settled, not all
    assert committed <= mid["cursor"] < last_seq, "killed after the pass ended"
    if hold:  # the batch killed in its transaction left nothing: neither rows nor cursor
        writing = reported[-1]
        assert writing["replaced"] > 0 and mid["cursor"] == committed < writing["writing"]

    finish(crashed)  # resumed from its cursor, in-process
    found = settled(crashed)
    check_once(found)
    assert found["pairs"] == expected["pairs"]
    assert found["superseded"] == expected["superseded"]  # the same memories, by the same
    assert found["cursor"] == last_seq
