"""The features the learned ranker and the calibrated relevance read, one row per hit.

All are signals recall already has in hand once it has ranked its candidates: the legs' scores
(absolute where possible: own cosine, raw BM25 strength, how many of the query's words the text
holds), the hit's place among the others, its source (a conversation session, a document: how
many of the ranked hits share it, how strong its best one is, whether the turn next to it
scored), what the text holds (a question, a number, a time), the memory's state (pinned,
corroborated, recalled before) and what the query asks for (when, who, how many...). The query's
intent is part of every row, so the trees can weigh the others differently for a "when" question
than for a "why" one: intent routing learned from data instead of hand-set weights.

The query-level columns (`QUERY_FEATURES`) are computed over the first `RELEVANCE_DEPTH` hits
whatever the number ranked, so that "is anything here an answer" reads the same on every call.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mnemonist.search.fts_words import FtsWords
from mnemonist.search.keyword import query_terms

if TYPE_CHECKING:
    from mnemonist.search.hits import Hit

#: the query-level features read the best hits up to this depth
RELEVANCE_DEPTH = 10

#: what the query asks for: its first word, and a few phrasings (one column each)
INTENT_WORDS = ("when", "who", "what", "where", "why", "how", "which")
_YES_NO = frozenset({"did", "does", "do", "is", "are", "was", "were", "would", "could", "can",
                     "has", "have", "will", "should"})
_HOW_MANY = re.compile(r"\bhow (many|much|long|often|old)\b", re.I)
_LIKELY = re.compile(r"\b(likely|might|would|probably)\b", re.I)
_BOTH = re.compile(r"\b(and|both)\b", re.I)
#: a word naming a time; the look-ahead lets the search skip every position that cannot start
#: one (twice as fast as the bare alternation, the same matches: it is every memory's text)
_TIME_WORDS = re.compile(
    r"(?<!\w)(?=[adfjlmnostwy\d])(?:yesterday|today|tomorrow|tonight|last|next|ago|week|weekend|"
    r"month|year|years|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|"
    r"february|march|april|may|june|july|august|september|october|november|december|\d{4}|"
    r"since)\b", re.I)
_DIGIT = re.compile(r"\d")

#: what each feature is (one column of `features`, in this order)
FEATURES: tuple[str, ...] = (
    "cos",        # cosine of the memory's own vector to the query
    "vec",        # the vector leg's score (own cosine mixed with its context window's)
    "kw",         # the keyword leg's score, normalised within the query (best match 1.0)
    "strength",   # log(1 + raw BM25 strength) of its best keyword index: absolute
    "coverage",   # share of the query's content words its own text holds (stemmed)
    "score",      # the fused ranking score
    "rel_top",    # score / the best score of the query
    "log_rank",   # log(1 + rank), rank 0 = first
    "n_terms",    # log(1 + number of the query's content words)
    "top_cos",    # the best own cosine among the query's first hits
    "top_strength",  # the best strength among the query's first hits
    "top_coverage",  # the best coverage among the query's first hits
    "no_keyword",  # no word of the query is in any memory in scope (vectors alone found it)
    "context_cos",  # cosine of its context window's vector (own cosine without one)
    "own_over_context",  # cos - context_cos: the text itself, or the talk around it
    "source_hits",  # log(1 + ranked hits from the same source)
    "source_best",  # the best score of its source / the best score
    "source_place",  # log(1 + its place among its source's hits)
    "neighbour",  # the best score of the memory just before or after it in its source / best
    "asks",       # its text holds a question mark
    "has_number",  # its text holds a digit
    "has_time",   # its text names a time (a weekday, a month, "last week", a year)
    "cos_place",  # log(1 + its rank by own cosine among the ranked)
    "kw_place",   # log(1 + its rank by keyword score among the ranked)
    "pinned",
    "corroboration",  # log(observation count): said again by others
    "recalls",    # log(1 + explicit recalls that returned it)
    *(f"q_{w}" for w in INTENT_WORDS),
    "q_how_many",  # how many / much / long / often / old
    "q_yes_no",   # the query starts with did / is / was / can ...
    "q_likely",   # asks what is likely or would be
    "q_both",     # names two things (and, both)
)

#: the features of the query as a whole (the same on every hit's row): whether anything in
#: the store answers it at all
QUERY_FEATURES: tuple[str, ...] = ("n_terms", "top_cos", "top_strength", "top_coverage",
                                   "no_keyword")
QUERY_COLUMNS = [FEATURES.index(f) for f in QUERY_FEATURES]
NO_KEYWORD = FEATURES.index("no_keyword")
TOP_COS = FEATURES.index("top_cos")
_COL = {name: i for i, name in enumerate(FEATURES)}
_INTENT = FEATURES.index("q_when")


#: FTS5's own stemming, learned once per distinct word (search/fts_words.py): coverage is
#: counted as the keyword index would match, the same on every store, without a query per term
_WORDS = FtsWords()


#: a text's distinct token ids (a tuple: a fifth of a frozenset's memory, ~0.3 against ~2 KB
#: a text; `_held` asks them through the query's own few ids), and the three flags below
Facts = tuple[tuple[int, ...], bool, bool, bool]
#: texts whose facts are kept (the memories a store's queries rank are mostly the same few
#: thousand), least recently used first
FACTS_KEPT = 8192
_kept: OrderedDict[str, Facts] = OrderedDict()
_kept_lock = threading.Lock()


def _made(text: str, ids: list[int]) -> Facts:
    return (tuple(set(ids)), "?" in text, bool(_DIGIT.search(text)),
            bool(_TIME_WORDS.search(text)))


def _facts_of(texts: list[str]) -> list[Facts]:
    """What each memory's text holds, the same on every query: its words' token ids as FTS5
    stems them, a question mark, a digit, a time word. Kept per text (`FACTS_KEPT`); the texts
    not kept are encoded together, their new words put through FTS5 in one go."""
    out: list[Facts | None] = []
    with _kept_lock:
        for text in texts:
            found = _kept.get(text)
            if found is not None:
                _kept.move_to_end(text)
            out.append(found)
    missing = [i for i, f in enumerate(out) if f is None]
    if missing:
        made = [_made(texts[i], ids)
                for i, ids in zip(missing, _WORDS.encode_many([texts[i] for i in missing]),
                                  strict=True)]
        with _kept_lock:
            for i, facts in zip(missing, made, strict=True):
                out[i] = _kept[texts[i]] = facts
            while len(_kept) > FACTS_KEPT:
                _kept.popitem(last=False)
    return out  # type: ignore[return-value]


def _held(terms: list[str], present: list[tuple[int, ...]]) -> list[int]:
    """For each text (its token ids: `_facts_of`), how many of the query's terms its words
    hold (stemmed as FTS5 does). A term is held when all its ids are among the text's: among
    those of the text's ids that the query has at all."""
    if not terms:
        return [0] * len(present)
    wanted = [frozenset(ids) for ids in _WORDS.encode_many(terms)]
    asked = frozenset().union(*wanted)
    out = []
    for ids in present:
        here = asked.intersection(ids)
        out.append(sum(1 for term in wanted if term and term <= here))
    return out


