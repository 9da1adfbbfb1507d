"""The home's own ranker: what its feedback teaches, and the guard that decides whether to use it.

Three steps, each a plain function of the home's training pairs (store/predictor_pairs.py):

1. **Trust.** The shipped ranker is right far more often than not (it was fitted on public
   data and checked on conversations it never saw), so honest feedback mostly agrees with it:
   what it ranks likely is rated helpful more often than what it ranks unlikely. The agreement
   is measured as the AUC of the shipped ranker's probabilities against the pairs' labels.
   Below `min_trust` (0.55) the feedback says the opposite of what the ranker is sure of —
   ratings given by mistake, inverted, or at random — and none of it is used: not for the
   home's trees and not for the feedback paths below. Until each label has a few pairs the
   agreement cannot be measured and nothing is fitted either.
2. **A local ranker in shadow.** From `min_pairs` pairs on, trees are fitted on top of the
   shipped ones (their margin is the start, search/boosting.py) on the pairs not held back.
   One query in four is held back (store/predictor_pairs.held_out): the local ranker is used
   only while its log loss on those is at least `min_gain` below the shipped ranker's, and by
   more than chance (twice the standard error of the per-pair differences), and orders the
   pairs of each held-back query (helped above did not) at least as well. Every
   refit checks again, so it stops being used as soon as it stops beating the shipped one (the
   drift check).
3. **Feedback paths.** A memory rated for a question moves for the same question asked again
   in any words (query cosine ≥ `feedback_similarity`, and the closest of the questions asked
   before): up when it helped, down when it did not (`feedback_paths`), while the feedback is
   trusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from mnemonist.model.config_predictor import PredictorConfig
from mnemonist.search.boosting import Boosting, fit_trees
from mnemonist.search.relevance import RelevanceModel
from mnemonist.search.trees import TreeEnsemble
from mnemonist.store.predictor_pairs import Labelled

#: each label needs this many pairs before agreement (AUC) means anything
MIN_EACH_LABEL = 10


@dataclass(frozen=True)
class Check:
    """What the last look at the home's feedback found (`GET /api/predictor/status`)."""

    pairs: int
    held_out: int
    #: the shipped ranker's agreement with the labels (AUC); None: too few of a label
    agreement: float | None
    trusted: bool
    shipped_loss: float | None = None
    local_loss: float | None = None
    local_trees: int = 0
    active: bool = False
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def auc(p: np.ndarray, y: np.ndarray) -> float | None:
    """The probability that a random positive scores above a random negative (ties half);
    None with fewer than `MIN_EACH_LABEL` of either label."""
    pos, neg = p[y >= 0.5], p[y < 0.5]
    if len(pos) < MIN_EACH_LABEL or len(neg) < MIN_EACH_LABEL:
        return None
    order = np.argsort(np.concatenate([pos, neg]), kind="stable")
    values = np.concatenate([pos, neg])[order]
    ranks = np.empty(len(values))
    i = 0
    while i < len(values):  # average ranks over ties
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ranks[i:j + 1] = (i + j) / 2 + 1
        i = j + 1
    rank_of = np.empty(len(values))
    rank_of[order] = ranks
    pos_ranks = rank_of[:len(pos)].sum()
    return float((pos_ranks - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def row_losses(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each pair's log loss."""
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def _mean(values: np.ndarray, weight: np.ndarray) -> float:
    return float(np.sum(weight * values) / max(weight.sum(), 1e-12))


def _standard_error(values: np.ndarray, weight: np.ndarray) -> float:
    """Of the weighted mean (effective sample size for unequal weights)."""
    mean = _mean(values, weight)
    var = _mean((values - mean) ** 2, weight)
    n_eff = weight.sum() ** 2 / max(float(np.sum(weight ** 2)), 1e-12)
    return float(np.sqrt(var / max(n_eff, 1.0)))


def adapt(shipped: RelevanceModel, data: Labelled, cfg: PredictorConfig
          ) -> tuple[TreeEnsemble | None, Check]:
    """The home's trees (None when none are fitted) and what the guard found."""
    n, held = len(data.y), int(data.held.sum())
    # a memory handed over and never come back to may still have been right: it does not
    # count against the feedback's agreement
    judged = np.asarray([s != "ignored" for s in data.sources], dtype=bool)
    agreement = auc(shipped.hit_of(data.x[judged]), data.y[judged]) if judged.any() else None
    trusted = agreement is None or agreement >= cfg.min_trust
    base = Check(n, held, None if agreement is None else round(agreement, 4), trusted)
    if not trusted:
        return None, _with(base, reason=f"feedback disagrees with the shipped ranker (AUC"
                                        f" {agreement:.3f} < {cfg.min_trust}): not used")
    if not cfg.adapt:
        return None, _with(base, reason="predictor.adapt is off")
    train = ~data.held
    if int(train.sum()) < cfg.min_pairs:
        return None, _with(base, reason=f"{int(train.sum())} of {cfg.min_pairs} training"
                                        " pairs: the shipped ranker alone")
    if agreement is None:
        return None, _with(base, reason="too few pairs of one label to check the feedback")
    start = shipped.hit.margin(data.x[train])
    local = fit_trees(data.x[train], data.y[train],
                      Boosting(trees=cfg.local_trees, depth=shipped.hit.depth,
                               learning_rate=0.1, min_hessian=1.0), start=start,
                      weight=data.weight[train])
    if held < cfg.min_held:
        return local, _with(base, local_trees=local.size,
                            reason=f"{held} of {cfg.min_held} held-back pairs: in shadow")
    x, y, w = data.x[data.held], data.y[data.held], data.weight[data.held]
    p_old, p_new = shipped.hit.predict(x), shipped.hit.extended(local).predict(x)
    old, new = row_losses(p_old, y), row_losses(p_new, y)
    before, after = _mean(old, w), _mean(new, w)
    # better by min_gain, and by more than chance: twice the standard error of the paired
    # per-pair differences (trees fitted on noise gain a little on some held-back sets)
    gain = before - after
    noise = 2.0 * _standard_error(old - new, w)
    # and no worse at what a ranker is for: within each held-back query, a pair that helped
    # above one that did not (a better log loss can come from moving every pair alike)
    keys = [k for k, h in zip(data.queries, data.held, strict=True) if h]
    order_old, order_new = ordered_share(p_old, y, keys), ordered_share(p_new, y, keys)
    active = gain >= max(cfg.min_gain * before, noise) and order_new >= order_old
    reason = (f"held-back log loss {after:.4f} against the shipped ranker's {before:.4f}"
              f" (chance ±{noise:.4f}), pairs in order {order_new:.3f} against"
              f" {order_old:.3f}: " + ("in use" if active else "in shadow"))
    return local, _with(base, shipped_loss=round(before, 4), local_loss=round(after, 4),
                        local_trees=local.size, active=active, reason=reason)


def ordered_share(p: np.ndarray, y: np.ndarray, keys: Sequence[str]) -> float:
    """Within each query, the share of (helped, did not) pairs the probabilities put in that
    order (ties half); 1.0 when no query has both."""
    by_query: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        by_query.setdefault(key, []).append(i)
    right = total = 0.0
    for rows in by_query.values():
        pos = [p[i] for i in rows if y[i] >= 0.5]
        neg = [p[i] for i in rows if y[i] < 0.5]
        for a in pos:
            for b in neg:
                right += 1.0 if a > b else 0.5 if a == b else 0.0
                total += 1.0
    return right / total if total else 1.0


def _with(check: Check, **changes: Any) -> Check:
    return Check(**{**asdict(check), **changes})


#: the ratings of the question asked before that this one is closest to count, and those of
#: questions within this much cosine of it: not those of another question that is merely
#: alike ("when did Ana go to Rome?" after ratings for "when did Ana go to Paris?")
NEAREST_MARGIN = 0.02


def feedback_paths(query_vector: np.ndarray,
                   rated: Sequence[tuple[str, float, float, np.ndarray]],
                   similarity: float) -> dict[str, float]:
    """For each memory rated for the question asked before that is closest to this one
    (query cosine at least `similarity`, and within `NEAREST_MARGIN` of the closest),
    between -1 (it did not help) and 1 (it helped): the mean label (as -1 / 1) of those pairs,
    each counting by its cosine and its source's weight, times the strongest source's weight
    (a path from memories only handed over and ignored stays faint)."""
    q = np.asarray(query_vector, dtype=np.float32)
    near = [(mid, label, w, float(vector @ q)) for mid, label, w, vector in rated]
    near = [t for t in near if t[3] >= similarity]
    if not near:
        return {}
    floor = max(t[3] for t in near) - NEAREST_MARGIN
    sums: dict[str, list[float]] = {}
    for memory_id, label, source_weight, cos in near:
        if cos >= floor:
            acc = sums.setdefault(memory_id, [0.0, 0.0, 0.0])
            acc[0] += cos * source_weight * (2.0 * label - 1.0)
            acc[1] += cos * source_weight
            acc[2] = max(acc[2], source_weight)
    return {mid: total / weight * strongest
            for mid, (total, weight, strongest) in sums.items() if weight > 0}


def moved(p: float, path: float, weight: float) -> float:
    """A relevance moved by a feedback path: toward 1 by `weight` × path when it helped,
    toward 0 when it did not."""
    if path > 0:
        return p + (1.0 - p) * weight * min(path, 1.0)
    return p * (1.0 - weight * min(-path, 1.0))
