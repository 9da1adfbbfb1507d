"""`mnemonist bench sessions`: LoCoMo conversations replayed as Claude Code sessions.

Each LoCoMo session becomes one agent session: a real-format Claude Code transcript (JSONL
`user` lines with string content for the first speaker, `assistant` lines with text blocks for
the other, each with its own timestamp, `sessionId`, `cwd` and `uuid`), ended through the
session-end hook, in order, and nothing else stored. Then every question is asked through
recall in that conversation's project. The same questions are asked of the same turns
remembered one by one (`bench locomo`'s direct ingest) in a second daemon in the same run.

Scoring is in turn space: a result holding several turns takes one of the k slots per turn it
holds (fair against one memory per turn), and a result holding no turn (a curated memory)
takes one slot. With `--curated`, LoCoMo's observations (facts, each citing the turn it came
from) are also remembered as curated memories, and "curated R@k" counts the questions whose
cited observation is in the top k: how much session turns crowd curated memories out.

Only identifiers and numbers are written: no text of the data set leaves the caller's file.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mnemonist.bench.ablation import Variant, applied
from mnemonist.bench.locomo import (
    OVERALL_CATEGORIES,
    _code_state,
    _evaluable,
    _file_sha256,
    _ingest,
    _Progress,
    _summarize,
    write_files,
)
from mnemonist.bench.locomo_data import Conversation, Session, load_locomo
from mnemonist.bench.metrics import latency_summary, question_metrics
from mnemonist.daemon import open_memory
from mnemonist.model.hooks import SessionEndRequest
from mnemonist.model.requests import RecallRequest, RememberRequest
from mnemonist.store import session_turns

MAX_DEPTH = 200


@dataclass
class Arm:
    """One way of getting the conversations in: what each memory holds, per conversation."""

    name: str
    holds: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # conv -> id -> dias
    curated: dict[str, dict[str, str]] = field(default_factory=dict)  # conv -> id -> dia
    memories: int = 0
    hook_s: list[float] = field(default_factory=list)


def session_start(session: Session, index: int) -> datetime:
    return session.date_time or datetime(2023, 1, 1, tzinfo=UTC) + timedelta(days=index)


def transcript_lines(conv: Conversation, session: Session, session_id: str, cwd: str,
                     index: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Claude Code JSONL lines of one LoCoMo session, and uuid -> dia_id."""
    first = conv.speakers[0] if conv.speakers else None
    start = session_start(session, index)
    lines: list[dict[str, Any]] = []
    uuids: dict[str, str] = {}
    parent = None
    for i, turn in enumerate(session.turns):
        uuid = f"{session_id}-{i:04d}"
        uuids[uuid] = turn.dia_id
        stamp = (start + timedelta(seconds=30 * i)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        if turn.speaker == first:
            message: dict[str, Any] = {"role": "user", "content": turn.content}
            kind = "user"
        else:
            message = {"id": f"msg_{uuid}", "type": "message", "role": "assistant",
                       "model": "claude-sonnet-4-5",
                       "content": [{"type": "text", "text": turn.content}]}
            kind = "assistant"
        lines.append({"parentUuid": parent, "isSidechain": False, "userType": "external",
                      "cwd": cwd, "sessionId": session_id, "version": "2.0.14",
                      "type": kind, "message": message, "uuid": uuid, "timestamp": stamp})
        parent = uuid
    return lines, uuids


def _end_sessions(service: Any, conversations: list[Conversation], folder: Path,
                  show: _Progress) -> Arm:
    arm = Arm("sessions")
    keys: dict[str, dict[str, str]] = {}  # conv -> idempotency key -> dia
    for n, conv in enumerate(conversations, start=1):
        cwd = folder / "work" / conv.sample_id
        cwd.mkdir(parents=True, exist_ok=True)
        keys[conv.sample_id] = {}
        for i, session in enumerate(conv.sessions):
            sid = f"{conv.sample_id}-session-{session.number}"
            lines, uuids = transcript_lines(conv, session, sid, str(cwd), i)
            path = folder / "transcripts" / conv.sample_id / f"{sid}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
            started = time.perf_counter()
            service.hooks.hook_session_end(SessionEndRequest(
                session_id=sid, transcript_path=str(path), cwd=str(cwd),
                harness="claude-code", reason="prompt_input_exit"))
            arm.hook_s.append(time.perf_counter() - started)
            for uuid, dia in uuids.items():
                keys[conv.sample_id][f"{sid}/turn:{uuid}"] = dia
            show.show(f"[sessions] conversation {n}/{len(conversations)} ended {i + 1}/"
                      f"{len(conv.sessions)} sessions")
    show.end(f"[sessions] {sum(len(c.sessions) for c in conversations)} sessions ended;"
             " waiting for the turns and their embeddings")
    service.flush(timeout=3600.0)
    conn = service.core.db.reader()
    for conv in conversations:
        holds: dict[str, list[str]] = {}
        rows = conn.execute(
            "SELECT id, idempotency_key FROM memories WHERE project = ? AND source_type = ?"
            " AND is_deleted = 0", (conv.sample_id, session_turns.SOURCE_TYPE))
        order = {k: i for i, k in enumerate(keys[conv.sample_id])}
        ordered = list(keys[conv.sample_id])
        for memory_id, key in rows:
            base, _, count = (key or "").partition("+")  # a group of messages: "key+n"
            if base not in order:
                holds[memory_id] = []
                continue
            i = order[base]
            n = int(count) if count.isdigit() else 1
            holds[memory_id] = [keys[conv.sample_id][k] for k in ordered[i:i + n]]
        found = {d for ds in holds.values() for d in ds}
        for t in conv.turns():  # a turn deduplicated into an identical one of its session
            if t.dia_id not in found:
                row = conn.execute(
                    "SELECT m.id FROM memories m WHERE m.project = ? AND m.source_id = ? AND"
                    " m.content = ? AND m.is_deleted = 0",
                    (conv.sample_id, f"{conv.sample_id}-session-{t.session}", t.content),
                ).fetchone()
                if row:
                    holds.setdefault(row[0], []).append(t.dia_id)
        arm.holds[conv.sample_id] = holds
        arm.memories += len(holds)
    return arm


def _direct(service: Any, conversations: list[Conversation], show: _Progress) -> Arm:
    arm = Arm("direct")
    for n, conv in enumerate(conversations, start=1):
        state, _ = _ingest(service, conv, show, f"[direct] conversation {n}/{len(conversations)}")
        holds: dict[str, list[str]] = {}
        for dia, memory_id in state.dia_to_id.items():
            holds.setdefault(memory_id, []).append(dia)
        arm.holds[conv.sample_id] = holds
        arm.memories += len(holds)
    show.end("[direct] ingested; waiting for embeddings")
    service.flush(timeout=3600.0)
    return arm


def _remember_observations(service: Any, raw: list[dict[str, Any]],
                           conversations: list[Conversation], arm: Arm) -> int:
    """LoCoMo's observations as curated memories (remember), each citing one turn."""
    by_id = {str(s.get("sample_id")): s for s in raw}
    count = 0
    for conv in conversations:
        known = {t.dia_id for t in conv.turns()}
        curated = arm.curated.setdefault(conv.sample_id, {})
        observations = by_id.get(conv.sample_id, {}).get("observation") or {}
        for per_session in observations.values():
            for speaker, items in (per_session or {}).items():
                for item in items or []:
                    if not (isinstance(item, list) and len(item) == 2):
                        continue
                    text, dia = str(item[0]), str(item[1]).strip()
                    if dia not in known or not text.strip():
                        continue
                    out = service.memories.remember(RememberRequest(
                        content=text, project=conv.sample_id, who=speaker, type="fact"))
                    curated[out["id"]] = dia
                    count += 1
    service.flush(timeout=3600.0)
    return count


def _score(service: Any, arm: Arm, conversations: list[Conversation],
           limit_questions: int | None, ks: Sequence[int], depth: int,
           show: _Progress) -> dict[str, Any]:
    rows: list[tuple[int, dict[str, float]]] = []
    latency: list[float] = []
    for n, conv in enumerate(conversations, start=1):
        items, _ = _evaluable(conv)
        if limit_questions is not None:
            items = items[:limit_questions]
        holds = arm.holds[conv.sample_id]
        curated = arm.curated.get(conv.sample_id, {})
        session_of = {dia: {s} for dia, s in conv.session_of().items()}
        for _, qa in items:
            started = time.perf_counter()
            out = service.reads.recall(RecallRequest(query=qa.question, limit=depth,
                                                     project=conv.sample_id, min_score=0.0))
            latency.append(time.perf_counter() - started)
            ranked_ids = [r["id"] for r in out["results"]]
            expanded: list[str] = []
            for memory_id in ranked_ids:
                expanded += holds.get(memory_id) or [f"other:{memory_id}"]
            relevant = set(qa.evidence)
            sessions = {s for d in qa.evidence for s in session_of.get(d, set())}
            metrics = question_metrics(expanded, relevant, session_of, sessions, ks)
            cover = {mid for mid, dia in curated.items() if dia in relevant}
            if curated:
                alone = [m for m in ranked_ids if m in curated]  # as if nothing else were stored
                useful = {m for m in ranked_ids if set(holds.get(m) or ()) & relevant} | cover
                for k in ks:  # either kind of memory answers the question
                    metrics[f"answer@{k}"] = float(bool(useful & set(ranked_ids[:k])))
                    metrics[f"curated@{k}"] = float(bool(cover & set(ranked_ids[:k]))) \
                        if cover else float("nan")
                    metrics[f"curated_alone@{k}"] = float(bool(cover & set(alone[:k]))) \
                        if cover else float("nan")
            rows.append((qa.category, metrics))
        show.show(f"[{arm.name}] scored conversation {n}/{len(conversations)}")
    summary = _summarize([(c, {k: v for k, v in m.items()
                               if not k.startswith(("curated", "answer"))}) for c, m in rows])
    if any(k.startswith("answer") for _, m in rows for k in m):
        overall = [m for c, m in rows if c in OVERALL_CATEGORIES]
        summary["answer"] = {f"answer@{k}": round(sum(m[f"answer@{k}"] for m in overall)
                                                  / len(overall), 4) for k in ks}
    if any(k.startswith("curated") for _, m in rows for k in m):
        covered = [m for c, m in rows if c in OVERALL_CATEGORIES
                   and m.get(f"curated@{ks[0]}") == m.get(f"curated@{ks[0]}")]  # not NaN
        means = {f"{name}@{k}": round(sum(m[f"{name}@{k}"] for m in covered) / len(covered), 4)
                 for name in ("curated", "curated_alone") for k in ks} if covered else {}
        summary["curated"] = {"n": len(covered), **means}
    summary["recall_latency_ms"] = latency_summary(latency)
    return summary


def run_sessions(
    data_path: str | Path,
    *,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    ks: Sequence[int] = (5, 10, 20),
    overrides: dict[str, Any] | None = None,
    progress: bool = True,
    out_dir: str | Path | None = "bench-results",
    direct: bool = True,
    curated: bool = False,
    variants: Sequence[Variant] = (),
) -> dict[str, Any]:
    """Run the benchmark; write `<out_dir>/sessions-<timestamp>.{json,md}` unless out_dir is
    None, and return the JSON-able result."""
    ks = tuple(sorted({int(k) for k in ks} | {5, 10}))
    depth = min(MAX_DEPTH, max(ks))
    data_path = Path(data_path)
    conversations = load_locomo(data_path)
    raw = json.loads(data_path.read_text(encoding="utf-8"))
    raw = raw if isinstance(raw, list) else [raw]
    if limit_conversations is not None:
        conversations = conversations[:limit_conversations]
    started_at = datetime.now(UTC)
    show = _Progress(progress)
    result: dict[str, Any] = {"arms": {}}
    with tempfile.TemporaryDirectory(prefix="mnemonist-bench-sessions-") as tmp:
        folder = Path(tmp)
        conf = {**(overrides or {})}
        hooks = dict(conf.get("hooks") or {})
        hooks["transcriptRoots"] = [*hooks.get("transcriptRoots", []), str(folder)]
        conf["hooks"] = hooks
        began = time.perf_counter()
        with open_memory(folder / "home-sessions", conf) as daemon:
            service = daemon.service
            arm = _end_sessions(service, conversations, folder, show)
            ingest_s = time.perf_counter() - began
            if curated:
                result["curated_memories"] = _remember_observations(service, raw, conversations,
                                                                    arm)
            result["arms"]["sessions"] = _score(service, arm, conversations, limit_questions,
                                                ks, depth, show)
            conn = daemon.db.reader()
            gate = {r[0]: r[1] for r in conn.execute(
                "SELECT status, COUNT(*) FROM session_ingest GROUP BY status")}
            result["sessions"] = {
                "ended": len(arm.hook_s), "memories": arm.memories,
                "by_status": gate,
                "hook_ms": latency_summary(arm.hook_s),
                "ingest_and_embed_s": round(ingest_s, 1),
                "summary_jobs_pending": conn.execute(
                    "SELECT COUNT(*) FROM memory_jobs WHERE job_type = 'summary' AND status"
                    " IN ('pending', 'leased')").fetchone()[0],
            }
            result["ablations"] = []
            for variant in variants:
                with applied(service, variant):
                    scored = _score(service, arm, conversations, limit_questions, ks, depth,
                                    show)
                result["ablations"].append({"name": variant.name,
                                            "settings": dict(variant.settings), **scored})
        if direct:
            with open_memory(folder / "home-direct", overrides) as daemon:
                arm_d = _direct(daemon.service, conversations, show)
                if curated:
                    _remember_observations(daemon.service, raw, conversations, arm_d)
                result["arms"]["direct"] = _score(daemon.service, arm_d, conversations,
                                                  limit_questions, ks, depth, show)
    show.end("[sessions] done")
    result["config"] = {
        "data": str(data_path), "data_sha256": _file_sha256(data_path),
        "conversations": len(conversations), "limit_questions": limit_questions,
        "ks": list(ks), "overrides": overrides or {}, "curated": curated,
        "started_at": started_at.isoformat(timespec="seconds"), **_code_state(),
    }
    result = {"config": result.pop("config"), **result}
    if out_dir is not None:
        write_files(result, Path(out_dir), "sessions", started_at, render_markdown)
    return result


def _row(name: str, s: dict[str, Any], ks: Sequence[int]) -> str:
    o = s["overall"]
    cells = [f"{o.get(f'recall@{k}', 0):.3f}" for k in ks]
    cells += [f"{o.get('mrr', 0):.3f}", f"{o.get('session_any@5', 0):.3f}"]
    cur = s.get("curated", {})
    cells += [f"{cur[f'curated@{k}']:.3f} (alone {cur[f'curated_alone@{k}']:.3f})"
              if f"curated@{k}" in cur else "–" for k in (5, 10)]
    ans = s.get("answer", {})
    cells += [f"{ans[f'answer@{k}']:.3f}" if f"answer@{k}" in ans else "–" for k in (5, 10)]
    return f"| {name} | " + " | ".join(cells) + " |"


def render_markdown(result: dict[str, Any]) -> str:
    cfg, ks = result["config"], result["config"]["ks"]
    s = result["sessions"]
    lines = [
        f"# LoCoMo as agent sessions — {Path(cfg['data']).name}", "",
        f"{cfg['started_at']} · commit {(cfg.get('git_commit') or 'unknown')[:10]} · "
        f"{cfg['conversations']} conversations · {s['ended']} sessions ended through the"
        f" session-end hook → {s['memories']} turn memories; session status {s['by_status']};"
        f" hook time p50 {s['hook_ms'].get('p50')} ms, max {s['hook_ms'].get('max')} ms;"
        f" {s['summary_jobs_pending']} summary jobs pending.", "",
        f"Turn-level, categories 1–4 ({result['arms']['sessions']['overall']['n']} questions)",
        "",
        "| ingest | " + " | ".join(f"R@{k}" for k in ks) + " | MRR | sess. any@5 |"
        " curated@5 | curated@10 | answered@5 | answered@10 |",
        "|---|" + "---|" * (len(ks) + 6),
    ]
    for name, arm in result["arms"].items():
        lines.append(_row(name, arm, ks))
    for a in result.get("ablations", []):
        lines.append(_row(f"sessions, {a['name']}", a, ks))
    lines += ["", "Recall@10 by category (sessions / direct):", ""]
    sess, direct = result["arms"]["sessions"], result["arms"].get("direct")
    for cat, info in sess["by_category"].items():
        other = direct["by_category"].get(cat, {}).get("recall@10") if direct else None
        lines.append(f"- {cat} {info['name']} (n={info['n']}): {info.get('recall@10', 0):.3f}"
                     + (f" / {other:.3f}" if other is not None else ""))
    return "\n".join(lines) + "\n"
