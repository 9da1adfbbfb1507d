"""Shared by the pipeline tests: a scripted "model" for the fake LLM server, and a daemon
whose extraction worker the test drives tick by tick."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import with_store
from llm_servers import Call, Reply
from mnemonist.daemon import Daemon
from mnemonist.model.memory import utcnow
from mnemonist.model.requests import RememberRequest
from mnemonist.settings import Paths, load_config


def facts_json(*facts: tuple[str, float] | tuple[str, float, str],
               entities: list[tuple[str, str, str, float]] | None = None) -> str:
    return json.dumps({
        "facts": [{"content": f[0], "confidence": f[1],
                   "type": f[2] if len(f) > 2 else "fact"} for f in facts],
        "entities": [{"source": s, "relationship": r, "target": t, "confidence": c}
                     for s, r, t, c in entities or []],
    })


def decision_json(action: str, target: str | None = None, reason: str = "scripted",
                  confidence: float = 0.9) -> str:
    return json.dumps({"action": action, "targetId": target, "confidence": confidence,
                       "reason": reason})


class Brain:
    """Answers extraction calls from `extractions` (first key found in the memory text) and
    decision calls with `decide(call)` (default: NONE)."""

    def __init__(self) -> None:
        self.extractions: dict[str, str | Reply] = {}
        self.decide: Callable[[Call], str | Reply] = lambda call: decision_json("none")
        self.contradicts: bool = False

    def __call__(self, call: Call) -> str | Reply:
        if call.kind == "extraction":
            text = call.memory_text()
            for key, answer in self.extractions.items():
                if key in text:
                    return answer
            return facts_json()
        if call.kind == "decision":
            return self.decide(call)
        if call.kind == "contradiction":
            return json.dumps({"contradicts": self.contradicts, "confidence": 0.9,
                               "reasoning": "scripted"})
        return "{}"


def target_containing(word: str) -> Callable[[Call], str]:
    """A decision answer that picks the candidate whose content holds `word` (UPDATE)."""
    def decide(call: Call) -> str:
        for cid, content in call.candidates():
            if word.lower() in content.lower():
                return decision_json("update", cid, f"supersedes the note about {word}")
        return decision_json("add", reason="nothing to update")
    return decide


def pipeline_config(llm_url: str, *, protocol: str = "ollama", embedding: dict | None = None,
                    **flags: Any) -> dict[str, Any]:
    pipeline = {"extraction": {"provider": protocol, "baseUrl": llm_url,
                               "model": "qwen3:4b" if protocol == "ollama" else "test-model",
                               "timeout": 5000},
                "worker": {"pollMs": 100, "maxRetries": 2}}
    for key, value in flags.items():
        if isinstance(value, dict):
            pipeline.setdefault(key, {}).update(value)
        else:
            pipeline[key] = value
    return {"embedding": embedding or {"provider": "none"},
            "memory": {"pipelineV2": pipeline}}


@contextmanager
def manual_daemon(home: Path, config: dict[str, Any]) -> Iterator[Daemon]:
    """The daemon without its background workers: the test runs `tick()` itself."""
    paths = Paths(home)
    config = with_store(home, config) or {}
    d = Daemon(paths, load_config(paths, config), workers=False).start()
    try:
        yield d
    finally:
        d.stop()


def remember(d: Daemon, content: str, **fields: Any) -> str:
    return d.service.memories.remember(RememberRequest(content=content, **fields))["id"]


def run_jobs(d: Daemon, limit: int = 20) -> None:
    """Tick the extraction worker until no runnable job is left."""
    for _ in range(limit):
        if not pending(d):
            return
        d.extraction.worker.tick()


def pending(d: Daemon) -> int:
    return d.db.reader().execute(
        "SELECT COUNT(*) FROM memory_jobs WHERE job_type = 'extract' AND status = 'pending'"
        " AND (run_after IS NULL OR run_after <= ?)", (utcnow(),)
    ).fetchone()[0]


def job_of(d: Daemon, memory_id: str) -> dict[str, Any]:
    row = d.db.reader().execute(
        "SELECT * FROM memory_jobs WHERE memory_id = ? AND job_type = 'extract'",
        (memory_id,)).fetchone()
    out = dict(row)
    out["result"] = json.loads(out["result"]) if out["result"] else None
    return out


def rows(d: Daemon, sql: str, *args: Any) -> list[dict[str, Any]]:
    return [dict(r) for r in d.db.reader().execute(sql, args)]


def audits(d: Daemon, memory_id: str) -> list[dict[str, Any]]:
    out = rows(d, "SELECT * FROM memory_history WHERE memory_id = ? AND event = 'none'"
               " ORDER BY rowid", memory_id)
    for r in out:
        r["metadata"] = json.loads(r["metadata"])
    return out


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return predicate()


def run_prose(d: Daemon, limit: int = 50) -> int:
    """Tick the prose worker (the background reading of bulk imports) until no job is left;
    returns the jobs run."""
    ran = 0
    for _ in range(limit):
        waiting = d.db.reader().execute(
            "SELECT COUNT(*) FROM memory_jobs WHERE job_type = 'prose_link'"
            " AND status = 'pending'").fetchone()[0]
        if not waiting:
            break
        d.prose.worker.tick()
        ran += 1
    return ran
