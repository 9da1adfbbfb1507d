"""`mnemonist bench feedback`: does the memory get better where it was told what helped, and
no worse anywhere else? And does inverted feedback leave it as it was?

On LoCoMo-format data (one memory per turn, a project per conversation, as `bench locomo`):
half of each conversation's questions (every other one) get feedback, the rest do not. Before
any feedback, the half with feedback is asked in other words (`paraphrase`: the same intent,
as a user asks it again a week later) and the rest as written; Recall@5 / @10 of both. Then
each feedback question is asked as written and its five best results are rated the way an
agent would: helpful when the result is an evidence turn, unhelpful when not (`honest`), or
the opposite (`inverted`: a home whose feedback is wrong). The home's ranker is refitted
(`POST /api/predictor/train`) and both halves are asked again as before.

Both modes run on the same memories: between them every pair and the home's ranker are
removed. With `--held-out-models`, each conversation is ranked by a model fitted without it.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemonist.bench.locomo import _evaluable, _ingest, _Progress, held_out_models
from mnemonist.bench.locomo_data import OVERALL_CATEGORIES, load_locomo
from mnemonist.bench.metrics import recall_at
from mnemonist.daemon import open_memory
from mnemonist.model.graph import FeedbackRequest
from mnemonist.model.requests import RecallRequest

RATED = 5  # results rated per feedback question
KS = (5, 10)
LEADS = ("Remind me, ", "Quick question: ", "Do you remember: ", "I forgot, ")
SWAPS = {
    "like": "enjoy", "likes": "enjoys", "liked": "enjoyed", "went": "headed", "go": "head",
    "buy": "purchase", "bought": "purchased", "think": "feel", "favorite": "preferred",
    "start": "begin", "started": "began", "talk": "speak", "talked": "spoke", "big": "large",
    "help": "assist", "helped": "assisted", "kind": "type", "plan": "intend", "planning":
    "intending", "get": "obtain", "got": "received", "make": "create", "made": "created",
}


def paraphrase(question: str) -> str:
    """The same question in other words: a lead-in chosen by the question's hash, a few
    everyday words swapped for synonyms, the question mark dropped."""
    lead = LEADS[int(hashlib.sha256(question.encode()).hexdigest(), 16) % len(LEADS)]
    words = re.split(r"(\W+)", question.strip().rstrip("?"))
    swapped = "".join(SWAPS.get(w.lower(), w) if w.isalpha() else w for w in words)
    return lead + swapped[:1].lower() + swapped[1:]


def _recall_at(service: Any, query: str, project: str, relevant: set[str]) -> list[float]:
    got = service.reads.recall(RecallRequest(query=query, project=project, limit=max(KS),
                                             min_relevance=0))
    ranked = list(dict.fromkeys(r["id"] for r in got["results"]))
    return [recall_at(ranked, relevant, k) for k in KS]


def _measure(service: Any, items: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for half in ("repeated", "elsewhere"):
        rows = [_recall_at(service, q["asked"], q["project"], q["relevant"])
                for q in items if q["half"] == half]
        out[half] = {f"recall@{k}": round(float(np.mean([r[i] for r in rows])), 4)
                     for i, k in enumerate(KS)}
        out[half]["questions"] = len(rows)
    return out


def _rate(service: Any, items: list[dict[str, Any]], inverted: bool) -> int:
    """Each feedback question is a session of its own: asked, its results rated, then the
    session ends (the learning pass a harness's session-end hook runs)."""
    ratings = 0
    run = f"{time.time_ns()}"
    for n, q in enumerate(items):
        if q["half"] != "repeated":
            continue
        session = f"bench-feedback-{run}-{n}"
        got = service.reads.recall(RecallRequest(query=q["question"], project=q["project"],
                                                 limit=RATED, min_relevance=0))
        for r in got["results"][:RATED]:
            helpful = (r["id"] in q["relevant"]) != inverted
            service.feedback.memory_feedback(r["id"], FeedbackRequest(
                helpful=helpful, query=q["question"], session_key=session))
            ratings += 1
        service.feedback.session_feedback(session)
    return ratings


def _forget_feedback(service: Any) -> None:
    with service.core.db.write_tx() as conn:
        conn.execute("DELETE FROM predictor_pairs")
        conn.execute("DELETE FROM predictor_state")
        conn.execute("DELETE FROM memory_feedback")
        conn.execute("DELETE FROM session_scores")
        conn.execute("DELETE FROM entity_co_use")
        conn.execute("DELETE FROM entity_use")
        conn.execute("DELETE FROM relations WHERE reason = 'co-use'")
        conn.execute("DELETE FROM graph_state WHERE key = 'co_use'")
    service.core.ranker.forget()


def _mode(service: Any, items: list[dict[str, Any]], inverted: bool) -> dict[str, Any]:
    before = _measure(service, items)
    started = time.perf_counter()
    ratings = _rate(service, items, inverted)
    trained = service.feedback.predictor_train()
    after = _measure(service, items)
    delta = {half: {k: round(after[half][k] - before[half][k], 4)
                    for k in before[half] if k.startswith("recall")} for half in before}
    return {"ratings": ratings, "before": before, "after": after, "delta": delta,
            "check": trained["check"], "ranker": trained["status"]["ranker"],
            "pairs": trained["status"]["pairs"],
            "rate_and_train_s": round(time.perf_counter() - started, 1)}


def run_feedback(data_path: Path, *, limit_conversations: int | None = None,
                 limit_questions: int | None = None, held_out: Path | None = None,
                 progress: bool = True, overrides: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    conversations = load_locomo(data_path)[:limit_conversations]
    models = held_out_models(held_out, conversations) if held_out is not None else None
    show = _Progress(progress)
    with tempfile.TemporaryDirectory(prefix="mnemonist-feedback-") as home:
        daemon = open_memory(home, overrides)
        try:
            service = daemon.service
            states = [_ingest(service, c, show, f"[feedback] {c.sample_id}")[0]
                      for c in conversations]
            service.flush(timeout=3600.0)
            items = _items(states, limit_questions)
            report: dict[str, Any] = {"data": str(data_path), "questions": len(items),
                                      "overrides": overrides or {},
                                      "held_out_models": str(held_out) if held_out else None,
                                      "paraphrase_cosine": _cosines(service, items)}
            for name, inverted in (("honest", False), ("inverted", True)):
                _forget_feedback(service)
                show.show(f"[feedback] {name}", force=True)
                report[name] = _per_conversation(service, items, inverted, models)
            show.end(f"[feedback] {len(items)} questions")
        finally:
            daemon.stop()
    return report


def _per_conversation(service: Any, items: list[dict[str, Any]], inverted: bool,
                      models: dict[str, Any] | None) -> dict[str, Any]:
    if models is None:
        return _mode(service, items, inverted)
    # one conversation at a time, each ranked by the model that never saw it
    parts = []
    for project in dict.fromkeys(q["project"] for q in items):
        service.core.ranker.shipped = lambda model=models[project]: model
        _forget_feedback(service)
        parts.append(_mode(service, [q for q in items if q["project"] == project], inverted))
    return _combine(parts)


def _combine(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"ratings": sum(p["ratings"] for p in parts), "conversations": len(
        parts), "active": sum(bool(p["check"]["active"]) for p in parts),
        "trusted": sum(bool(p["check"]["trusted"]) for p in parts)}
    for stage in ("before", "after"):
        out[stage] = {}
        for half in ("repeated", "elsewhere"):
            n = sum(p[stage][half]["questions"] for p in parts)
            out[stage][half] = {"questions": n, **{
                f"recall@{k}": round(sum(p[stage][half][f"recall@{k}"] *
                                         p[stage][half]["questions"] for p in parts) / n, 4)
                for k in KS}}
    out["delta"] = {half: {k: round(out["after"][half][k] - out["before"][half][k], 4)
                           for k in out["before"][half] if k.startswith("recall")}
                    for half in out["before"]}
    return out


def _items(states: list[Any], limit_questions: int | None) -> list[dict[str, Any]]:
    items = []
    for state in states:
        asked, _ = _evaluable(state.conv)
        asked = [(i, qa) for i, qa in asked if qa.category in OVERALL_CATEGORIES]
        for n, (_, qa) in enumerate(asked[:limit_questions]):
            half = "repeated" if n % 2 == 0 else "elsewhere"
            items.append({
                "project": state.conv.sample_id, "question": qa.question, "half": half,
                "asked": paraphrase(qa.question) if half == "repeated" else qa.question,
                "relevant": {state.dia_to_id[d] for d in qa.evidence},
            })
    return items


def _cosines(service: Any, items: list[dict[str, Any]]) -> dict[str, float]:
    """How close each paraphrase is to its question (the feedback paths need
    `predictor.feedback_similarity`)."""
    cos = []
    for q in items:
        if q["half"] == "repeated":
            a, b = service.core.embed_query(q["question"]), service.core.embed_query(q["asked"])
            if a is not None and b is not None:
                cos.append(float(a @ b))
    threshold = service.core.config.predictor.feedback_similarity
    return {"median": round(float(np.median(cos)), 4) if cos else 0.0,
            "share_at_threshold": round(float(np.mean([c >= threshold for c in cos])), 4)
            if cos else 0.0, "threshold": threshold}


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# bench feedback ({report['questions']} questions)", "",
             f"paraphrase cosine median {report['paraphrase_cosine']['median']}, share at the"
             f" threshold {report['paraphrase_cosine']['share_at_threshold']}", "",
             "| mode | half | R@5 before | R@5 after | R@10 before | R@10 after |",
             "|---|---|---|---|---|---|"]
    for mode in ("honest", "inverted"):
        r = report[mode]
        for half in ("repeated", "elsewhere"):
            b, a = r["before"][half], r["after"][half]
            lines.append(f"| {mode} | {half} | {b['recall@5']} | {a['recall@5']} |"
                         f" {b['recall@10']} | {a['recall@10']} |")
    return "\n".join(lines) + "\n"
