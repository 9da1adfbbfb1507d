"""The newest statement of a subject first: when a fact changes, recall ranks the new value
above the old one.

A question about a fact that changed ("which region is the orders cluster in now?") often
reads like the first statement of it ("the orders cluster runs in region ca-central-1"),
because that is how people state a fact the first time; the replacement is worded as news
("we migrated the orders cluster over to eu-north-1"), so it ranks lower and looks less
relevant. Ranking alone cannot know which value is current; the time each was said can.

Among the best hits of a query (`DEPTH`), the ones about the query's subject form a group:
statements (not turns of a conversation or chunks of a file: those record what was said then)
that name the query word the most of the plausible hits share with the best one (the most
relevant), each matching the query at least `share` × as well as the best hit does by the
legs' fused score (text and meaning, before the learned ranker and recall's lifts: the
ranker's calibrated relevance is sharp, and it gives a replacement worded as news a few
percent beside the old statement's 90 — exactly the case this step is for), said by the
best hit's speaker (`who`) or by nobody
named ("I booked the train" from Ana is not replaced by the same words from Ben), and not
plainly about another thing than the best hit (`text.same_fact.about_other_things`: "the
analytics cluster runs in region X" beside "the orders cluster runs in region Y"). The subject
word is chosen that way because it is what the old and the new statement have in common: the
predicate words of a question echo the old statement only.

Within the group, hits take the group's places in order of event time, newest first, and each
place keeps its relevance: the newest statement of the subject is the one most likely to
answer, with the probability the best place had. Statements written within `SITTING` (an
hour) of each other are several facts told at once, not a value and its replacement: they
keep their rank order among themselves, and only a later sitting goes first. Nothing else
moves; nothing is dropped (the older statements stay, lower).

A question about the past ("what did the cluster run on before?", "which port was it
originally"), one bound to a time window, and a lookup of a word or two keep the ranking as it
is; a pinned memory keeps its place.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Protocol, TypeVar

from mnemonist.model.memory import Memory
from mnemonist.search.current import is_statement
from mnemonist.text.near_duplicate import _stem, conflict, words
from mnemonist.text.same_fact import about_other_things, values
from mnemonist.text.tokens import STOP_WORDS

#: how many of the best hits are looked at
DEPTH = 10
#: statements written closer together than this are one sitting: several facts told at once,
#: not a value and its replacement; they keep their rank order
SITTING = timedelta(hours=1)
#: a query of fewer words is a lookup of a term, not a question about a value
MIN_QUERY_WORDS = 3
#: words of a question that never name its subject
QUESTION_WORDS = frozenset({
    "now", "current", "currently", "today", "these", "days", "which", "what", "where", "when",
    "who", "how", "much", "many", "does", "do", "did", "use", "used", "using", "uses", "is",
    "are", "right", "still", "latest", "anymore",
})
#: a question about an earlier value
PAST = re.compile(
    r"\b(?:before|previous(?:ly)?|used to|originally|original|formerly|former|old|older|"
    r"earlier|first|initially|last (?:year|month|week)|back then|at the time|until|history)\b",
    re.IGNORECASE)


class RankedHit(Protocol):
    memory: Memory
    relevance: float | None
    #: the legs' fused score (search/fusion.py): how well the memory matches the query
    fused: float


def asks_about_the_past(query: str) -> bool:
    return PAST.search(query) is not None


#: `_stem` of a word, cached (a store's words are few; a text's are stemmed one by one)
_stem_of = lru_cache(maxsize=1 << 16)(_stem)


@lru_cache(maxsize=4096)
def _stems(text: str) -> tuple[str, ...]:
    """The text's distinct stemmed words (cached: recall reads the same memories' texts again
    and again, ten a query; a tuple holds them in a fifth of a set's memory)."""
    return tuple(set(map(_stem_of, words(text))))


#: `about_other_things`, cached by the pair: the best hit's text against its neighbours'
_about_other_things = lru_cache(maxsize=4096)(about_other_things)


