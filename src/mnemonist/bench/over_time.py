"""`mnemonist bench over-time`: does recall hand back the current value of a fact that changed?

A memory that only grows goes stale: when a fact changes, the old statement stays, and recall
often ranks it above the new one. The stream (`over_time_set.py`: changing facts stated three
times in different words, among unrelated notes, with increasing event times) is remembered
through `service.memories.remember` the way a user would: plain remembers with event times, no `key`
linking the versions. Then the daemon's own upkeep gets `settle_s` seconds (whatever runs in
the background on its own; nothing is called for it), and each question about a fact's current
value is asked twice, the way an agent meets it: through the prompt hook (a fresh session per
question, in the stream's project), then through recall (limit 10, default settings).

Measured:
- `stale_above_current`: share of questions where a stale statement ranks above the best
  current one, or is in the top 10 while no current one is;
- `current_at_1`: share where the top result holds the current value;
- `live_rows_per_fact`: live memories (neither deleted nor superseded) of the project that are
  not filler notes, per fact: 3.0 when nothing merges the three statements of a fact;
- `hook_stale_injected` / `hook_current_injected`: share of questions whose injected memories
  hold a stale / the current value.

A memory the stream wrote is judged by its key (t0 stale, t1 and t2 current) while its text is
the one remembered; a memory the daemon wrote itself or rewrote (a merge) is judged by its
text (`over_time_set.value_held`).
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemonist.bench.over_time_set import Fact, Query, Stream, build, value_held
from mnemonist.model.hooks import PromptSubmitRequest
from mnemonist.model.memory import format_ts
from mnemonist.model.requests import ListRequest, RecallRequest, RememberRequest

PROJECT = "over-time-bench"
#: what a later change must reach
GOAL_STALE_ABOVE_CURRENT = 0.05
GOAL_LIVE_ROWS_PER_FACT = 1.1
#: seconds the daemon's background upkeep gets at most after the writes are embedded (the
#: consolidation engine runs every 30 s by default)
DEFAULT_SETTLE_S = 75.0
LIMIT = 10


class _Judge:
    """Which value a memory holds for a question's fact: "current", "stale" or None."""

    def __init__(self, stream: Stream, ids: dict[str, str], written: dict[str, str]) -> None:
        self.key_of = {memory_id: key for key, memory_id in ids.items()}
        self.written = written  # key -> the content remember stored
        self.facts: dict[str, Fact] = {f.key: f for f in stream.facts}

    def label(self, q: Query, memory_id: str, content: str) -> str | None:
        key = self.key_of.get(memory_id)
        if key is not None and self.written.get(key) == content:
            if key in q.current:
                return "current"
            return "stale" if key in q.stale else None
        return value_held(content, self.facts[q.fact])


def _first(labels: list[str | None], wanted: str) -> int | None:
    return next((i + 1 for i, label in enumerate(labels) if label == wanted), None)


def _recall_row(service: Any, judge: _Judge, q: Query) -> dict[str, Any]:
    out = service.reads.recall(RecallRequest(query=q.text, limit=LIMIT, project=PROJECT))
    labels = [judge.label(q, r["id"], r["content"]) for r in out["results"]]
    current, stale = _first(labels, "current"), _first(labels, "stale")
    return {"query": q.text, "fact": q.fact, "current_rank": current, "stale_rank": stale,
            "stale_above_current": stale is not None and (current is None or stale < current),
            "current_at_1": bool(labels) and labels[0] == "current",
            "top": out["results"][0]["content"] if out["results"] else None}


def _hook_row(service: Any, judge: _Judge, q: Query, i: int) -> dict[str, Any]:
    out = service.hooks.hook_user_prompt_submit(PromptSubmitRequest(
        session_id=f"over-time-{i:03d}", prompt=q.text, project=PROJECT))
    labels = [judge.label(q, mid, service.reads.get(mid, learn=False)["content"])
              for mid in out["memories"]]
    return {"injected": len(labels), "stale": "stale" in labels, "current": "current" in labels}


