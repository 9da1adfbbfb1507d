"""`mnemonist bench relevance`: fit the calibrated relevance model (search/relevance.py).

Every turn of a LoCoMo-format file is remembered through the service (one memory per turn,
`project` = the conversation, as `bench locomo` does); every question with evidence is
searched as recall searches it, and each of its best hits becomes one row of features with
the label "is an evidence turn". Off-topic prompts (`bench/offtopic_prompts.py`, coding
requests that no chat answers) are searched in every conversation and give rows that are all
negatives, so that "nothing here is relevant" is learned too. Only the `FIT` half of those
prompts is fitted on; the `HELD` half only measures.

Two parts: whether the store answers the query at all, a logistic regression (Newton's method
with an L2 penalty) on the query's standardised features, one row per query; and whether a hit
is an answer, gradient-boosted trees (search/boosting.py) on every hit recall's learned ranker
reorders (`predictor.depth`), which are the ranker. Cross-validation leaves one conversation
out at a time: every figure reported, the ranking's recall among them, is measured on a
conversation the model did not see; `--write-folds` keeps those models, so that
`bench locomo --held-out-models` measures the same through the API. The file written carries
the trees, the weights, the standardisation, the figures and a checksum.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from mnemonist.bench.agent_memory_set import MEMORIES, QUESTIONS
from mnemonist.bench.locomo import _ingest, _Progress
from mnemonist.bench.locomo_data import OVERALL_CATEGORIES, load_locomo
from mnemonist.bench.offtopic_prompts import FIT, NONSENSE, PROMPTS
from mnemonist.daemon import open_memory
from mnemonist.model.config_predictor import PredictorConfig
from mnemonist.model.requests import RecallFilters, RememberRequest
from mnemonist.search.boosting import Boosting, fit_trees
from mnemonist.search.relevance import (
    FEATURES,
    QUERY_COLUMNS,
    QUERY_FEATURES,
    Logistic,
    RelevanceModel,
    choose,
)

#: hits per query that get a row: every candidate the learned ranker reorders
DEPTH = PredictorConfig().depth
FIT_DEPTH = 10  # the head: calibration and the hooks' figures read this many
BOOSTING = Boosting()
#: the agent-memory set is the only data from the kind of store coding agents keep (short
#: statements, a few hundred memories): its 33 questions count as 330, so that the trees learn
#: what an answer looks like there as well as in a chat log (without it, an exact restatement
#: in a store of four memories got relevance 0.19; with it 0.40, and LoCoMo lost nothing)
AGENT_WEIGHT = 10.0
LOG_RANK = FEATURES.index("log_rank")
L2 = 1.0
AGENT_PROJECT = "agent-memory-bench"


@dataclass
class QueryRows:
    conversation: str
    kind: str  # "question" | "agent" | "offtopic" | "nonsense"
    category: int  # LoCoMo category; 0 for off-topic prompts
    fit: bool  # fitted on (off-topic prompts of the HELD half are only measured)
    x: np.ndarray  # (hits, features)
    y: np.ndarray  # (hits,) bool: the hit is an evidence turn
    relevant: int  # evidence memories of the question
    p: np.ndarray | None = None  # cross-validated relevance
    answerable: float = 0.0  # cross-validated P(the store answers the query)
    rank: np.ndarray | None = None  # cross-validated ranker probability (the order)

    def order(self) -> np.ndarray:
        """The rows in the order recall would return them: by the cross-validated ranker."""
        assert self.rank is not None
        return np.argsort(-self.rank, kind="stable")

    def fused(self) -> np.ndarray:
        """The rows in the fused score's order (the ranker off)."""
        return np.argsort(self.x[:, LOG_RANK], kind="stable")


def collect(service: Any, data_path: Path, progress: _Progress,
            limit_conversations: int | None = None) -> list[QueryRows]:
    conversations = load_locomo(data_path)[:limit_conversations]
    fitted = set(FIT)
    rows: list[QueryRows] = []
    states = []
    for conv in conversations:
        state, _ = _ingest(service, conv, progress, f"[relevance] {conv.sample_id}")
        states.append(state)
    service.flush(timeout=3600.0)
    conn = service.core.db.reader()
    for state in states:
        sid = state.conv.sample_id
        scope = RecallFilters(project=sid)
        for qa in state.conv.qa:
            if not qa.evidence or not qa.question.strip():
                continue
            relevant = {state.dia_to_id[d] for d in qa.evidence}
            out = service.core.searcher.search(conn, qa.question, scope, DEPTH, 0.0)
            if out.features is None:
                continue
            y = np.array([h.memory.id in relevant for h in out.hits], dtype=bool)
            rows.append(QueryRows(sid, "question", qa.category, True, out.features, y,
                                  len(relevant)))
        others = [("offtopic", p, p in fitted) for p in PROMPTS]
        others += [("nonsense", p, i % 2 == 0) for i, p in enumerate(NONSENSE)]
        for kind, prompt, fit in others:
            out = service.core.searcher.search(conn, prompt, scope, DEPTH, 0.0)
            if out.features is None:
                continue
            rows.append(QueryRows(sid, kind, 0, fit, out.features,
                                  np.zeros(len(out.hits), dtype=bool), 0))
        progress.show(f"[relevance] searched {sid}", force=True)
    rows += agent_rows(service)
    progress.end(f"[relevance] {len(rows)} queries")
    return rows


