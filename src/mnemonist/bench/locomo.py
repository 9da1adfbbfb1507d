"""The LoCoMo recall benchmark: every turn remembered through the service, every question
recalled through it, with BM25-only and dense-only baselines over the same memories.

One memory per turn, `project` = the conversation (so a query never sees another
conversation), `occurred_at` = the session's date-time. Relevance is turn level: a question's
evidence dia_ids, mapped to the memories they became. Categories 1–4 make the overall score;
category 5 (adversarial) is reported on its own. Access tracking stays live, as in a user's
daemon. Results are written to `<out>/locomo-<timestamp>.json` and `.md`.

Only identifiers and numbers are written: no text of the data set leaves the caller's file.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mnemonist
from mnemonist.bench.ablation import Variant, applied
from mnemonist.bench.locomo_data import (
    CATEGORY_NAMES,
    OVERALL_CATEGORIES,
    SYSTEMS,
    Conversation,
    QAItem,
    load_locomo,
)
from mnemonist.bench.locomo_report import render_markdown
from mnemonist.bench.metrics import (  # noqa: F401  (re-exported for the tests)
    first_rank,
    hit_at,
    latency_summary,
    mean_metrics,
    ndcg_at,
    question_metrics,
    recall_at,
    reciprocal_rank,
    session_recall_at,
)
from mnemonist.daemon import open_memory
from mnemonist.model.requests import RecallFilters, RecallRequest, RememberRequest
from mnemonist.search.keyword import keyword_search
from mnemonist.search.relevance import RelevanceModel, load_model

MAX_DEPTH = 200  # RecallRequest.limit's upper bound


class _Progress:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._width = 0
        self._last = 0.0

    def show(self, text: str, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.2:
            return
        self._last = now
        self._width = max(self._width, len(text))
        sys.stderr.write("\r" + text.ljust(self._width))
        sys.stderr.flush()

    def end(self, text: str) -> None:
        if self.enabled:
            self.show(text, force=True)
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._width = 0


@dataclass
class _Ingested:
    conv: Conversation
    dia_to_id: dict[str, str] = field(default_factory=dict)
    sessions_of: dict[str, set[int]] = field(default_factory=dict)  # memory id -> sessions
    deduplicated: int = 0


@dataclass
class _Scores:
    by_system: dict[str, list[tuple[int, dict[str, float]]]] = field(
        default_factory=lambda: {s: [] for s in SYSTEMS}
    )
    latency: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in SYSTEMS})
    questions: list[dict[str, Any]] = field(default_factory=list)
    degraded: int = 0


def _ingest(
    service: Any, conv: Conversation, progress: _Progress, label: str
) -> tuple[_Ingested, float]:
    state = _Ingested(conv)
    spent = 0.0
    turns = conv.turns()
    done = 0
    for session in conv.sessions:
        when = session.date_time.isoformat() if session.date_time else None
        for turn in session.turns:
            started = time.perf_counter()
            out = service.memories.remember(
                RememberRequest(
                    content=turn.content,
                    project=conv.sample_id,
                    source_id=f"{conv.sample_id}/session_{session.number}",
                    source_type="conversation",
                    occurred_at=when,
                    who=turn.speaker,
                    idempotency_key=f"{conv.sample_id}/{turn.dia_id}",
                )
            )
            spent += time.perf_counter() - started
            state.dia_to_id[turn.dia_id] = out["id"]
            state.sessions_of.setdefault(out["id"], set()).add(session.number)
            if not out["created"]:
                state.deduplicated += 1
            done += 1
            progress.show(f"{label} ingest {done}/{len(turns)} turns")
    return state, spent


def _evaluable(conv: Conversation) -> tuple[list[tuple[int, QAItem]], int]:
    items = [(i, q) for i, q in enumerate(conv.qa) if q.evidence and q.question.strip()]
    return items, len(conv.qa) - len(items)


def _score_conversation(
    service: Any,
    state: _Ingested,
    items: list[tuple[int, QAItem]],
    depth: int,
    ks: Sequence[int],
    scores: _Scores,
    progress: _Progress,
    label: str,
) -> None:
    conv = state.conv
    sid = conv.sample_id
    conn = service.core.db.reader()
    seq_to_id = {
        row[0]: row[1]
        for row in conn.execute(
            "SELECT seq, id FROM memories WHERE project = ? AND is_deleted = 0", (sid,)
        )
    }
    turn_session = conv.session_of()
    kw_filters = RecallFilters(project=sid)
    for done, (index, qa) in enumerate(items, start=1):
        relevant = {state.dia_to_id[d] for d in qa.evidence}
        relevant_sessions = {turn_session[d] for d in qa.evidence}
        ranked: dict[str, list[str]] = {}

        request = RecallRequest(query=qa.question, limit=depth, project=sid, min_score=0.0)
        started = time.perf_counter()
        out = service.reads.recall(request)
        scores.latency["mnemonist"].append(time.perf_counter() - started)
        ranked["mnemonist"] = [r["id"] for r in out["results"]]
        foreign = {"mnemonist": sum(1 for r in out["results"] if r["project"] != sid)}
        if out["method"] != "hybrid":
            scores.degraded += 1

        started = time.perf_counter()
        kw = keyword_search(conn, qa.question, kw_filters, depth)
        scores.latency["bm25"].append(time.perf_counter() - started)
        ranked["bm25"] = [seq_to_id[s] for s, _ in kw if s in seq_to_id]
        foreign["bm25"] = len(kw) - len(ranked["bm25"])

        qvec = service.core.embed_query(qa.question)  # cached by the recall above
        dense: list[tuple[int, float]] = []
        if qvec is not None and service.core.index is not None:
            started = time.perf_counter()
            dense = service.core.index.search(qvec, depth, project=sid, filter_project=True)
            scores.latency["dense"].append(time.perf_counter() - started)
        ranked["dense"] = [seq_to_id[s] for s, _ in dense if s in seq_to_id]
        foreign["dense"] = len(dense) - len(ranked["dense"])

        record: dict[str, Any] = {
            "sample_id": sid,
            "qa_index": index,
            "category": qa.category,
            "evidence_turns": len(qa.evidence),
            "evidence_memories": len(relevant),
            "first_rank": {},
            "retrieved": {system: len(ranked[system]) for system in SYSTEMS},
            "foreign_results": foreign,
        }
        for system in SYSTEMS:
            metrics = question_metrics(
                ranked[system], relevant, state.sessions_of, relevant_sessions, ks
            )
            scores.by_system[system].append((qa.category, metrics))
            record["first_rank"][system] = first_rank(ranked[system], relevant)
        scores.questions.append(record)
        progress.show(f"{label} questions {done}/{len(items)}")


def _score_variants(
    service: Any, ingested: list[_Ingested], limit_questions: int | None, depth: int,
    ks: Sequence[int], variants: Sequence[Variant], show: _Progress,
    models: dict[str, RelevanceModel] | None = None,
) -> list[dict[str, Any]]:
    """mnemonist's metrics under each variant, on the memories already ingested (`models`:
    each conversation's held-out relevance model, as in the main run)."""
    out: list[dict[str, Any]] = []
    for n, variant in enumerate(variants, start=1):
        rows: list[tuple[int, dict[str, float]]] = []
        by_conversation: dict[str, Any] = {}
        reset_access(service)
        with applied(service, variant):
            for state in ingested:
                conv, sid = state.conv, state.conv.sample_id
                if models is not None:
                    model = models[sid]
                    service.core.searcher.relevance_model = lambda model=model: model
                first = len(rows)
                items, _ = _evaluable(conv)
                if limit_questions is not None:
                    items = items[:limit_questions]
                turn_session = conv.session_of()
                for _, qa in items:
                    relevant = {state.dia_to_id[d] for d in qa.evidence}
                    sessions = {turn_session[d] for d in qa.evidence}
                    got = service.reads.recall(
                        RecallRequest(query=qa.question, limit=depth, project=sid, min_score=0.0)
                    )
                    ranked = [r["id"] for r in got["results"]]
                    rows.append((qa.category, question_metrics(
                        ranked, relevant, state.sessions_of, sessions, ks)))
                by_conversation[sid] = _summarize(rows[first:])["overall"]
                show.show(f"[locomo] ablation {n}/{len(variants)} {variant.name}")
        out.append({"name": variant.name, "settings": dict(variant.settings),
                    **_summarize(rows), "by_conversation": by_conversation})
    show.end(f"[locomo] {len(variants)} ablations scored")
    return out