def _live_ids(service: Any) -> set[str]:
    ids: set[str] = set()
    offset = 0
    while True:
        page = service.reads.list(ListRequest(project=PROJECT, limit=1000, offset=offset))
        ids |= {m["id"] for m in page["memories"]}
        if not page["has_more"]:
            return ids
        offset += len(page["memories"])


def _share(rows: list[dict[str, Any]], field: str) -> float:
    return round(sum(1 for r in rows if r[field]) / len(rows), 3) if rows else 0.0


def _summary(recall: list[dict[str, Any]], hook: list[dict[str, Any]]) -> dict[str, float]:
    return {
        "stale_above_current": _share(recall, "stale_above_current"),
        "current_at_1": _share(recall, "current_at_1"),
        "current_in_top10": round(sum(1 for r in recall if r["current_rank"]) / len(recall), 3)
        if recall else 0.0,
        "stale_in_top10": round(sum(1 for r in recall if r["stale_rank"]) / len(recall), 3)
        if recall else 0.0,
        "hook_stale_injected": _share(hook, "stale"),
        "hook_current_injected": _share(hook, "current"),
    }


def _upkeep(service: Any, settle_s: float) -> float:
    """Give the daemon's own background upkeep up to `settle_s` seconds (nothing is called
    for it): the wait ends early once the consolidation engine has read every memory in a run
    that started after the writes. Seconds waited."""
    started = time.perf_counter()
    since = format_ts(datetime.now(UTC))
    while time.perf_counter() - started < settle_s:
        state = service.curation.consolidation_status()
        ran = state["worker"].get("last_run_at") or ""
        if not state["enabled"] or (state["not_read_yet"] == 0 and ran > since):
            break
        time.sleep(0.5)
    service.flush(timeout=600.0)
    return round(time.perf_counter() - started, 1)


def _merges(service: Any, stream: Stream, ids: dict[str, str]) -> dict[str, Any]:
    """Every memory of the stream that something superseded, and whether the two state the
    same fact (a filler, or two different facts, is a wrong merge)."""
    key_of = {memory_id: key for key, memory_id in ids.items()}
    fact_of = {s.key: s.fact for s in stream.statements}
    rows, wrong = [], []
    for key, memory_id in ids.items():
        m = service.reads.get(memory_id, learn=False)
        by = m.get("superseded_by") if m else None
        if not by:
            continue
        other = key_of.get(by)
        same = (other is not None and fact_of.get(key) is not None
                and fact_of.get(key) == fact_of.get(other))
        row = {"superseded": key, "by": other or by, "same_fact": same}
        rows.append(row)
        if not same:
            wrong.append(row)
    return {"merged": len(rows), "wrongly_merged": len(wrong), "wrong": wrong[:20],
            "sample": rows[:100]}