def agent_rows(service: Any) -> list[QueryRows]:
    """The agent-memory set (`bench/agent_memory_set.py`: a coding agent's memories, asked
    about in other words) in a project of its own: the kind of store the hooks meet, where
    a close vector match alone often is the answer. Off-topic prompts are not asked there:
    a coding request may well be about a coding team's memories."""
    ids = {}
    for key, (kind, content) in MEMORIES.items():
        ids[key] = service.memories.remember(RememberRequest(content=content, type=kind,
                                                             project=AGENT_PROJECT))["id"]
    service.flush(timeout=600.0)
    conn = service.core.db.reader()
    scope = RecallFilters(project=AGENT_PROJECT)
    rows = []
    for i, (question, keys) in enumerate(QUESTIONS):
        relevant = {ids[k] for k in keys}
        out = service.core.searcher.search(conn, question, scope, DEPTH, 0.0)
        if out.features is not None:
            y = np.array([h.memory.id in relevant for h in out.hits], dtype=bool)
            # two halves, so that cross-validation measures each on a model fitted on
            # the other half (and on LoCoMo)
            rows.append(QueryRows(f"{AGENT_PROJECT}#{i % 2}", "agent", 0, True,
                                  out.features, y, len(relevant)))
    return rows


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2, iters: int = 60) -> Logistic:
    """Logistic regression by Newton's method on standardised features (bias unpenalised)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.r_[np.full(z.shape[1] - 1, l2), 0.0]
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -40, 40)))
        grad = z.T @ (p - y) + penalty * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Logistic(w[:-1], float(w[-1]), mean, scale)


def fit_model(rows: Sequence[QueryRows]) -> RelevanceModel:
    """The per-hit part on the questions (each has an answer in the store); the answerable
    part on one row per query: questions 1, off-topic prompts and strings stored nowhere 0."""
    answered = [r for r in rows if r.kind in ("question", "agent")]
    weight = np.concatenate([np.full(min(len(r.y), DEPTH), AGENT_WEIGHT if r.kind == "agent"
                                     else 1.0) for r in answered])
    hit = fit_trees(*_stack(answered, DEPTH), BOOSTING, weight=weight)
    queries = np.vstack([r.x[0, QUERY_COLUMNS] for r in rows])
    labels = np.array([1.0 if r.kind in ("question", "agent") else 0.0 for r in rows])
    return RelevanceModel(hit, fit_logistic(queries, labels))


def _stack(rows: Sequence[QueryRows], depth: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.vstack([r.x[:depth] for r in rows])
    y = np.concatenate([r.y[:depth] for r in rows]).astype(np.float64)
    return x, y


def cross_validate(rows: list[QueryRows]) -> dict[str, RelevanceModel]:
    """Each row's `p` and `rank` from a model fitted without its conversation; the models by
    the conversation each left out."""
    folds: dict[str, RelevanceModel] = {}
    for conv in sorted({r.conversation for r in rows}):
        train = [r for r in rows if r.conversation != conv and r.fit]
        model = fit_model(train)
        folds[conv] = model
        for r in rows:
            if r.conversation == conv:
                r.p = model.predict(r.x)
                r.rank = model.hit_of(r.x)
                r.answerable = model.answerable_of(r.x)
    return folds


def calibration(rows: Sequence[QueryRows]) -> list[dict[str, float]]:
    """Predicted against observed, in bins of predicted relevance (the first 10 hits)."""
    p = np.concatenate([r.p[r.order()[:FIT_DEPTH]] for r in rows if r.p is not None])
    y = np.concatenate([r.y[r.order()[:FIT_DEPTH]] for r in rows if r.p is not None])
    out = []
    edges = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.01)
    for lo, hi in itertools.pairwise(edges):
        inside = (p >= lo) & (p < hi)
        if inside.any():
            out.append({"from": lo, "to": min(hi, 1.0), "n": int(inside.sum()),
                        "predicted": round(float(p[inside].mean()), 4),
                        "observed": round(float(y[inside].mean()), 4)})
    return out


def _top(k: int) -> Callable[[np.ndarray], list[int]]:
    """A selection rule: the `k` most probable."""
    return lambda p: [int(i) for i in np.argsort(-p, kind="stable")[:k]]


def selection(rows: Sequence[QueryRows], pick: Callable[[np.ndarray], list[int]],
              kind: str = "question") -> dict[str, float]:
    """What a selection rule hands over: questions holding evidence (hit), memories per
    question, the share of them that are evidence (precision), off-topic prompts given any."""
    questions = [r for r in rows if r.kind == kind
                 and (kind != "question" or r.category in OVERALL_CATEGORIES)]
    offtopic = [r for r in rows if r.kind == "offtopic" and not r.fit]
    chosen = [pick(r.p) for r in questions if r.p is not None]
    given = sum(len(c) for c in chosen)
    good = sum(int(r.y[c].sum()) for r, c in zip(questions, chosen, strict=True) if c)
    return {
        "hit": round(float(np.mean([bool(c) and bool(r.y[c].any())
                                    for r, c in zip(questions, chosen, strict=True)])), 4),
        "memories_per_question": round(given / max(1, len(chosen)), 3),
        "precision": round(good / max(1, given), 4),
        "offtopic_with_any": round(float(np.mean([bool(pick(r.p)) for r in offtopic
                                                  if r.p is not None])), 4),
    }


def _recall(order: np.ndarray, r: QueryRows, k: int) -> float:
    return float(r.y[order[:k]].sum()) / r.relevant


def _mrr(order: np.ndarray, r: QueryRows) -> float:
    found = np.flatnonzero(r.y[order])
    return 1.0 / (found[0] + 1) if len(found) else 0.0


def ranking(rows: Sequence[QueryRows]) -> dict[str, Any]:
    """Recall@k and MRR of the cross-validated ranker's order against the fused order, over
    the same candidates: LoCoMo's questions (categories 1-4, and each category) and the
    agent-memory set. Evidence beyond the candidates counts as missed in both."""
    def measure(chosen: list[QueryRows]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(chosen)}
        for name, way in (("ranker", QueryRows.order), ("fused", QueryRows.fused)):
            orders = [way(r) for r in chosen]
            out[name] = {
                **{f"recall@{k}": round(float(np.mean([_recall(o, r, k) for o, r in
                                                       zip(orders, chosen, strict=True)])), 4)
                   for k in (5, 10, 20)},
                "mrr": round(float(np.mean([_mrr(o, r) for o, r in
                                            zip(orders, chosen, strict=True)])), 4),
            }
        return out

    questions = [r for r in rows if r.kind == "question" and r.rank is not None]
    report = {"locomo": measure([r for r in questions if r.category in OVERALL_CATEGORIES])}
    for cat in sorted({r.category for r in questions}):
        report[f"locomo_category_{cat}"] = measure([r for r in questions if r.category == cat])
    report["agent_memory"] = measure([r for r in rows if r.kind == "agent"
                                      and r.rank is not None])
    return report


#: the ranker's features by what they read, for `--ablate`
GROUPS: dict[str, tuple[str, ...]] = {
    "legs": ("cos", "vec", "kw", "strength", "coverage", "context_cos", "own_over_context"),
    "fused order": ("score", "rel_top", "log_rank", "cos_place", "kw_place"),
    "source": ("source_hits", "source_best", "source_place", "neighbour"),
    "text": ("asks", "has_number", "has_time"),
    "memory state": ("pinned", "corroboration", "recalls"),
    "query": ("n_terms", "top_cos", "top_strength", "top_coverage", "no_keyword"),
    "intent": tuple(f for f in FEATURES if f.startswith("q_")),
}


def ablations(rows: Sequence[QueryRows]) -> dict[str, Any]:
    """The ranker cross-validated with each group of features held constant (what it adds)."""
    out = {}
    for name, group in GROUPS.items():
        cols = [FEATURES.index(f) for f in group]
        copies = []
        for r in rows:
            x = r.x.copy()
            x[:, cols] = 0.0
            copies.append(QueryRows(r.conversation, r.kind, r.category, r.fit, x, r.y,
                                    r.relevant))
        cross_validate(copies)
        measured = ranking(copies)
        out[name] = {"locomo": measured["locomo"]["ranker"],
                     "agent_memory": measured["agent_memory"]["ranker"]}
    return out


def splits(model: RelevanceModel) -> dict[str, int]:
    """How many of the trees' splits read each feature (the ones read at all)."""
    used = model.hit.features[np.isfinite(model.hit.thresholds)]
    counts = np.bincount(used, minlength=len(FEATURES))
    return {f: int(c) for f, c in zip(FEATURES, counts, strict=True) if c}


