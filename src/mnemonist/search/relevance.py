"""Calibrated relevance: the probability that a recalled memory answers the query.

Recall's fused score ranks well within one query but means little across queries: min-max
normalised BM25 gives the best keyword match of any query 1.0, and a string stored nowhere
still draws the nearest vectors at cosine 0.1-0.2. What decides whether to hand a memory to an
agent needs a number that means the same on every query and every store, so each returned
hit gets `relevance`, from signals recall already computes (search/relevance_features.py),
most of them absolute (cosine, raw BM25 strength, how many of the query's words the memory's
own text holds) and some relative to the query's other hits (rank, its source's strength).

One model both ranks and calibrates (`RelevanceModel`), evaluated with NumPy: a logistic
regression over the query's own features for whether the store answers the query at all, and
gradient-boosted trees (search/trees.py) for whether this hit is the answer. The trees'
probability is the learned ranker: recall orders its best candidates by it. The shipped model
(`relevance_model.json`, beside this module) is fitted by `mnemonist bench relevance` on public
dev data, cross-validated by conversation, and carries a checksum of its own content: a file
that does not match its checksum is refused (recall then keeps its fused order, gives no
relevance and says so in `degraded`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from mnemonist.search.relevance_features import (
    FEATURES,
    NO_KEYWORD,
    QUERY_COLUMNS,
    QUERY_FEATURES,
    TOP_COS,
    features,
)
from mnemonist.search.trees import TreeEnsemble, TreeError

log = logging.getLogger(__name__)

__all__ = ["FEATURES", "QUERY_COLUMNS", "QUERY_FEATURES", "features"]

MODEL_PATH = Path(__file__).with_name("relevance_model.json")
MODEL_FORMAT = "mnemonist-relevance/3"

#: a query no word of which occurs in scope: answerable from this best cosine on, surely so
#: from the second. Made-up strings against 1,000 synthetic memories reach 0.24-0.37 (median
#: 0.29); "ZEBRA-QUOKKA-4471" 0.19; paraphrases with no shared word 0.37-0.46
VECTOR_ALONE = (0.35, 0.5)


def vector_alone(top_cos: float) -> float:
    """How answerable a query is by a vector match alone: 0 up to 0.35, 1 from 0.5."""
    lo, hi = VECTOR_ALONE
    return min(1.0, max(0.0, (top_cos - lo) / (hi - lo)))


@dataclass(frozen=True)
class Logistic:
    """Standardise, weigh, squash: p = 1 / (1 + exp(-(w · (x - mean) / scale + bias)))."""

    weights: np.ndarray
    bias: float
    mean: np.ndarray
    scale: np.ndarray

    def predict(self, x: np.ndarray) -> np.ndarray:
        if x.size == 0:
            return np.zeros(0)
        z = ((x - self.mean) / self.scale) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))

    def to_json(self) -> dict[str, Any]:
        return {
            "weights": [round(float(v), 8) for v in self.weights],
            "bias": round(float(self.bias), 8),
            "mean": [round(float(v), 8) for v in self.mean],
            "scale": [round(float(v), 8) for v in self.scale],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], n: int) -> Logistic:
        arrays = [np.asarray(data[k], dtype=np.float64) for k in ("weights", "mean", "scale")]
        if any(a.shape != (n,) for a in arrays) or not np.all(arrays[2] > 0):
            raise ModelError("relevance model arrays have the wrong shape or a zero scale")
        return cls(arrays[0], float(data["bias"]), arrays[1], arrays[2])


@dataclass(frozen=True)
class RelevanceModel:
    """relevance = P(the store answers the query) × P(this hit is an answer | it does).

    `answerable` reads the query's own features (`QUERY_FEATURES`): a coding request asked of
    a store of chat conversations, or a string stored nowhere, gets a low value whatever its
    nearest memories. `hit` reads every feature and was fitted on questions that do have an
    answer: it is the ranker (`hit_of` orders recall's candidates). Their product is the
    probability that the hit answers the query."""

    hit: TreeEnsemble
    answerable: Logistic
    meta: dict[str, Any] | None = None

    def hit_of(self, x: np.ndarray) -> np.ndarray:
        """P(this hit is an answer | the store answers the query): the ranking order."""
        return self.hit.predict(x) if x.size else np.zeros(0)

    def predict(self, x: np.ndarray) -> np.ndarray:
        if x.size == 0:
            return np.zeros(0)
        return self.hit_of(x) * self.answerable.predict(x[:, QUERY_COLUMNS])

    def hit_and_relevance(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(`hit_of`, `predict`) of the same rows, the trees walked once."""
        if x.size == 0:
            return np.zeros(0), np.zeros(0)
        hit = self.hit_of(x)
        return hit, hit * self.answerable.predict(x[:, QUERY_COLUMNS])

    def with_hit(self, hit: TreeEnsemble, meta: dict[str, Any] | None = None
                 ) -> RelevanceModel:
        """The same answerability with other trees (a home's adapted ranker)."""
        return RelevanceModel(hit, self.answerable, meta if meta is not None else self.meta)

    def answerable_of(self, x: np.ndarray) -> float:
        """P(the store answers the query), from any row of the query's features. A query
        none of whose words occurs in scope can only be answered by meaning ("which relational
        engine backs prod?"); the data the model is fitted on has almost no such question, so
        there a close vector match counts on its own (`vector_alone`)."""
        if not x.size:
            return 0.0
        p = float(self.answerable.predict(x[:1, QUERY_COLUMNS])[0])
        if x[0, NO_KEYWORD] > 0:
            p = max(p, vector_alone(float(x[0, TOP_COS])))
        return p

    def to_json(self, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        body = {
            "format": MODEL_FORMAT,
            "features": list(FEATURES),
            "query_features": list(QUERY_FEATURES),
            "hit": self.hit.to_json(),
            "answerable": self.answerable.to_json(),
            "meta": meta if meta is not None else (self.meta or {}),
        }
        return {**body, "sha256": checksum(body)}


class ModelError(ValueError):
    """A relevance model file that cannot be used (unknown format, features, checksum)."""


def checksum(body: dict[str, Any]) -> str:
    """sha256 of the model's content in canonical JSON (the `sha256` key itself excluded)."""
    text = json.dumps({k: v for k, v in body.items() if k != "sha256"}, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def model_from_json(data: dict[str, Any]) -> RelevanceModel:
    if data.get("format") != MODEL_FORMAT:
        raise ModelError(f"unknown relevance model format {data.get('format')!r}")
    if data.get("sha256") != checksum(data):
        raise ModelError("relevance model checksum does not match its content")
    if (tuple(data.get("features") or ()) != FEATURES
            or tuple(data.get("query_features") or ()) != QUERY_FEATURES):
        raise ModelError("relevance model was fitted on other features")
    try:
        return RelevanceModel(TreeEnsemble.from_json(data["hit"], len(FEATURES)),
                              Logistic.from_json(data["answerable"], len(QUERY_FEATURES)),
                              meta=data.get("meta") or {})
    except TreeError as exc:
        raise ModelError(f"relevance model trees: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"relevance model is missing {exc}") from exc


def load_model(path: Path = MODEL_PATH) -> RelevanceModel:
    return model_from_json(json.loads(path.read_text(encoding="utf-8")))


def choose(relevances: Sequence[float], *, gate: float, marginal: float, cap: int
           ) -> list[int]:
    """Which hits to hand an agent, most relevant first: none unless the best reaches `gate`
    (nothing relevant: nothing injected); then the best, and each next one while the chance
    that it is the first useful one, p × Π(1 − p) over those before it, is at least
    `marginal`; `cap` at most. A confident first hit leaves little chance for the next, so
    few are given; several middling hits are all given."""
    order = sorted(range(len(relevances)), key=lambda i: -relevances[i])[:max(cap, 0)]
    if not order or relevances[order[0]] < gate:
        return []
    out: list[int] = []
    none_yet = 1.0
    for i in order:
        p = float(relevances[i])
        if out and p * none_yet < marginal:
            break
        out.append(i)
        none_yet *= 1.0 - p
    return out


@cache
def shipped_relevance_model() -> RelevanceModel | None:
    """The shipped relevance model (read once), or None (said once in the log) when it cannot
    be read."""
    try:
        return load_model()
    except (OSError, ValueError) as exc:
        log.warning("relevance model unavailable: %s", exc)
        return None
