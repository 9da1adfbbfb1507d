"""Fitting a `TreeEnsemble` (search/trees.py): gradient boosting with the logistic loss.

Histogram boosting as LightGBM and XGBoost's `hist` do it, small enough to read: each feature
is cut at up to 32 quantiles of its values, and every split of a node is chosen by the gain of
the second-order approximation over those bins (sums of gradients G and hessians H per bin:
gain = G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ)). Trees are complete to `depth` levels (a node
with no useful split sends every row left), each leaf worth −G/(H+λ) × the learning rate.

The benchmark fits the shipped model with it (`mnemonist bench relevance`), and a home fits
its own trees on top of the shipped ones from its feedback (`extra trees from a starting
margin`). Deterministic: the same rows give the same trees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mnemonist.search.trees import TreeEnsemble


@dataclass(frozen=True)
class Boosting:
    trees: int = 150
    depth: int = 3
    learning_rate: float = 0.1
    l2: float = 1.0
    bins: int = 32
    #: a split leaves at least this much hessian on each side (about 20 rows at p ≈ 0.5,
    #: more where the model is sure): no leaf learns from a handful of rows
    min_hessian: float = 5.0


def _cut(x: np.ndarray, bins: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each column's bin index and its cut points (right-closed quantiles)."""
    codes = np.zeros(x.shape, dtype=np.int64)
    edges = []
    for j in range(x.shape[1]):
        cuts = np.unique(np.quantile(x[:, j], np.linspace(0, 1, bins + 1)[1:-1]))
        edges.append(cuts)
        codes[:, j] = np.searchsorted(cuts, x[:, j], side="right")
    return codes, edges


def fit_trees(x: np.ndarray, y: np.ndarray, params: Boosting = Boosting(),
              start: np.ndarray | None = None, weight: np.ndarray | None = None
              ) -> TreeEnsemble:
    """Trees that predict y (0/1) from x. Without `start`, the first value is the log-odds of
    y's mean; with `start` (a margin per row, e.g. the shipped model's), the trees are fitted
    on top of it and `init` is 0. `weight` scales each row's gradient (all 1 by default)."""
    n = len(x)
    depth, inner = params.depth, 2 ** params.depth - 1
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    if start is None:
        mean = float(np.clip((w * y).sum() / max(w.sum(), 1e-12), 1e-6, 1 - 1e-6))
        init = float(np.log(mean / (1 - mean)))
        margin = np.full(n, init)
    else:
        init = 0.0
        margin = np.asarray(start, dtype=np.float64).copy()
    if n == 0:
        return TreeEnsemble.empty(init, depth)
    codes, edges = _cut(x, params.bins)
    width = params.bins + 1
    feats = np.zeros((params.trees, inner), dtype=np.int64)
    thr = np.full((params.trees, inner), np.inf)
    leaves = np.zeros((params.trees, 2 ** depth))
    lam = params.l2
    for t in range(params.trees):
        p = 1.0 / (1.0 + np.exp(-np.clip(margin, -40, 40)))
        g = w * (p - y)
        h = w * np.maximum(p * (1 - p), 1e-6)
        node = np.zeros(n, dtype=np.int64)
        for level in range(depth):
            for k in range(2 ** level):
                nid = 2 ** level - 1 + k
                inside = node == nid
                feature, cut = _best_split(codes[inside], g[inside], h[inside], edges,
                                           width, params.min_hessian, lam)
                feats[t, nid], thr[t, nid] = feature, cut
                right = inside & (x[:, feature] >= cut)
                node[inside] = 2 * nid + 1
                node[right] = 2 * nid + 2
        leaf = node - inner
        gs = np.bincount(leaf, g, minlength=2 ** depth)
        hs = np.bincount(leaf, h, minlength=2 ** depth)
        leaves[t] = -gs / (hs + lam) * params.learning_rate
        margin += leaves[t][leaf]
    return TreeEnsemble(init, depth, feats, thr, leaves)


def _best_split(codes: np.ndarray, g: np.ndarray, h: np.ndarray, edges: list[np.ndarray],
                width: int, min_hessian: float, lam: float) -> tuple[int, float]:
    """(feature, threshold) of the best split of one node; (0, inf) when none gains."""
    best_gain, best = 0.0, (0, float("inf"))
    if len(g) < 2:
        return best
    total_g, total_h = g.sum(), h.sum()
    parent = total_g ** 2 / (total_h + lam)
    for j, cuts in enumerate(edges):
        if not len(cuts):
            continue
        gl = np.cumsum(np.bincount(codes[:, j], g, minlength=width))[:len(cuts)]
        hl = np.cumsum(np.bincount(codes[:, j], h, minlength=width))[:len(cuts)]
        gr, hr = total_g - gl, total_h - hl
        gain = gl ** 2 / (hl + lam) + gr ** 2 / (hr + lam) - parent
        gain[(hl < min_hessian) | (hr < min_hessian)] = -1.0
        b = int(np.argmax(gain))
        if gain[b] > best_gain:
            best_gain, best = float(gain[b]), (j, float(cuts[b]))
    return best
