"""Calibrated relevance: the probability that a recalled memory answers the query.

Recall's fused score ranks well within one query but means little across queries: min-max
normalised BM25 gives the best keyword match of any query 1.0, and a string stored nowhere
still draws the nearest vectors at cosine 0.1-0.2. What decides whether to hand a memory to an
agent needs a number that means the same on every query and every store, so each returned
hit gets `relevance`: a logistic model over signals recall already computes, most of them
absolute (cosine, raw BM25 strength, how many of the query's words the memory's own text
holds) and a few relative to the query's other hits (rank, share of the best score).

The model is small and evaluated with NumPy: two logistic regressions over standardised
features, one for whether the store answers the query at all, one for whether this hit is
the answer (`RelevanceModel`). The shipped weights (`relevance_model.json`, beside this
module) are fitted by `mnemonist bench relevance` on public dev data, cross-validated by
conversation, and carry a checksum of their own content: a file that does not match its
checksum is refused (recall then goes on without relevance and says so in `degraded`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mnemonist.search.fts_words import FtsWords
from mnemonist.search.keyword import query_terms
from mnemonist.text.tokens import tokenize

if TYPE_CHECKING:
    from mnemonist.search.hybrid import Hit
    from mnemonist.text.timeexpr import TimeWindow

MODEL_PATH = Path(__file__).with_name("relevance_model.json")
MODEL_FORMAT = "mnemonist-relevance/2"

#: what each feature is (one column of `features`, in this order)
FEATURES: tuple[str, ...] = (
    "cos",        # cosine of the memory's own vector to the query
    "vec",        # the vector leg's score (own cosine mixed with its context window's)
    "kw",         # the keyword leg's score, normalised within the query (best match 1.0)
    "strength",   # log(1 + raw BM25 strength) of its best keyword index: absolute
    "coverage",   # share of the query's content words its own text holds (stemmed)
    "score",      # the final ranking score
    "rel_top",    # score / the best score of the query
    "log_rank",   # log(1 + rank), rank 0 = first
    "who",        # the query names who said it
    "in_window",  # a time the query names holds its event time
    "n_terms",    # log(1 + number of the query's content words)
    "top_cos",    # the best own cosine among the query's hits
    "top_strength",  # the best strength among the query's hits
    "top_coverage",  # the best coverage among the query's hits
    "no_keyword",  # no word of the query is in any memory in scope (vectors alone found it)
)


#: the features of the query as a whole (the same on every hit's row): whether anything in
#: the store answers it at all
QUERY_FEATURES: tuple[str, ...] = ("n_terms", "top_cos", "top_strength", "top_coverage",
                                   "no_keyword")
QUERY_COLUMNS = [FEATURES.index(f) for f in QUERY_FEATURES]
NO_KEYWORD = FEATURES.index("no_keyword")
TOP_COS = FEATURES.index("top_cos")
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
    answer. Their product is the probability that the hit answers the query."""

    hit: Logistic
    answerable: Logistic
    meta: dict[str, Any] | None = None

    def predict(self, x: np.ndarray) -> np.ndarray:
        if x.size == 0:
            return np.zeros(0)
        return self.hit.predict(x) * self.answerable.predict(x[:, QUERY_COLUMNS])

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
        return RelevanceModel(Logistic.from_json(data["hit"], len(FEATURES)),
                              Logistic.from_json(data["answerable"], len(QUERY_FEATURES)),
                              meta=data.get("meta") or {})
    except (KeyError, TypeError) as exc:
        raise ModelError(f"relevance model is missing {exc}") from exc


def load_model(path: Path = MODEL_PATH) -> RelevanceModel:
    return model_from_json(json.loads(path.read_text(encoding="utf-8")))


def _named(who: str | None, words: set[str], cache_: dict[str, bool]) -> bool:
    if not who:
        return False
    if who not in cache_:
        parts = set(tokenize(who))
        cache_[who] = bool(parts) and parts <= words
    return cache_[who]


#: FTS5's own stemming, learned once per distinct word (search/fts_words.py): coverage is
#: counted as the keyword index would match, the same on every store, without a query per term
_WORDS = FtsWords()


def _terms_held(terms: list[str], texts: list[str]) -> list[int]:
    """For each text, how many of the query's terms its words hold (stemmed as FTS5 does)."""
    if not terms:
        return [0] * len(texts)
    wanted = [frozenset(ids) for ids in _WORDS.encode_many(terms)]
    out = []
    for ids in _WORDS.encode_many(texts):
        present = set(ids)
        out.append(sum(1 for term in wanted if term and term <= present))
    return out


def features(
    query: str, hits: Sequence[Hit], cosines: dict[int, float],
    window: TimeWindow | None = None,
) -> np.ndarray:
    """One row of `FEATURES` per hit (hits in rank order; `cosines`: own cosine by seq)."""
    n = len(hits)
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return x
    terms = query_terms(query)
    held = _terms_held(terms, [h.memory.content for h in hits])
    words = set(tokenize(query))
    named: dict[str, bool] = {}
    lo = hi = ""
    if window is not None:
        from mnemonist.model.memory import format_ts
        lo, hi = format_ts(window.start), format_ts(window.end)
    top = max(h.score for h in hits) or 1.0
    for i, h in enumerate(hits):
        m = h.memory
        cos = cosines.get(m.seq, h.vector_score or 0.0)
        x[i, 0] = cos
        x[i, 1] = h.vector_score if h.vector_score is not None else cos
        x[i, 2] = h.keyword_score or 0.0
        x[i, 3] = math.log1p(max(h.strength, 0.0))
        x[i, 4] = held[i] / len(terms) if terms else 0.0
        x[i, 5] = h.score
        x[i, 6] = h.score / top if top > 0 else 0.0
        x[i, 7] = math.log1p(i)
        x[i, 8] = 1.0 if _named(m.who, words, named) else 0.0
        x[i, 9] = 1.0 if window is not None and lo <= (m.occurred_at or "") < hi else 0.0
    x[:, 10] = math.log1p(len(terms))
    x[:, 11] = x[:, 0].max()
    x[:, 12] = x[:, 3].max()
    x[:, 13] = x[:, 4].max()
    x[:, 14] = 1.0 if x[:, 3].max() <= 0.0 else 0.0
    return x


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
