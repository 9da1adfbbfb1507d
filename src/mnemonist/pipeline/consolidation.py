"""The consolidation engine without an LLM: memory tidies itself as it grows.

One run reads the memories written since its cursor, in the order they were written, a batch
at a time (`memory.consolidation.batchSize`, at most `maxBatches` per run). For each, its
nearest neighbours of the same project and owner (the vector index, cosine ≥
`minSimilarity`) that were said before it are compared with it by `text.same_fact.relation`:

- **restates** (the same fact said again) or **replaces** (a newer value of the same thing,
  and the newer statement says it changed): the older memory is superseded by the newer one,
  exactly as a keyed update supersedes: its row, archive copy and history stay, it leaves
  recall, and `POST /api/memory/{id}/restore` (one call) makes it current again, after which
  the engine never settles that pair again. The newer memory records what it supersedes; the
  older one's history says why (`lifecycle: consolidation`, the relation and its reason).
- **review** (two statements of one thing that disagree, nothing saying which is current): the
  pair is listed for a person as a `contradiction` (`mnemonist duplicates --kind
  contradiction`, the dashboard, MCP). Nothing changes until they decide.

Statements only: decisions (records of their time), events, session turns, summaries and file
chunks are never merged or superseded (`store.consolidation.UNTOUCHED_TYPES`), nor is a pinned
memory. A memory not embedded yet stops the batch before it; the next run starts there.

Never in the way of a write: everything is read and compared outside any transaction, and each
batch writes its actions and its cursor in one short transaction, so a run killed at any point
(kill -9 included) resumes where its last batch committed, repeating and losing nothing. And
never in the way of a request: the comparing is Python holding the interpreter lock, and
vector searches taking a CPU, so the background run lowers its thread's priority
(guards/background.py) and, before each memory and each pair, steps aside while a request is
in flight (`_StepAside`, the gate background embedding uses), for at most `PATIENCE_S` per
memory so that a busy daemon still sees its pass finish.

With an LLM (`pipeline.consolidation_llm`, a `judge`): the pairs the rules leave unsettled are
asked about, and its validated answer goes through the same writes (history says `judge`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnemonist.guards.background import lower_thread_priority
from mnemonist.model.config_consolidation import ConsolidationConfig
from mnemonist.model.memory import Memory, utcnow
from mnemonist.providers.embedding.request_gate import REQUESTS
from mnemonist.search.vector_index import VectorIndex
from mnemonist.store import archive, duplicates, history, memories
from mnemonist.store import consolidation as store
from mnemonist.store.db import Database
from mnemonist.text.same_fact import Relation, relation

ACTOR = "consolidation"

Embed = Callable[[list[str]], np.ndarray]
#: (older, newer, what the rules found) -> what the LLM found, or None to keep the rules' answer.
#: A Relation of kind `UNRELATED` (or any kind but restates / replaces / review) leaves the pair
#: alone, also when the rules would have listed it for review. A judge that raises is ignored.
#: Its `name` (default "llm") and `model_id`, when it has them, go into history.
Judge = Callable[[Memory, Memory, Relation | None], Relation | None]
#: a judge's answer that the two are about different things (the rules say None instead)
UNRELATED = "unrelated"
_ACTS = ("restates", "replaces", "review")
#: the longest one memory's comparing waits for requests in flight, in all. Measured on 10,000
#: memories, 10 remembers a second beside a full pass, 2 cores loaded by other work, runs with
#: and without alternated: remember p95 during the pass 10.1 / 19.6 / 45.4 ms with it against
#: 23.8 / 31.2 / 60.0 without; the pass took as long (docs/consolidation.md)
PATIENCE_S = 0.25


class _StepAside:
    """Waits while a request is in flight, at most `PATIENCE_S` from `start()` (one memory);
    off (`active` false) for a run that is a request itself."""

    def __init__(self, active: bool) -> None:
        self.active = active
        self.deadline = 0.0

    def start(self) -> None:
        self.deadline = time.monotonic() + PATIENCE_S
        self()

    def __call__(self) -> None:
        if self.active and REQUESTS.in_flight:
            REQUESTS.take_when_clear(lambda: time.monotonic() > self.deadline, lambda: None)


@dataclass
class Action:
    older: Memory
    newer: Memory
    similarity: float
    found: Relation
    judge: Judge | None = None  # the judge whose answer this is; None: the rules'


@dataclass
class RunReport:
    examined: int = 0
    restated: int = 0
    replaced: int = 0
    flagged: int = 0
    llm_asked: int = 0
    llm_answered: int = 0
    batches: int = 0
    cursor: int = 0
    waiting_for_embedding: str | None = None
    done: bool = False
    seconds: float = 0.0
    actions: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "examined", "restated", "replaced", "flagged", "llm_asked", "llm_answered",
            "batches", "cursor",
            "waiting_for_embedding", "done", "seconds", "actions")}


def _when(m: Memory) -> tuple[str, int]:
    return (m.valid_from or m.occurred_at or m.created_at or "", m.seq)


class _Aspects:
    """Cosines of masked sentence pairs, each sentence embedded once per run."""

    def __init__(self, embed: Embed) -> None:
        self.embed = embed
        self.vectors: dict[str, np.ndarray] = {}

    def __call__(self, a: str, b: str) -> float:
        missing = [t for t in dict.fromkeys((a, b)) if t not in self.vectors]
        if missing:
            got = np.asarray(self.embed(missing), dtype=np.float32)
            for text, vec in zip(missing, got, strict=True):
                norm = float(np.linalg.norm(vec))
                self.vectors[text] = vec / norm if norm else vec
        return float(self.vectors[a] @ self.vectors[b])


def _project_words(project: str | None) -> frozenset[str]:
    """The project's name and its parts: most of its memories state it, so it is never the
    subject two statements share."""
    if not project:
        return frozenset()
    name = " ".join(project.lower().split())
    return frozenset({name, *name.replace("-", " ").replace("_", " ").split()})


def _batch(db: Database, after: int, size: int) -> list[Memory]:
    conn = db.reader()
    seqs = store.candidate_seqs(conn, after, size)
    rows = memories.get_many_by_seq(conn, seqs)
    return [rows[s] for s in seqs if s in rows]


def _compare(db: Database, index: VectorIndex, aspects: _Aspects, cfg: ConsolidationConfig,
             batch: list[Memory], judge: Judge | None = None, asked: list[int] | None = None,
             background: bool = False) -> tuple[list[Action], int, str | None, int]:
    """The actions one batch calls for; (actions, examined, waiting id, last seq read).
    `judge` (an LLM, when one is configured) is asked about the pairs the rules leave
    unsettled, at most `llmMaxPairs` a run (`asked` counts them, and its answers, across
    batches)."""
    asked = asked if asked is not None else [0, 0]
    conn = db.reader()
    actions: list[Action] = []
    taken: set[str] = set()  # older memories already settled in this batch
    examined, last, waiting = 0, 0, None
    step_aside = _StepAside(background)
    for m in batch:
        step_aside.start()
        vec = index.vector(m.seq)
        if vec is None:
            waiting = m.id
            break
        # each pair once: from the side written later (the earlier one was read before it)
        near = [(seq, cos) for seq, cos in index.search(vec, cfg.neighbours, project=m.project,
                                                        filter_project=True)
                if seq < m.seq and cos >= cfg.min_similarity]
        rows = memories.get_many_by_seq(conn, [s for s, _ in near], store.candidates_where())
        for seq, cos in near:
            other = rows.get(seq)
            if other is None or (other.agent_id, other.user_id) != (m.agent_id, m.user_id):
                continue
            step_aside()
            older, newer = sorted((other, m), key=_when)  # said earlier, said later
            if older.id in taken or older.pinned or duplicates.known(conn, other.id, m.id):
                continue
            found = relation(older.content, newer.content, aspects,
                             ignore=_project_words(m.project))
            judged: Judge | None = None
            if judge is not None and (found is None or found.kind == "review") and (
                    cos >= cfg.llm_min_similarity and asked[0] < cfg.llm_max_pairs):
                asked[0] += 1
                verdict = _ask(judge, older, newer, found)
                if verdict is not None:
                    asked[1] += 1
                    found, judged = verdict, judge
            if found is None or found.kind not in _ACTS:
                continue
            actions.append(Action(older, newer, cos, found, judged))
            if found.kind != "review":
                taken.add(older.id)
        examined += 1
        last = m.seq
    return actions, examined, waiting, last


def _apply(db: Database, actions: list[Action], start: int, last: int,
           on_superseded: Callable[[int], None]) -> tuple[dict[str, int], list[Action]]:
    """Write one batch's actions and its cursor in one transaction; a memory that changed
    since it was read (forgotten, superseded, edited) is left alone."""
    at = utcnow()
    counts = {"restated": 0, "replaced": 0, "flagged": 0}
    gone: list[int] = []
    done: list[Action] = []
    with db.write_tx() as w:
        for a in actions:
            older, newer = memories.get(w, a.older.id), memories.get(w, a.newer.id)
            if not (older and newer and _live(older) and _live(newer)
                    and older.version == a.older.version and newer.version == a.newer.version):
                continue
            first, second = sorted((older, newer), key=lambda m: m.seq)
            by = f" ({_judge_name(a.judge)})" if a.judge is not None else ""
            reason = f"{a.found.kind}{by}: {a.found.reason}"
            if a.found.kind == "review":
                if store.record(w, first.id, second.id, kind="contradiction",
                                similarity=a.similarity, reason=reason, at=at):
                    counts["flagged"] += 1
                    done.append(a)
                continue
            kind = "restated" if a.found.kind == "restates" else "replaced"
            if not store.record(w, first.id, second.id, kind=kind, similarity=a.similarity,
                                reason=reason, at=at, kept=newer.id):
                continue
            archive.archive_row(w, older.id, reason=reason, by=ACTOR, superseded_by=newer.id,
                                at=at)
            successor_from = newer.valid_from or newer.occurred_at or at
            archive.mark_superseded(w, older.id, newer.id, at=at, by=ACTOR,
                                    valid_to=archive.end_of_validity(older, successor_from))
            if newer.supersedes is None:
                archive.set_supersedes(w, newer.id, older.id)
            history.append(
                w, older.id, "superseded", old_content=older.content,
                new_content=newer.content, changed_by=ACTOR, reason=reason,
                metadata={"supersededBy": newer.id, "lifecycle": "consolidation",
                          "relation": a.found.kind, "similarity": round(a.similarity, 4),
                          "version": older.version + 1, **_judged_by(a.judge)},
                at=at)
            counts[kind] += 1
            gone.append(older.seq)
            done.append(a)
        if last > start:
            store.advance(w, last, at, **counts)
        for seq in gone:
            db.on_commit(functools.partial(on_superseded, seq))
    return counts, done


def _live(m: Memory) -> bool:
    return not m.is_deleted and m.superseded_at is None


def _ask(judge: Judge, older: Memory, newer: Memory, found: Relation | None,
         ) -> Relation | None:
    """The judge's answer, or None (the rules' stands) when it has none, fails or answers
    something that is not a Relation."""
    try:
        verdict = judge(older, newer, found)
    except Exception:
        return None
    return verdict if isinstance(verdict, Relation) else None


def _judge_name(judge: Judge) -> str:
    return str(getattr(judge, "name", "llm"))


def _judged_by(judge: Judge | None) -> dict[str, str]:
    """History metadata naming the judge that decided (nothing when the rules did)."""
    if judge is None:
        return {}
    out = {"judge": _judge_name(judge)}
    model = getattr(judge, "model_id", None)
    if model:
        out["judgeModel"] = str(model)
    return out


def run(db: Database, index: VectorIndex | None, embed: Embed | None,
        cfg: ConsolidationConfig, *, on_superseded: Callable[[int], None] = lambda seq: None,
        max_batches: int | None = None, batch_size: int | None = None,
        judge: Judge | None = None, background: bool = False) -> dict[str, Any]:
    """One run: up to `max_batches` batches from the cursor; what it did. `background`: the
    worker's run, on a thread of its own, which yields the CPU (`lower_thread_priority`) and
    steps aside for requests in flight (an on-demand run is a request itself, and runs
    straight through)."""
    if index is None or embed is None:
        return {"skipped": "no vector index (no embedding provider)"}
    if background:
        lower_thread_priority()
    started = time.perf_counter()
    report = RunReport()
    aspects = _Aspects(embed)
    asked = [0, 0]  # pairs the judge was asked about, answers it gave
    size = batch_size or cfg.batch_size
    for _ in range(max_batches or cfg.max_batches):
        start = store.progress(db.reader())["last_seq"]
        batch = _batch(db, start, size)
        if not batch:
            report.done = True
            break
        actions, examined, waiting, last = _compare(db, index, aspects, cfg, batch, judge,
                                                    asked, background)
        counts, done = _apply(db, actions, start, last, on_superseded)
        report.batches += 1
        report.examined += examined
        report.restated += counts["restated"]
        report.replaced += counts["replaced"]
        report.flagged += counts["flagged"]
        report.llm_asked, report.llm_answered = asked
        report.cursor = max(start, last)
        report.actions += [{"older": a.older.id, "newer": a.newer.id,
                            "relation": a.found.kind, "reason": a.found.reason,
                            **_judged_by(a.judge)}
                           for a in done]
        if waiting is not None:
            report.waiting_for_embedding = waiting
            break
        if len(batch) < size:
            report.done = True
            break
    report.seconds = round(time.perf_counter() - started, 3)
    return report.as_dict()
