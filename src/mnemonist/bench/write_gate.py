"""`mnemonist bench write-gate`: what the write gate and the significance gate would drop.

Write gate, in shadow mode (every memory is stored; each answer says what the gate would have
done), once per threshold, each in a fresh daemon:
- the memory-over-time stream (`over_time_set.build`: facts stated three times — the original
  value t0, its replacement t1 in other words, a repeat t2 — among filler notes), remembered in
  order with its event times: t1 statements the gate would drop are genuine updates lost
  (must be 0); t2 repeats and fillers it would drop say how much it catches and what else;
- hand-written updates (`write_gate_set.UPDATES`, each pair in a project of its own): the
  second statement of a pair must never be dropped; their cosine shows how close an embedding
  puts them;
- restatements (`write_gate_set.RESTATEMENTS`): the same statement said again.

Significance gate: the labelled agent sessions of `write_gate_set.SESSIONS`, ended in order
through the session-end hook in one project (after its curated memories `KNOWN`), each judged
once read (`judge_session`, whatever the mode): routine sessions it would skip, substantive
ones it would skip (must be 0).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from mnemonist.bench.metrics import latency_summary
from mnemonist.bench.over_time_set import build
from mnemonist.bench.write_gate_set import KNOWN, RESTATEMENTS, SESSIONS, UPDATES
from mnemonist.model.hooks import SessionEndRequest
from mnemonist.model.memory import format_ts
from mnemonist.model.requests import RememberRequest

PROJECT = "write-gate-bench"
SESSION_PROJECT = "significance-bench"
THRESHOLDS = (0.8, 0.85, 0.9, 0.95)
WOULD_DROP = ("would_drop", "drop")


def _dropped(answer: dict[str, Any]) -> bool:
    return answer.get("gate", {}).get("decision") in WOULD_DROP


def _stream(service: Any, seed: int) -> dict[str, Any]:
    stream = build(seed)
    by_stage: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    examples: list[dict[str, Any]] = []
    took: list[float] = []
    for s in stream.statements:
        started = time.perf_counter()
        out = service.memories.remember(RememberRequest(content=s.content, project=PROJECT,
                                                        occurred_at=format_ts(s.occurred_at)))
        took.append(time.perf_counter() - started)
        stage = s.stage or "filler"
        by_stage[stage] += 1
        if _dropped(out):
            dropped[stage] += 1
            gate = out["gate"]
            examples.append({"stage": stage, "content": s.content,
                             "neighbour": gate["neighbour"], "cosine": gate["cosine"]})
    return {"statements": dict(by_stage), "would_drop": {k: dropped.get(k, 0)
                                                         for k in ("t0", "t1", "t2", "filler")},
            "examples": examples[:10], "remember_ms": latency_summary(took)}


def _pairs(service: Any, pairs: tuple[tuple[str, str], ...], prefix: str) -> dict[str, Any]:
    rows = []
    for i, (first, second) in enumerate(pairs):
        project = f"{prefix}-{i:02d}"
        service.memories.remember(RememberRequest(content=first, project=project))
        out = service.memories.remember(RememberRequest(content=second, project=project))
        gate = out.get("gate", {})
        rows.append({"stored": first, "new": second, "cosine": gate.get("cosine"),
                     "decision": gate.get("decision"), "reasons": gate.get("reasons", [])})
    cosines = [r["cosine"] for r in rows if r["cosine"] is not None]
    return {"pairs": len(rows), "would_drop": sum(r["decision"] in WOULD_DROP for r in rows),
            "cosine_min": min(cosines) if cosines else None,
            "cosine_max": max(cosines) if cosines else None, "rows": rows}


def run_write_side(threshold: float | None, seed: int = 7) -> dict[str, Any]:
    """One daemon with the gate in shadow at `threshold` (None: the gate off, the baseline
    of remember's latency)."""
    from mnemonist.daemon import open_memory

    gate = {"mode": "shadow", "threshold": threshold} if threshold else {"mode": "off"}
    settings = {"memory": {"writeGate": gate}}
    with tempfile.TemporaryDirectory(prefix="mnemonist-writegate-") as tmp:
        daemon = open_memory(tmp, settings)
        try:
            started = time.perf_counter()
            stream = _stream(daemon.service, seed)
            if threshold is None:
                return {"threshold": None, "stream": stream}
            updates = _pairs(daemon.service, UPDATES, "update")
            restated = _pairs(daemon.service, RESTATEMENTS, "restated")
            took = time.perf_counter() - started
        finally:
            daemon.stop()
    return {"threshold": threshold, "stream": stream, "updates": updates,
            "restatements": restated, "took_s": round(took, 1)}


def _jsonl(key: str, turns: tuple[tuple[str, str], ...], day: int) -> str:
    lines = []
    for i, (role, text) in enumerate(turns):
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(json.dumps({
            "type": role, "message": {"role": role, "content": content},
            "timestamp": f"2025-10-{day:02d}T10:{i:02d}:00.000Z", "sessionId": key,
            "uuid": f"{key}-{i}"}))
    return "\n".join(lines) + "\n"


def run_sessions_side(home: Path | None = None) -> dict[str, Any]:
    from mnemonist.daemon import open_memory

    with tempfile.TemporaryDirectory(prefix="mnemonist-significance-") as tmp:
        daemon = open_memory(home or tmp)
        try:
            service = daemon.service
            for text in KNOWN:
                service.memories.remember(RememberRequest(content=text, project=SESSION_PROJECT))
            rows = []
            for day, (key, label, turns) in enumerate(SESSIONS, start=1):
                service.hooks.hook_session_end(SessionEndRequest(
                    session_id=key, transcript=_jsonl(key, turns, day), project=SESSION_PROJECT))
                service.sessions.wait_sessions(120)
                verdict = service.pipeline.judge_session(key)
                rows.append({"session": key, "label": label,
                             "skip": verdict["insignificant"], "signs": verdict["signs"],
                             "reasons": verdict["reasons"]})
        finally:
            daemon.stop()
    routine = [r for r in rows if r["label"] == "routine"]
    substantive = [r for r in rows if r["label"] == "substantive"]
    return {"sessions": len(rows), "routine": len(routine),
            "routine_skipped": sum(r["skip"] for r in routine),
            "substantive": len(substantive),
            "substantive_skipped": sum(r["skip"] for r in substantive), "rows": rows}


def run_write_gate(thresholds: tuple[float, ...] = THRESHOLDS, seed: int = 7,
                   sessions: bool = True) -> dict[str, Any]:
    return {"seed": seed, "baseline": run_write_side(None, seed),
            "write": [run_write_side(t, seed) for t in thresholds],
            "significance": run_sessions_side() if sessions else None}


def markdown(report: dict[str, Any]) -> str:
    lines = ["Write gate (shadow mode): what it would have dropped", "",
             "| threshold | t1 updates | t2 repeats | t0 | fillers | hand-written updates |"
             " restatements | remember p50 / p95 ms |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    base = report.get("baseline")
    if base:
        ms = base["stream"]["remember_ms"]
        lines.append(f"| gate off | | | | | | | {ms['p50']:.1f} / {ms['p95']:.1f} |")
    for r in report["write"]:
        st, up, re = r["stream"], r["updates"], r["restatements"]
        n, d, ms = st["statements"], st["would_drop"], st["remember_ms"]
        lines.append(
            f"| {r['threshold']} | {d['t1']}/{n.get('t1', 0)} | {d['t2']}/{n.get('t2', 0)} | "
            f"{d['t0']}/{n.get('t0', 0)} | {d['filler']}/{n.get('filler', 0)} | "
            f"{up['would_drop']}/{up['pairs']} | {re['would_drop']}/{re['pairs']} | "
            f"{ms['p50']:.1f} / {ms['p95']:.1f} |")
    first = report["write"][0] if report["write"] else None
    if first is not None:
        up = first["updates"]
        lines += ["", f"Hand-written updates: cosine {up['cosine_min']}–{up['cosine_max']}"
                  " between a statement and its update."]
    sig = report.get("significance")
    if sig:
        lines += ["", "Significance gate (judged, whatever the mode)", "",
                  "| session | label | skip | signs |", "|---|---|---|---|"]
        for r in sig["rows"]:
            signs = ", ".join(k for k, v in r["signs"].items() if v) or "none"
            lines.append(f"| {r['session']} | {r['label']} | {'yes' if r['skip'] else 'no'} |"
                         f" {signs} |")
        lines += ["", f"routine sessions skipped: {sig['routine_skipped']}/{sig['routine']};"
                  f" substantive sessions skipped: {sig['substantive_skipped']}/"
                  f"{sig['substantive']}"]
    return "\n".join(lines)
