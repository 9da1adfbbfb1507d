"""Score lifts recall applies to its hits after fusion: a person the query names, and a
source (a conversation, a document) holding several strong matches."""

from __future__ import annotations

from typing import Any

from mnemonist.text.tokens import tokenize


def named_author_lifts(hits: list[Any], query: str, weight: float) -> list[float]:
    """What `boost_named_authors` multiplies each hit's score by: 1 + weight for a memory of
    a person the query names, else 1."""
    lifts = [1.0] * len(hits)
    if weight <= 0 or not hits:
        return lifts
    words = set(tokenize(query))
    named: dict[str, bool] = {}
    for h in hits:
        who = h.memory.who
        if who and who not in named:
            parts = set(tokenize(who))
            named[who] = bool(parts) and parts <= words
    lift = 1.0 + weight
    for i, h in enumerate(hits):
        if h.memory.who and named.get(h.memory.who):
            lifts[i] = lift
    return lifts


def boost_named_authors(hits: list[Any], query: str, weight: float,
                        lifts: list[float] | None = None) -> None:
    """A query that names who said or stored a memory ("what did Maria say about the
    launch?") lifts that person's memories × (1 + weight). `who` matches when all its words
    are words of the query. `lifts`: `named_author_lifts` of the same hits, when known."""
    if lifts is None:
        lifts = named_author_lifts(hits, query, weight)
    for h, lift in zip(hits, lifts, strict=True):
        if lift != 1.0:
            h.score *= lift


def boost_by_source(hits: list[Any], weight: float, top: int = 3) -> None:
    """Lift memories whose source (conversation, document) holds other strong matches:
    score × (1 + weight × strength of the source), the strength being the sum of the source's
    `top` best scores relative to the strongest source. Memories without a source get no lift."""
    groups: dict[tuple[str | None, str], list[float]] = {}
    for h in hits:
        if h.memory.source_id:
            groups.setdefault((h.memory.project, h.memory.source_id), []).append(h.score)
    if not groups:
        return
    strength = {k: sum(sorted(v, reverse=True)[:top]) for k, v in groups.items()}
    best = max(strength.values()) or 1.0
    for h in hits:
        if h.memory.source_id:
            h.score *= 1.0 + weight * strength[(h.memory.project, h.memory.source_id)] / best