def reset_access(service: Any) -> None:
    """Every variant starts from the access state the main run started from (nothing accessed
    yet), so its access-reading signals build up over its own questions, live, as in a user's
    daemon, and no variant inherits the recalls of the ones before it."""
    service.core.access.flush()
    with service.core.db.write_tx() as conn:
        conn.execute("UPDATE memories SET access_count = 0, recall_count = 0,"
                     " last_accessed = NULL WHERE access_count > 0 OR recall_count > 0"
                     " OR last_accessed IS NOT NULL")


def _summarize(rows: list[tuple[int, dict[str, float]]]) -> dict[str, Any]:
    overall = [m for cat, m in rows if cat in OVERALL_CATEGORIES]
    categories: dict[str, Any] = {}
    for cat in sorted({c for c, _ in rows}):
        members = [m for c, m in rows if c == cat]
        categories[str(cat)] = {
            "name": CATEGORY_NAMES.get(cat, f"category {cat}"),
            "n": len(members),
            "in_overall": cat in OVERALL_CATEGORIES,
            **mean_metrics(members),
        }
    return {"overall": {"n": len(overall), **mean_metrics(overall)}, "by_category": categories}


def _by_conversation(scores: _Scores, system: str) -> dict[str, Any]:
    """The system's overall metrics per conversation (the split check reads them)."""
    rows: dict[str, list[tuple[int, dict[str, float]]]] = {}
    for record, row in zip(scores.questions, scores.by_system[system], strict=True):
        rows.setdefault(record["sample_id"], []).append(row)
    return {sid: _summarize(r)["overall"] for sid, r in rows.items()}


