"""`mnemonist bench inject`: what the prompt hook hands an agent, measured.

A LoCoMo-format file is remembered through the service (one memory per turn, `project` = the
conversation, as `bench locomo` does). Then, as a new user's agent would meet it, every
question is a fresh session whose working folder is named after its conversation: the
session-start hook runs, then the prompt hook with the question as the prompt, both through
the service calls the HTTP routes make. What the prompt hook injected is scored against the
question's evidence turns:

- hit: questions whose injection holds at least one evidence turn (in context: counting what
  the session-start block gave too, which the prompt hook does not repeat);
- memories per question, and precision: the share of injected memories that are evidence;
- off-topic: coding requests that no conversation answers (`bench/offtopic_prompts.py`),
  each sent in every conversation's folder; the share that got anything injected (the
  prompts the relevance model was never fitted on are reported on their own);
- latency of the prompt hook, p50 / p95.

The agent-memory set (`bench/agent_memory_set.py`) is replayed the same way in a folder of
its own. Only identifiers and numbers are written: no text of the data set.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemonist.bench.agent_memory_set import MEMORIES, QUESTIONS
from mnemonist.bench.locomo import _ingest, _Progress, write_files
from mnemonist.bench.locomo_data import CATEGORY_NAMES, OVERALL_CATEGORIES, load_locomo
from mnemonist.bench.offtopic_prompts import FIT, PROMPTS
from mnemonist.bench.stats import summarize_ms
from mnemonist.daemon import open_memory
from mnemonist.model.hooks import PromptSubmitRequest, SessionStartRequest
from mnemonist.model.requests import RememberRequest

AGENT_FOLDER = "agent-memory-bench"


@dataclass
class Tally:
    """What the prompt hook gave a set of questions."""

    questions: int = 0
    hits: int = 0
    in_context: int = 0  # evidence among what session start and the prompt hook gave together
    given: int = 0
    good: int = 0
    latency_s: list[float] = field(default_factory=list)

    def add(self, injected: Sequence[str], relevant: set[str], took: float,
            at_start: Sequence[str] = ()) -> None:
        self.questions += 1
        good = sum(1 for m in injected if m in relevant)
        self.hits += good > 0
        self.in_context += good > 0 or any(m in relevant for m in at_start)
        self.given += len(injected)
        self.good += good
        self.latency_s.append(took)

    def report(self) -> dict[str, Any]:
        n = max(1, self.questions)
        return {
            "questions": self.questions,
            "hit": round(self.hits / n, 4),
            "in_context": round(self.in_context / n, 4),
            "memories_per_question": round(self.given / n, 3),
            "precision": round(self.good / max(1, self.given), 4),
            "latency_ms": summarize_ms(self.latency_s),
        }


class Replayer:
    """Fresh sessions in a folder named after the project, through the hooks."""

    def __init__(self, service: Any, root: Path) -> None:
        self.service = service
        self.root = root
        self.sessions = 0
        self.start_memories = 0

    def ask(self, folder: str, prompt: str) -> tuple[list[str], float, list[str]]:
        """(what the prompt hook injected, its latency, what session start injected)"""
        cwd = self.root / folder
        cwd.mkdir(parents=True, exist_ok=True)
        self.sessions += 1
        key = f"bench-inject-{self.sessions}"
        start = self.service.hooks.hook_session_start(SessionStartRequest(
            session_id=key, cwd=str(cwd), source="startup", harness="bench"))
        self.start_memories += len(start["memories"])
        started = time.perf_counter()
        out = self.service.hooks.hook_user_prompt_submit(PromptSubmitRequest(
            session_id=key, cwd=str(cwd), prompt=prompt, harness="bench"))
        return list(out["memories"]), time.perf_counter() - started, list(start["memories"])


def run_inject(
    data_path: str | Path,
    *,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    overrides: dict[str, Any] | None = None,
    progress: bool = True,
    out_dir: str | Path | None = "bench-results",
) -> dict[str, Any]:
    started_at = datetime.now(UTC)
    show = _Progress(progress)
    conversations = load_locomo(Path(data_path))[:limit_conversations]
    with tempfile.TemporaryDirectory(prefix="mnemonist-inject-") as tmp:
        daemon = open_memory(Path(tmp) / "home", overrides)
        try:
            report = _run(daemon.service, conversations, limit_questions,
                          Replayer(daemon.service, Path(tmp) / "work"), show)
            report["hooks"] = daemon.config.hooks.model_dump(by_alias=True)
        finally:
            daemon.stop()
    report = {"data": str(data_path), "started_at": started_at.isoformat(timespec="seconds"),
              **report}
    if out_dir is not None:
        write_files(report, Path(out_dir), "inject", started_at, markdown)
    return report


def _run(service: Any, conversations: list[Any], limit_questions: int | None,
         replay: Replayer, show: _Progress) -> dict[str, Any]:
    states = [_ingest(service, conv, show, f"[inject] {conv.sample_id}")[0]
              for conv in conversations]
    service.flush(timeout=3600.0)
    overall = Tally()
    by_category: dict[int, Tally] = {}
    for state in states:
        sid = state.conv.sample_id
        items = [q for q in state.conv.qa if q.evidence and q.question.strip()]
        for qa in items[:limit_questions]:
            relevant = {state.dia_to_id[d] for d in qa.evidence}
            injected, took, at_start = replay.ask(sid, qa.question)
            by_category.setdefault(qa.category, Tally()).add(injected, relevant, took, at_start)
            if qa.category in OVERALL_CATEGORIES:
                overall.add(injected, relevant, took, at_start)
            show.show(f"[inject] {sid}: {overall.questions} questions")
    fitted = set(FIT)
    off: dict[str, list[bool]] = {"held": [], "fitted": []}
    off_latency: list[float] = []
    for state in states:
        for prompt in PROMPTS:
            injected, took, _ = replay.ask(state.conv.sample_id, prompt)
            off["fitted" if prompt in fitted else "held"].append(bool(injected))
            off_latency.append(took)
        show.show(f"[inject] off-topic in {state.conv.sample_id}")
    agent = _agent_memory(service, replay)
    show.end(f"[inject] {overall.questions} questions, {replay.sessions} sessions")
    every = [x for v in off.values() for x in v]
    return {
        "conversations": [s.conv.sample_id for s in states],
        "locomo": overall.report(),
        "by_category": {str(c): {"name": CATEGORY_NAMES.get(c, str(c)), **t.report()}
                        for c, t in sorted(by_category.items())},
        "offtopic": {
            "prompts": len(PROMPTS), "sent": len(every),
            "with_any": round(sum(every) / max(1, len(every)), 4),
            "held_with_any": round(sum(off["held"]) / max(1, len(off["held"])), 4),
            "fitted_with_any": round(sum(off["fitted"]) / max(1, len(off["fitted"])), 4),
            "latency_ms": summarize_ms(off_latency),
        },
        "agent_memory": agent.report(),
        "session_start_memories_per_session": round(
            replay.start_memories / max(1, replay.sessions), 2),
    }


def _agent_memory(service: Any, replay: Replayer) -> Tally:
    ids = {key: service.memories.remember(RememberRequest(content=content, type=kind,
                                                          project=AGENT_FOLDER))["id"]
           for key, (kind, content) in MEMORIES.items()}
    service.flush(timeout=600.0)
    tally = Tally()
    for question, keys in QUESTIONS:
        injected, took, at_start = replay.ask(AGENT_FOLDER, question)
        tally.add(injected, {ids[k] for k in keys}, took, at_start)
    return tally


def markdown(report: dict[str, Any]) -> str:
    def row(name: str, t: dict[str, Any]) -> str:
        lat = t["latency_ms"]
        return (f"| {name} | {t['questions']} | {t['hit']:.3f} | {t['in_context']:.3f}"
                f" | {t['memories_per_question']:.2f} | {t['precision']:.3f}"
                f" | {lat.get('p50', 0):.1f} / {lat.get('p95', 0):.1f} |")

    off = report["offtopic"]
    lines = [
        f"# mnemonist inject benchmark, {report['started_at']}", "",
        f"Data: {report['data']} ({', '.join(report['conversations'])}); a fresh session per"
        " question, the folder named after its conversation, default hooks settings.", "",
        "| set | questions | hit | in context | memories / question | precision"
        " | hook p50 / p95 ms |",
        "|---|---|---|---|---|---|---|",
        row("LoCoMo, categories 1-4", report["locomo"]),
        *(row(f"category {c} {t['name']}", t) for c, t in report["by_category"].items()),
        row("agent-memory set", report["agent_memory"]), "",
        f"Off-topic prompts with anything injected: {off['with_any']:.3f} of {off['sent']}"
        f" (never fitted on: {off['held_with_any']:.3f}; fitted on: {off['fitted_with_any']:.3f})",
        "",
    ]
    return "\n".join(lines)
