"""Post-fusion dampening: three independently toggled stages.

1. Gravity: a result that arrived through a semantic path (vector or hybrid) with a score
   above 0.3 but shares no query term with its own text is a "semantic hallucination":
   its score × gravityPenalty. A memory whose hints matched the query is exempt: its
   questions share the query's terms, which is the point of prospective indexing.
2. Hub: a result whose linked entities are all high-degree hubs (mention count above the
   hubPercentile of all entities) × hubPenalty — popular entities must not crowd out the
   specific ones. Acts on the inline linker's links and the pipeline's alike, names only
   (noun-phrase entities are left out: below).
3. Resolution: decisions and constraints × resolutionBoost — and, with decisionLanguage, any
   memory whose text is decision language (the 14 patterns of text/entities.py, "Decision
   Auto-Protection": "we went with SQLite", whatever type the memory was given); other
   memories with a temporal anchor (an ISO date or a month name), at least 50 characters long,
   × half that boost.

Terms are compared by their first five letters: a cheap stem, so that "deploy" and
"deployed" overlap the way FTS5's porter tokenizer sees them.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mnemonist.model.config import DampeningConfig
from mnemonist.store import hubs
from mnemonist.text.entities import is_decision_content
from mnemonist.text.tokens import content_tokens

MONTH = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|"
    r"december)\b|\b\d{4}-\d{2}-\d{2}\b",
    re.IGNORECASE,
)
RESOLVED_TYPES = {"decision", "constraint"}


def _stems(text: str) -> set[str]:
    return {t[:5] for t in content_tokens(text)}


def gravity(hits: list[Any], query: str, penalty: float, exempt: Collection[int] = ()) -> None:
    """`exempt`: seqs of memories that share the query's terms elsewhere (their hints)."""
    terms = _stems(query)
    if not terms:
        return
    for h in hits:
        if (h.source != "keyword" and h.score > 0.3
                and not (exempt and h.memory.seq in exempt)
                and not (terms & _stems(h.memory.content))):
            h.score *= penalty


def resolution(hits: list[Any], boost: float, decision_language: bool = True) -> None:
    for h in hits:
        m = h.memory
        if m.type in RESOLVED_TYPES or (decision_language and is_decision_content(m.content)):
            h.score *= boost
        elif len(m.content) >= 50 and MONTH.search(m.content):
            h.score *= 1.0 + (boost - 1.0) * 0.5