def subject_group(query: str, hits: Sequence[RankedHit], share: float) -> list[int]:
    """Positions (in `hits`, among the first `DEPTH`) of the statements about the query's
    subject, or [] when there is no such group of two or more."""
    head = list(hits[:DEPTH])
    rel = [h.relevance for h in head]
    known = [r for r in rel if r is not None]
    if len(known) < 2:
        return []
    best = rel.index(max(known))
    if not is_statement(head[best].memory):
        return []
    asked = frozenset(_stems(query)) - STOP_WORDS - QUESTION_WORDS
    text = [_stems(h.memory.content) for h in head]
    candidates = sorted(asked.intersection(text[best]))
    if not candidates:
        return []
    speaker = _who(head[best].memory)
    lead = head[best].memory.content
    floor = share * head[best].fused
    plausible = [i for i, r in enumerate(rel)
                 if r is not None and head[i].fused >= floor and is_statement(head[i].memory)
                 and not head[i].memory.pinned and _who(head[i].memory) in (speaker, None)
                 and (i == best or not _about_other_things(lead, head[i].memory.content))]
    groups = {w: [i for i in plausible if w in text[i]] for w in candidates}
    seen_in = {w: sum(1 for t in text if w in t) for w in candidates}
    # the most shared word names the subject; of equals, the rarer among the hits
    word = max(candidates, key=lambda w: (len(groups[w]), -seen_in[w], w))
    return groups[word] if len(groups[word]) >= 2 else []


def _who(m: Memory) -> str | None:
    return " ".join(m.who.split()).lower() if m.who else None


def _when(m: Memory) -> str:
    return m.valid_from or m.occurred_at or m.created_at or ""


def _sittings(hits: Sequence[RankedHit], group: list[int]) -> list[list[int]]:
    """The group split where more than `SITTING` passes between two statements (oldest
    first), each part in rank order."""
    timed = sorted(group, key=lambda i: (_when(hits[i].memory), hits[i].memory.seq))
    parts: list[list[int]] = []
    last: datetime | None = None
    for i in timed:
        at = _parse(_when(hits[i].memory))
        if not parts or last is None or at is None or at - last > SITTING:
            parts.append([])
        parts[-1].append(i)
        last = at
    return [sorted(part) for part in parts]


def _parse(ts: str) -> datetime | None:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


_Hit = TypeVar("_Hit", bound=RankedHit)


def newest_first(query: str, hits: list[_Hit], share: float) -> list[int]:
    """Reorder `hits` in place (see the module); returns the new order as positions of the
    old list (identity when nothing moved), so that rows kept beside the hits follow."""
    order = list(range(len(hits)))
    if share <= 0 or len(words(query)) < MIN_QUERY_WORDS or asks_about_the_past(query):
        return order
    group = subject_group(query, hits, share)
    if not group:
        return order
    newest = [i for sitting in reversed(_sittings(hits, group)) for i in sitting]
    places = sorted(group)
    if newest == places:
        return order
    moved = {place: hits[i] for place, i in zip(places, newest, strict=True)}
    relevance = {place: hits[place].relevance for place in places}
    for place, i in zip(places, newest, strict=True):
        order[place] = i
    for place, hit in moved.items():
        hit.relevance = relevance[place]
        hits[place] = hit
    return order


def disagree(a: str, b: str) -> bool:
    """The two state different values: a guard of the near-duplicate sweep fires (numbers,
    negation, opposite words, other names), or each names a value the other does not."""
    if conflict(a, b) is not None:
        return True
    va, vb = values(a), values(b)
    return bool(va - vb) and bool(vb - va)


def outdated(query: str, hits: Sequence[RankedHit], share: float) -> dict[str, Memory]:
    """For the prompt hook: the statements of the query's subject group (already ordered
    newest first by recall) that an hour or more before the newest one said something it
    contradicts; each id mapped to that newest statement. An agent is handed the current
    value, not both."""
    if share <= 0 or len(words(query)) < MIN_QUERY_WORDS or asks_about_the_past(query):
        return {}
    group = subject_group(query, hits, share)
    if len(group) < 2:
        return {}
    newest = max((hits[i].memory for i in group), key=lambda m: (_when(m), m.seq))
    latest = _parse(_when(newest))
    out: dict[str, Memory] = {}
    for i in group:
        m = hits[i].memory
        at = _parse(_when(m))
        if (m.id != newest.id and latest is not None and at is not None
                and latest - at > SITTING and disagree(newest.content, m.content)):
            out[m.id] = newest
    return out