def _code_state() -> dict[str, Any]:
    """Which code was measured: the git commit of mnemonist's source and its local changes."""
    root = Path(mnemonist.__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "src"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {"source": str(root), "git_commit": None}
    changed = sorted(line[3:] for line in status if line.strip())
    return {"source": str(root), "git_commit": commit, "git_changed_files": changed}


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_locomo(
    data_path: str | os.PathLike[str],
    *,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    ks: Sequence[int] = (5, 10, 20),
    home: str | os.PathLike[str] | None = None,
    overrides: dict[str, Any] | None = None,
    progress: bool = True,
    out_dir: str | os.PathLike[str] | None = "bench-results",
    variants: Sequence[Variant] = (),
    held_out: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Run the benchmark; write `<out_dir>/locomo-<timestamp>.{json,md}` (unless out_dir is
    None) and return the JSON-able result (`render_markdown` turns it into the report).

    `limit_questions` keeps the first N questions per conversation that have evidence.
    `home` must hold no database yet; by default a temporary folder is used and removed.
    `held_out`: a folder of relevance models, `<conversation>.json` each fitted without that
    conversation (`bench relevance --write-folds`); each conversation is then ranked by its
    own, so the learned ranker is measured on conversations it never saw.
    """
    ks = tuple(sorted({int(k) for k in ks}))
    if not ks or ks[0] < 1 or ks[-1] > MAX_DEPTH:
        raise ValueError(f"every k must be between 1 and {MAX_DEPTH}")
    eval_ks = tuple(sorted(set(ks) | {5, 10}))
    depth = max(eval_ks)
    data_path = Path(data_path)
    conversations = load_locomo(data_path)
    if limit_conversations is not None:
        conversations = conversations[:limit_conversations]
    started_at = datetime.now(UTC)
    show = _Progress(progress)
    models = held_out_models(Path(held_out), conversations) if held_out is not None else None

    tmp: tempfile.TemporaryDirectory[str] | None = None
    if home is None:
        tmp = tempfile.TemporaryDirectory(prefix="mnemonist-locomo-")
        home = tmp.name
    elif (Path(home) / "memory" / "memories.db").exists():
        raise ValueError(f"{home} already holds a database; the benchmark needs an empty home")
    try:
        opened = time.perf_counter()
        daemon = open_memory(home, overrides)
        startup_s = time.perf_counter() - opened
        try:
            result = _run(daemon, conversations, limit_questions, ks, eval_ks, depth, show,
                          models)
            if variants:
                result["ablations"] = _score_variants(
                    daemon.service, result.pop("_ingested"), limit_questions, depth, eval_ks,
                    variants, show, models,
                )
            result.pop("_ingested", None)
        finally:
            daemon.stop()
    finally:
        if tmp is not None:
            tmp.cleanup()

    result["config"] = {
        "data": str(data_path),
        "data_sha256": _file_sha256(data_path),
        "limit_conversations": limit_conversations,
        "limit_questions_per_conversation": limit_questions,
        "ks": list(ks),
        "depth": depth,
        "overrides": overrides or {},
        "held_out_models": str(held_out) if held_out is not None else None,
        "temporary_home": tmp is not None,
        "started_at": started_at.isoformat(timespec="seconds"),
        "startup_s": round(startup_s, 2),
        "mnemonist": mnemonist.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        **_code_state(),
        **result.pop("_config"),
    }
    result = {"config": result.pop("config"), **result}
    if out_dir is not None:
        write_files(result, Path(out_dir), "locomo", started_at, render_markdown)
    return result


def held_out_models(folder: Path, conversations: Sequence[Conversation]
                    ) -> dict[str, RelevanceModel]:
    """Each conversation's model from `folder` (`<sample_id>.json`); a missing or unreadable
    one is an error before anything runs."""
    out = {}
    for conv in conversations:
        path = folder / f"{conv.sample_id}.json"
        try:
            out[conv.sample_id] = load_model(path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"no usable held-out model for {conv.sample_id}: {exc}") from exc
    return out


def write_files(result: dict[str, Any], out: Path, name: str, started_at: datetime,
                render: Any) -> None:
    """`<out>/<name>-<timestamp>.json` and `.md`; their paths go into `result["files"]`."""
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{name}-{started_at.strftime('%Y%m%d-%H%M%S')}"
    result["files"] = {"json": f"{stem}.json", "markdown": f"{stem}.md"}
    Path(f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    Path(f"{stem}.md").write_text(render(result), encoding="utf-8")


def _run(
    daemon: Any,
    conversations: list[Conversation],
    limit_questions: int | None,
    ks: tuple[int, ...],
    eval_ks: tuple[int, ...],
    depth: int,
    show: _Progress,
    models: dict[str, RelevanceModel] | None = None,
) -> dict[str, Any]:
    service = daemon.service
    n = len(conversations)

    ingested: list[_Ingested] = []
    ingest_s = 0.0
    began = time.perf_counter()
    for i, conv in enumerate(conversations, start=1):
        label = f"[locomo] conversation {i}/{n} {conv.sample_id}"
        state, spent = _ingest(service, conv, show, label)
        ingested.append(state)
        ingest_s += spent
    turns = sum(len(s.dia_to_id) for s in ingested)
    show.end(f"[locomo] ingested {turns} turns in {ingest_s:.1f} s; waiting for embeddings")
    waited = time.perf_counter()
    embedded_ok = service.flush(timeout=3600.0)
    embed_wait_s = time.perf_counter() - waited
    embed_total_s = time.perf_counter() - began
    vectors = len(service.core.index) if service.core.index is not None else 0
    memories = sum(len(s.sessions_of) for s in ingested)

    scores = _Scores()
    skipped_questions = 0
    evaluated: dict[str, int] = {}
    query_began = time.perf_counter()
    for i, state in enumerate(ingested, start=1):
        items, skipped = _evaluable(state.conv)
        skipped_questions += skipped
        if limit_questions is not None:
            items = items[:limit_questions]
        if models is not None:
            model = models[state.conv.sample_id]
            service.core.searcher.relevance_model = lambda model=model: model
        _score_conversation(
            service,
            state,
            items,
            depth,
            eval_ks,
            scores,
            show,
            f"[locomo] conversation {i}/{n} {state.conv.sample_id}",
        )
        for _, qa in items:
            evaluated[str(qa.category)] = evaluated.get(str(qa.category), 0) + 1
    query_s = time.perf_counter() - query_began
    show.end(f"[locomo] scored {len(scores.questions)} questions in {query_s:.1f} s")
    service.flush()
    accessed = (
        daemon.db.reader()
        .execute("SELECT COUNT(*) FROM memories WHERE access_count > 0")
        .fetchone()[0]
    )

    dropped = [
        f"{s.conv.sample_id}:{bad}" for s in ingested for qa in s.conv.qa
        for bad in qa.dropped_evidence
    ]  # fmt: skip
    cfg = daemon.config
    provider = daemon.provider
    return {
        "_config": {
            "embedding_model": provider.model_id if provider is not None else None,
            "embedding_dimensions": service.core.index.dimensions if service.core.index else None,
            "search": cfg.search.model_dump(),
            "sparse": cfg.sparse.model_dump(),
            "recall_min_score": 0.0,
            "access_tracking": "live (recall updates access_count / recall_count /"
            " last_accessed); reset before each ablation variant",
        },
        "data": {
            "conversations": len(conversations),
            "sessions": sum(len(c.sessions) for c in conversations),
            "turns": turns,
            "memories": memories,
            "deduplicated_turns": sum(s.deduplicated for s in ingested),
            "questions_total": sum(len(c.qa) for c in conversations),
            "questions_evaluated": len(scores.questions),
            "questions_evaluated_by_category": dict(sorted(evaluated.items())),
            "questions_overall": sum(
                v for c, v in evaluated.items() if int(c) in OVERALL_CATEGORIES
            ),
            "questions_skipped_no_evidence": skipped_questions,
            "evidence_ids_dropped": len(dropped),
            "evidence_ids_dropped_list": dropped,
        },
        "systems": {s: _summarize(scores.by_system[s]) for s in SYSTEMS},
        "by_conversation": {s: _by_conversation(scores, s) for s in SYSTEMS},
        "latency_ms": {
            "mnemonist": latency_summary(scores.latency["mnemonist"]),
            "bm25": latency_summary(scores.latency["bm25"]),
            "dense_search_only": latency_summary(scores.latency["dense"]),
            "note": "mnemonist = service.reads.recall (query embedding included, LRU-cached per "
            "query text); bm25 = keyword leg alone; dense = index search with the query "
            "vector already cached",
        },
        "ingest": {
            "memories_per_s": round(turns / ingest_s, 1) if ingest_s else None,
            "remember_s": round(ingest_s, 2),
            "embedding_wait_after_ingest_s": round(embed_wait_s, 2),
            "embedding_done_after_start_s": round(embed_total_s, 2),
            "embedding_complete": bool(embedded_ok) and vectors >= memories,
            "vectors": vectors,
        },
        "access": {"memories_with_recorded_access": accessed},
        "recall_degraded_to_keyword": scores.degraded,
        "foreign_results": {
            system: sum(q["foreign_results"][system] for q in scores.questions)
            for system in SYSTEMS
        },
        "query_phase_s": round(query_s, 2),
        "questions": scores.questions,
        "_ingested": ingested,
    }