def recall_at_10(rows: Sequence[QueryRows], min_answerable: float) -> dict[str, float]:
    """What recall's "nothing relevant, nothing returned" rule costs and gives: R@10 when a
    query whose answerability is below `min_answerable` returns nothing, and the share of
    held-out off-topic prompts and strings stored nowhere that still return anything."""
    out = [float(r.y[r.order()[:10]].sum()) / r.relevant if r.answerable >= min_answerable
           else 0.0
           for r in rows if r.kind == "question" and r.category in OVERALL_CATEGORIES]

    def share(kind: str) -> float:
        held = [r.answerable >= min_answerable for r in rows if r.kind == kind and not r.fit]
        return round(float(np.mean(held)), 4) if held else 0.0

    return {"recall_at_10": round(float(np.mean(out)), 4),
            "nonsense_with_any": share("nonsense"), "offtopic_with_any": share("offtopic")}


def run_relevance_fit(data_path: Path, out_model: Path | None, *,
                      gate: float, marginal: float, cap: int, min_answerable: float,
                      limit_conversations: int | None = None, progress: bool = True,
                      folds_dir: Path | None = None, ablate: bool = False) -> dict[str, Any]:
    """Collect, cross-validate, fit on everything, and write the model (unless out_model is
    None) and each held-out fold's model as `<folds_dir>/<conversation>.json` (when given).
    Returns the report."""
    show = _Progress(progress)
    with tempfile.TemporaryDirectory(prefix="mnemonist-relevance-") as home:
        daemon = open_memory(home)
        try:
            rows = collect(daemon.service, data_path, show, limit_conversations)
        finally:
            daemon.stop()
    folds = cross_validate(rows)

    def pick(p: np.ndarray) -> list[int]:
        return choose(list(p), gate=gate, marginal=marginal, cap=cap)

    final = fit_model([r for r in rows if r.fit])
    report: dict[str, Any] = {
        "data": str(data_path),
        "data_sha256": hashlib.sha256(data_path.read_bytes()).hexdigest(),
        "conversations": sorted({r.conversation for r in rows}),
        "queries": {"questions": sum(r.kind == "question" for r in rows),
                    "offtopic": sum(r.kind == "offtopic" for r in rows)},
        "fitted_rows": {"hit": int(sum(min(DEPTH, len(r.y)) for r in rows
                                       if r.fit and r.kind in ("question", "agent"))),
                        "answerable": sum(r.fit for r in rows)},
        "cross_validation": "leave one conversation out; off-topic figures on held prompts",
        "calibration": calibration([r for r in rows if r.kind == "question"
                                    or not r.fit]),
        "hook_selection": {
            "gate": gate, "marginal": marginal, "cap": cap,
            **selection(rows, pick),
            "agent_memory": selection(rows, pick, "agent"),
        },
        "fixed_top": {str(k): selection(rows, _top(k)) for k in (1, 3, 5)},
        "ranking": ranking(rows),
        "recall_min_answerable": {str(m): recall_at_10(rows, m)
                                  for m in sorted({0.0, 0.01, 0.05, 0.1, min_answerable})},
        "weights": {
            "hit_splits": splits(final),
            "answerable": {f: round(float(w), 4) for f, w in
                           zip(QUERY_FEATURES, final.answerable.weights, strict=True)},
        },
        "fitted_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if ablate:
        report["ablations"] = ablations(rows)
    if out_model is not None:
        meta = {k: report[k] for k in ("data_sha256", "conversations", "fitted_rows",
                                       "cross_validation", "hook_selection", "ranking",
                                       "recall_min_answerable", "fitted_at")}
        out_model.write_text(json.dumps(final.to_json(meta), indent=1) + "\n",
                             encoding="utf-8")
        report["model"] = str(out_model)
    if folds_dir is not None:
        folds_dir.mkdir(parents=True, exist_ok=True)
        for conv, model in folds.items():
            meta = {"left_out": conv, "fitted_at": report["fitted_at"]}
            (folds_dir / f"{conv}.json").write_text(json.dumps(model.to_json(meta)) + "\n",
                                                    encoding="utf-8")
        report["folds"] = str(folds_dir)
    return report
