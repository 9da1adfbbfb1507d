"""The consolidation engine at scale: what a full pass costs, and what it does to remember.

`bench scale` opens its daemon with the background consolidation worker off
(`memory.consolidation.enabled: false`, `DISABLED`): with the default schedule it would wake
every 30 s during the remember and embedding phases, read the store as it grows and compete
with the writes those phases time, at moments no two runs would share. This phase, after the
store is built, embedded and recalled, runs the pass itself: from cursor 0 to the last memory
there when it starts, run after run through `service.curation.consolidate(background=True)`
(what the worker calls, stepping aside for requests in flight:
each run at most `maxBatches` batches of `batchSize`), back to back in one thread (the
worker's `intervalMs` pause between runs is left out: this is the pass's cost, not its
schedule; the schedule is estimated apart). Meanwhile the main thread remembers new synthetic
memories at a steady pace (`REMEMBER_PER_S`), timing each call as the remember phase does.

Reported: the pass's wall time, memories read per second, runs and batches, what it settled
(restated / replaced / flagged), each batch's compare time (reads, vector search, the rules;
outside any transaction) and write time (`pipeline.consolidation._apply`: the writer lock
taken and the batch's one transaction, the longest apart), and remember p50 / p95 / p99
during the pass beside the remember phase's p95 in the same run.
"""

from __future__ import annotations

import threading
import time
from array import array
from typing import Any

from mnemonist.bench.stats import Progress, SchedSample, summarize_ms
from mnemonist.bench.synthetic import SyntheticCorpus
from mnemonist.model.requests import RememberRequest
from mnemonist.pipeline import consolidation as engine
from mnemonist.store import consolidation as store

#: the bench's overrides for the earlier phases: no background consolidation worker
DISABLED = {"memory": {"consolidation": {"enabled": False}}}
#: remembers per second during the pass (one caller thread, a steady pace)
REMEMBER_PER_S = 10.0
#: the remembered memories' corpus: another seed than the store's and the sample's
SEED_OFFSET = 3


def without_worker(overrides: dict[str, Any] | None) -> dict[str, Any]:
    """`overrides` with the consolidation worker off (the user's other consolidation settings,
    batch size and budget included, kept)."""
    out = dict(overrides or {})
    memory = dict(out.get("memory", {}))
    memory["consolidation"] = {**memory.get("consolidation", {}), "enabled": False}
    out["memory"] = memory
    return out


class _Timed:
    """Times each call of the engine's per-batch steps (`_compare`, `_apply`) and of its
    masked-sentence cosines, by wrapping them while the phase runs (restored afterwards; a
    step the engine no longer has is left untimed)."""

    def __init__(self) -> None:
        self.compare_s, self.apply_s, self.aspect_s = array("d"), array("d"), array("d")
        self._targets = [(engine, "_compare", self.compare_s), (engine, "_apply", self.apply_s),
                         (getattr(engine, "_Aspects", None), "__call__", self.aspect_s)]
        self._saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> _Timed:
        for owner, name, into in self._targets:
            real = getattr(owner, name, None) if owner is not None else None
            if real is None:
                continue

            def timed(*args: Any, _real: Any = real, _into: array = into, **kwargs: Any) -> Any:
                t = time.perf_counter()
                try:
                    return _real(*args, **kwargs)
                finally:
                    _into.append(time.perf_counter() - t)

            self._saved.append((owner, name, real))
            setattr(owner, name, timed)
        return self

    def __exit__(self, *exc: Any) -> None:
        for owner, name, real in reversed(self._saved):
            setattr(owner, name, real)
        self._saved.clear()


def _last_candidate(service: Any) -> tuple[int, int]:
    """(the last seq the engine would read, how many it would read from cursor 0)."""
    conn = service.core.db.reader()
    row = conn.execute(
        f"SELECT MAX(m.seq) FROM memories m WHERE {store.candidates_where()}").fetchone()
    return int(row[0] or 0), store.pending(conn, 0)


def _blocked(latencies: array, sched: SchedSample) -> dict[str, Any]:
    """Per call, the wall time neither on a CPU nor waiting for one: waiting for the writer
    lock or the interpreter lock (Linux schedstat; nothing elsewhere)."""
    if len(sched.on_cpu) != len(latencies) or not latencies:
        return {}
    return {"blocked_ms": summarize_ms([max(0.0, w - c - q) for w, c, q in zip(
        latencies, sched.on_cpu, sched.waiting, strict=True)])}