def intent(query: str) -> list[float]:
    """The query-intent columns (`q_*`), in `FEATURES` order."""
    words = query.lower().split()
    first = words[0].strip("\"'(") if words else ""
    out = [1.0 if first == w else 0.0 for w in INTENT_WORDS]
    out.append(1.0 if _HOW_MANY.search(query) else 0.0)
    out.append(1.0 if first in _YES_NO else 0.0)
    out.append(1.0 if _LIKELY.search(query) else 0.0)
    out.append(1.0 if _BOTH.search(query) else 0.0)
    return out


def _places(values: np.ndarray) -> np.ndarray:
    """log(1 + rank) of each value, highest first (ties by position)."""
    ranks = np.empty(len(values))
    ranks[np.argsort(-values, kind="stable")] = np.arange(len(values))
    return np.log1p(ranks)


def features(
    query: str, hits: Sequence[Hit], cosines: dict[int, float],
    context: dict[int, float] | None = None,
) -> np.ndarray:
    """One row of `FEATURES` per hit (hits in the fused order; `cosines`: own cosine by seq;
    `context`: the context window's cosine by seq, where there is a context index).

    Who said a memory and when it happened are not among them: a query naming a person or a
    time lifts the memories it names in the fused score (`search.who_weight`,
    `search.time_weight`), and recall's order keeps that lift (`Hit.lift`), the same on every
    store, where a model fitted on one dataset would learn that dataset's habits. Nor is the
    text's length: in a chat log short turns ("Wow!") are never the answer, in a coding
    agent's store short statements often are."""
    n = len(hits)
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return x
    c = _COL
    terms = query_terms(query)
    facts = _facts_of([h.memory.content for h in hits])
    held = _held(terms, [f[0] for f in facts])
    top = max(h.score for h in hits) or 1.0
    context = context or {}
    by_source: dict[tuple[str | None, str], list[int]] = {}
    place_of = {}
    for i, h in enumerate(hits):
        place_of[h.memory.seq] = i
        if h.memory.source_id:
            by_source.setdefault((h.memory.project, h.memory.source_id), []).append(i)
    # per source, once: its best score and each member's place among its hits
    best_of: dict[tuple[str | None, str], float] = {}
    place_in: dict[int, int] = {}
    for key, members in by_source.items():
        best_of[key] = max(hits[j].score for j in members)
        for place, j in enumerate(sorted(members, key=lambda j: -hits[j].score)):
            place_in[j] = place
    n_terms = len(terms)
    rows: list[list[float]] = []
    for i, h in enumerate(hits):  # the columns before the query's intent, in FEATURES order
        m = h.memory
        cos = cosines.get(m.seq, h.vector_score or 0.0)
        ctx = context.get(m.seq, cos)
        score = h.score
        if m.source_id:
            key = (m.project, m.source_id)
            size, best, place = len(by_source[key]), best_of[key], place_in[i]
        else:
            size, best, place = 1, score, 0
        beside = [place_of[s] for s in (m.seq - 1, m.seq + 1) if s in place_of]
        beside = [j for j in beside if m.source_id and hits[j].memory.source_id == m.source_id]
        _, asks, number, time = facts[i]
        rows.append([
            cos,  # cos
            h.vector_score if h.vector_score is not None else cos,  # vec
            h.keyword_score or 0.0,  # kw
            math.log1p(max(h.strength, 0.0)),  # strength
            held[i] / n_terms if terms else 0.0,  # coverage
            score,  # score
            score / top if top > 0 else 0.0,  # rel_top
            math.log1p(i),  # log_rank
            0.0, 0.0, 0.0, 0.0, 0.0,  # the query's own (below)
            ctx,  # context_cos
            cos - ctx,  # own_over_context
            math.log1p(size),  # source_hits
            best / top if top else 0.0,  # source_best
            math.log1p(place),  # source_place
            max((hits[j].score for j in beside), default=0.0) / top,  # neighbour
            1.0 if asks else 0.0,  # asks
            1.0 if number else 0.0,  # has_number
            1.0 if time else 0.0,  # has_time
            0.0, 0.0,  # cos_place, kw_place (below)
            1.0 if m.pinned else 0.0,  # pinned
            math.log(max(m.observation_count, 1)),  # corroboration
            math.log1p(max(m.recall_count, 0)),  # recalls
        ])
    x[:, :_INTENT] = rows
    x[:, c["cos_place"]] = _places(x[:, c["cos"]])
    x[:, c["kw_place"]] = _places(x[:, c["kw"]])
    head = x[:RELEVANCE_DEPTH]
    x[:, c["n_terms"]] = math.log1p(len(terms))
    x[:, c["top_cos"]] = head[:, c["cos"]].max()
    x[:, c["top_strength"]] = head[:, c["strength"]].max()
    x[:, c["top_coverage"]] = head[:, c["coverage"]].max()
    x[:, c["no_keyword"]] = 1.0 if head[:, c["strength"]].max() <= 0.0 else 0.0
    x[:, _INTENT:] = intent(query)
    return x