def _hub_threshold(conn: sqlite3.Connection, percentile: float) -> int | None:
    """The P-th percentile (lower) of entity mention counts, read off the mentions index.

    A count and an offset over every entity: 9-13 ms at 500,000 entities (a million
    memories), on every recall. So a SQLite connection that can carry it keeps the answer
    until the database changes: `PRAGMA data_version` moves when another connection commits,
    `total_changes` when this one writes."""
    if not isinstance(conn, sqlite3.Connection):  # PostgreSQL: two round trips a recall
        return _shared_hub_threshold(conn, percentile)
    key = (hubs.data_version(conn), conn.total_changes, percentile)
    cached = getattr(conn, "hub_threshold", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    value = hubs.mention_percentile(conn, percentile)
    with contextlib.suppress(AttributeError):  # a plain sqlite3 connection keeps nothing
        conn.hub_threshold = (key, value)  # type: ignore[attr-defined]
    return value


#: PostgreSQL: the threshold read at most this often per database. Other daemons write
#: too, so no change counter of this connection tells when it moved; a percentile of
#: mention counts moves slowly and only ranks (as BM25's corpus statistics, re-read a minute)
HUB_THRESHOLD_TTL_S = 30.0
_shared: dict[tuple[str, float], tuple[float, int | None]] = {}
_shared_lock = threading.Lock()


def _shared_hub_threshold(conn: Any, percentile: float) -> int | None:
    key = (str(getattr(conn, "store_key", id(conn))), percentile)
    now = time.monotonic()
    with _shared_lock:
        cached = _shared.get(key)
    if cached is not None and now - cached[0] < HUB_THRESHOLD_TTL_S:
        return cached[1]
    value = hubs.mention_percentile(conn, percentile)
    with _shared_lock:
        _shared[key] = (now, value)
    return value


@dataclass(frozen=True)
class Needed:
    """What recall reads of the hits' order after dampening: the first `count` of those
    scoring at least `floor`, once the signals that follow dampening multiplied each hit's
    score by at least `later_low[i]` and at most `later_high[i]`. With it, `hub` judges the
    hits best first and stops once `count` judged hits are sure to outrank every hit not
    judged: the others keep their score, an upper bound, and rank below them either way."""

    count: int
    floor: float
    later_low: Sequence[float]
    later_high: Sequence[float]


#: hits judged by the hub stage before it checks whether the best are settled (beyond
#: `Needed.count`), and then at a time
HUB_SLACK = 20
HUB_STEP = 30
#: relative margin for the rounding of the bounds (their products are not the pipeline's)
_EPS = 1e-9


def hub(conn: sqlite3.Connection, hits: list[Any], percentile: float, penalty: float,
        needed: Needed | None = None) -> None:
    """score × `penalty` for the hits linked only to hubs (`needed`: judge only as many as
    decide the order recall reads, see `Needed`)."""
    if not hits:
        return
    threshold = _hub_threshold(conn, percentile)
    if threshold is None:
        return
    if needed is None or penalty > 1.0 or any(h.score < 0 for h in hits):
        _penalise_hubs(conn, hits, threshold, penalty)
        return
    upper = [h.score * hi for h, hi in zip(hits, needed.later_high, strict=True)]
    order = sorted(range(len(hits)), key=lambda i: -upper[i])
    start, size = 0, needed.count + HUB_SLACK
    while start < len(order):
        batch = order[start : start + size]
        start += len(batch)
        _penalise_hubs(conn, [hits[i] for i in batch], threshold, penalty)
        if start >= len(order):
            return
        rest = upper[order[start]] * (1.0 + _EPS)  # the best a hit not judged can score
        floor = needed.floor * (1.0 + _EPS)
        settled = 0
        for i in order[:start]:
            low = hits[i].score * needed.later_low[i] * (1.0 - _EPS)
            if low > rest and low >= floor:
                settled += 1
        if settled >= needed.count:
            return
        size = HUB_STEP


def _penalise_hubs(conn: sqlite3.Connection, hits: list[Any], threshold: int,
                   penalty: float) -> None:
    """score × penalty for those of `hits` linked only to hubs."""
    ids = [h.memory.id for h in hits]
    linked: dict[str, list[int]] = {}
    for memory_id, mentions in hubs.linked_mentions(conn, ids):
        linked.setdefault(memory_id, []).append(mentions)
    for h in hits:
        mentions = linked.get(h.memory.id)
        if mentions and all(n > threshold for n in mentions):
            h.score *= penalty


def dampen(
    conn: sqlite3.Connection, hits: list[Any], query: str, cfg: DampeningConfig,
    *, hint_matched: Collection[int] = (), needed: Needed | None = None,
) -> None:
    """Apply the enabled stages in order; the caller re-sorts. `needed` (see `Needed`)
    bounds what the signals after dampening do; resolution's boost is added to it here."""
    if cfg.gravity_enabled:
        gravity(hits, query, cfg.gravity_penalty, hint_matched)
    if cfg.hub_enabled:
        if needed is not None and cfg.resolution_enabled:  # a boost of 1 up to its factor
            boost = max(cfg.resolution_boost, 1.0)
            needed = replace(needed, later_high=[f * boost for f in needed.later_high])
        hub(conn, hits, cfg.hub_percentile, cfg.hub_penalty, needed)
    if cfg.resolution_enabled:
        resolution(hits, cfg.resolution_boost, cfg.decision_language)