def consolidation_phase(service: Any, seed: int, run: dict[str, Any], progress: bool,
                        *, remember_per_s: float = REMEMBER_PER_S) -> None:
    """One full pass beside paced remembers; `run["consolidation"]`."""
    cfg = service.core.config.memory.consolidation
    start_cursor = store.progress(service.core.db.reader())["last_seq"]
    end_seq, candidates = _last_candidate(service)
    totals = {"runs": 0, "batches": 0, "examined": 0, "restated": 0, "replaced": 0,
              "flagged": 0}
    run_s = array("d")
    state: dict[str, Any] = {"error": None, "skipped": None, "stalled_on": None}
    finished = threading.Event()
    bar = Progress("consolidation", max(1, candidates), enabled=progress, unit="read")

    def pass_() -> None:
        try:
            cursor = start_cursor
            while cursor < end_seq:
                out = service.curation.consolidate(background=True)  # as the worker runs
                if "skipped" in out:
                    state["skipped"] = out["skipped"]
                    return
                totals["runs"] += 1
                run_s.append(out["seconds"])
                for key in ("batches", "examined", "restated", "replaced", "flagged"):
                    totals[key] += out[key]
                bar.update(totals["examined"])
                moved = out["cursor"] > cursor
                cursor = max(cursor, out["cursor"])
                if out["done"]:  # read to the end (of what is there now)
                    return
                if not moved:  # a memory not embedded (the embedding wait timed out)
                    state["stalled_on"] = out.get("waiting_for_embedding")
                    return
        except Exception as exc:  # reported, never raised past the benchmark
            state["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            finished.set()

    latencies = array("d")
    sched = SchedSample()
    created = deduplicated = 0
    corpus = SyntheticCorpus(seed + SEED_OFFSET).generate(10**9)
    period = 1.0 / remember_per_s
    with _Timed() as timed:
        thread = threading.Thread(target=pass_, name="bench-consolidation", daemon=True)
        t0 = time.perf_counter()
        thread.start()
        next_at = t0
        while True:  # at least one remember, however short the pass
            body = next(corpus).request_body()
            sched.before()
            t = time.perf_counter()
            out = service.memories.remember(RememberRequest.model_validate(body))
            latencies.append(time.perf_counter() - t)
            sched.after()
            if out["created"]:
                created += 1
            else:
                deduplicated += 1
            next_at = max(next_at + period, time.perf_counter())  # late: no burst to catch up
            if finished.wait(max(0.0, next_at - time.perf_counter())):
                break
        thread.join()
        wall = time.perf_counter() - t0
    bar.finish(state["error"] or state["skipped"] or "")
    status = service.curation.consolidation_status()
    before_p95 = run.get("remember", {}).get("latency_ms", {}).get("p95")
    during = summarize_ms(latencies)
    runs = totals["runs"]
    run["consolidation"] = {
        "worker_during_earlier_phases": "off (memory.consolidation.enabled: false); this phase"
                                        " runs the pass itself",
        "batch_size": cfg.batch_size,
        "max_batches_per_run": cfg.max_batches,
        "interval_s": round(cfg.interval_ms / 1000.0, 1),
        "candidates": candidates,
        "end_seq": end_seq,
        "cursor_after": status["cursor"],
        "completed": state["error"] is None and state["skipped"] is None
        and state["stalled_on"] is None,
        "error": state["error"],
        "skipped": state["skipped"],
        "stalled_waiting_for_embedding": state["stalled_on"],
        "pass_s": round(wall, 2),
        "memories_read_per_s": round(totals["examined"] / wall, 1) if wall > 0 else None,
        **totals,
        "run_s": summarize_ms(run_s),
        # the background worker would pause intervalMs between runs: its time to cover it
        "worker_schedule_estimate_s": round(wall + max(0, runs - 1) * cfg.interval_ms / 1000.0,
                                            1) if runs else None,
        "batch_compare_ms": summarize_ms(timed.compare_s),
        # of the compare time: the rules' masked-sentence cosines (embedded, cached per run)
        "aspect_similarity": {"calls": len(timed.aspect_s),
                              "s": round(sum(timed.aspect_s), 2),
                              "share_of_compare": (round(sum(timed.aspect_s)
                                                         / sum(timed.compare_s), 3)
                                                   if sum(timed.compare_s) else None)},
        "batch_write_ms": summarize_ms(timed.apply_s),
        "longest_batch_write_ms": (round(max(timed.apply_s) * 1000.0, 3) if timed.apply_s
                                   else None),
        "remember": {
            "per_s_asked": remember_per_s,
            "created": created,
            "deduplicated": deduplicated,
            "latency_ms": during,
            **sched.report(),
            **_blocked(latencies, sched),
            "remember_phase_p95_ms": before_p95,
            "p95_over_remember_phase_p95": (round(during["p95"] / before_p95, 2)
                                            if during.get("p95") and before_p95 else None),
        },
    }