def run_over_time(seed: int = 7, overrides: dict[str, Any] | None = None, *,
                  facts: int | None = None, fillers: int = 200,
                  settle_s: float = DEFAULT_SETTLE_S, home: Path | None = None) -> dict[str, Any]:
    """Remember the stream in a fresh daemon (in `home`, or a temporary folder), then measure;
    `overrides`: settings of the run's daemon (a configuration file's nested dict)."""
    from mnemonist.daemon import open_memory

    stream = build(seed, facts, fillers)
    with tempfile.TemporaryDirectory(prefix="mnemonist-overtime-") as tmp:
        daemon = open_memory(home or tmp, overrides)
        try:
            service = daemon.service
            started = time.perf_counter()
            ids: dict[str, str] = {}
            written: dict[str, str] = {}
            for s in stream.statements:
                out = service.memories.remember(RememberRequest(content=s.content, project=PROJECT,
                                                                occurred_at=format_ts(s.occurred_at)))
                ids[s.key], written[s.key] = out["id"], out["content"]
            service.flush(timeout=600.0)
            write_s = time.perf_counter() - started
            upkeep_s = _upkeep(service, settle_s)
            live = _live_ids(service)
            fillers_live = sum(1 for s in stream.fillers() if ids[s.key] in live)
            stale_keys = [k for q in stream.queries for k in q.stale]
            stale_live = sum(1 for k in dict.fromkeys(stale_keys) if ids[k] in live)
            judge = _Judge(stream, ids, written)
            merges = _merges(service, stream, ids)
            consolidation = {k: v for k, v in service.curation.consolidation_status().items()
                             if k in ("restated", "replaced", "flagged", "open_contradictions")}
            hook_rows, recall_rows = [], []
            for i, q in enumerate(stream.queries):  # as an agent: the hook fires, then recall
                hook_rows.append(_hook_row(service, judge, q, i))
                recall_rows.append(_recall_row(service, judge, q))
        finally:
            daemon.stop()
    change_of = {f.key: f.change for f in stream.facts}
    by_change: dict[str, dict[str, Any]] = {}
    for change in sorted(set(change_of.values())):
        picked = [i for i, q in enumerate(stream.queries) if change_of[q.fact] == change]
        by_change[change] = {
            "facts": sum(1 for c in change_of.values() if c == change),
            "queries": len(picked),
            **_summary([recall_rows[i] for i in picked], [hook_rows[i] for i in picked])}
    n_facts = len(stream.facts)
    return {
        "seed": seed,
        "project": PROJECT,
        "facts": n_facts,
        "fact_statements": 3 * n_facts,
        "fillers": len(stream.fillers()),
        "queries": len(stream.queries),
        "settle_s": settle_s,
        "upkeep_s": upkeep_s,
        "consolidation": consolidation,
        "merged": merges["merged"],
        "wrongly_merged": merges["wrongly_merged"],
        "merges": merges,
        "write_s": round(write_s, 1),
        "settings": overrides or {},
        **_summary(recall_rows, hook_rows),
        "live_rows_per_fact": round((len(live) - fillers_live) / n_facts, 3),
        "stale_statements_live": round(stale_live / len(set(stale_keys)), 3)
        if stale_keys else 0.0,
        "goal": {"stale_above_current": GOAL_STALE_ABOVE_CURRENT,
                 "live_rows_per_fact": GOAL_LIVE_ROWS_PER_FACT},
        "by_change": by_change,
        "per_query": [{**r, "hook": h} for r, h in zip(recall_rows, hook_rows, strict=True)],
    }


def markdown(report: dict[str, Any]) -> str:
    goal = report["goal"]
    lines = [
        f"{report['facts']} changing facts ({report['fact_statements']} statements) among "
        f"{report['fillers']} filler notes, {report['queries']} questions about the current "
        f"value (seed {report['seed']}, upkeep waited {report['upkeep_s']} s of at most "
        f"{report['settle_s']} s)", "",
        "| measure | value | goal |", "|---|---:|---:|",
        f"| stale ranked above current (recall top {LIMIT}) | "
        f"{report['stale_above_current']:.3f} | ≤ {goal['stale_above_current']:.2f} |",
        f"| current value at rank 1 | {report['current_at_1']:.3f} | |",
        f"| current value in top {LIMIT} | {report['current_in_top10']:.3f} | |",
        f"| stale value in top {LIMIT} | {report['stale_in_top10']:.3f} | |",
        f"| live rows per fact | {report['live_rows_per_fact']:.2f} | "
        f"≤ {goal['live_rows_per_fact']:.1f} |",
        f"| stale statements still live | {report['stale_statements_live']:.3f} | |",
        f"| merged by consolidation (restated + replaced) | {report['merged']} | |",
        f"| wrongly merged pairs | {report['wrongly_merged']} | 0 |",
        f"| contradictions listed for review | "
        f"{report['consolidation'].get('open_contradictions', 0)} | |",
        f"| prompt hook: stale value injected | {report['hook_stale_injected']:.3f} | |",
        f"| prompt hook: current value injected | {report['hook_current_injected']:.3f} | |",
        "", "| change | facts | questions | stale above current | current @1 | hook stale | "
        "hook current |", "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for change, m in report["by_change"].items():
        lines.append(f"| {change} | {m['facts']} | {m['queries']} | "
                     f"{m['stale_above_current']:.3f} | {m['current_at_1']:.3f} | "
                     f"{m['hook_stale_injected']:.3f} | {m['hook_current_injected']:.3f} |")
    return "\n".join(lines)
