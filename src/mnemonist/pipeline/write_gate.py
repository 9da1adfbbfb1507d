"""The write gate's judgement: is a new memory a restatement of a stored one?

Only information the store does not hold yet is worth a new row — but an embedding cannot
tell a restatement from an update: MiniLM puts "The API uses Python 3.11" / "... 3.12" at
0.97, "The frontend team owns the dashboard" / "The platform team owns ..." at 0.80 and
"Code review needs one approval" / "... two approvals" at 0.90. So the cosine only picks the
stored memories worth comparing (≥ `memory.writeGate.threshold`); the text decides, and every
doubt means write. A new memory is a restatement of a stored one only when no guard fires:

- the near-duplicate guards (`text.near_duplicate.conflict`): other numbers or versions, a
  negation in one only, opposite words, the same words in an order that changes the meaning,
  names on each side that the other lacks;
- a name, identifier or number word ("two", "twice") that the stored one lacks or states
  differently;
- any word that carries meaning that is not in both: the two must say the same content words
  (plural and singular alike) and the same function words that change a statement ("only",
  "all", "was", "must", "before", ...). "Prefers pnpm over npm" / "The user prefers
  pnpm over npm" is a restatement; "... prefers pnpm over npm for installs" is not (a detail
  more), nor is a paraphrase in other words: a paraphrase cannot be told from an update by
  its words.
- what the remember says beside its text: pinned where the stored one is not, another type,
  tags the stored one lacks.

Measured on the memory-over-time stream and hand-written updates (`mnemonist bench
write-gate`, docs/gates.md): no genuine update is judged a restatement.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from mnemonist.text.near_duplicate import _stem, _unshared, conflict, words
from mnemonist.text.tokens import STOP_WORDS

#: stop words that change what a statement says: quantifiers, modals, the past tense, time and
#: comparison. Two texts must agree on these as on their content words (a present-tense "is"
#: or "has" may come and go: "Staging database: PostgreSQL 16" restates "... is PostgreSQL 16").
_MEANINGFUL_WORDS = """
only all any every each some most many few more less least both either neither own same other
must should shall may might can could will would need needs needed ought
was were had did been
before after until since during while again once twice still already yet ever always never
first last next previous above below over under than very too just also even
"""
MEANINGFUL = frozenset(_MEANINGFUL_WORDS.split())
#: number words: compared like numbers ("one approval" / "two approvals")
_NUMBER_WORDS = """
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety
hundred thousand million billion half double triple quarter once twice thrice single dozen
first second third fourth fifth
"""
NUMBER_WORDS = frozenset(_NUMBER_WORDS.split())


@dataclass(frozen=True)
class Stored:
    """A stored memory near the new one."""

    id: str
    content: str
    cosine: float
    type: str = "fact"
    pinned: bool = False
    tags: tuple[str, ...] = ()


@dataclass
class Verdict:
    """`redundant`: the new memory restates `neighbour`; else `reasons` say why it is new.
    `compared`: a stored memory was at or above the threshold (the words decided)."""

    redundant: bool
    neighbour: Stored | None = None
    reasons: list[str] = field(default_factory=list)
    compared: bool = False


def significant_words(text: str) -> Counter[str]:
    """The words of `text` that carry meaning, plurals folded: content words and the stop
    words in MEANINGFUL."""
    return Counter(_stem(w) for w in words(text) if w not in STOP_WORDS or w in MEANINGFUL)


def _number_words(text: str) -> Counter[str]:
    return Counter(w for w in words(text) if w in NUMBER_WORDS)


def difference(stored: str, new: str) -> str | None:
    """Why `new` says something `stored` does not, or None when it restates it."""
    guard = conflict(stored, new)
    if guard:
        return guard
    only_stored, only_new = _unshared(stored, new)
    if only_new:
        return f"names what the stored memory does not ({', '.join(only_new[:3])})"
    if _number_words(stored) != _number_words(new):
        return "different number words"
    a, b = significant_words(stored), significant_words(new)
    extra = sorted((b - a).keys())
    if extra:
        return f"words the stored memory lacks ({', '.join(extra[:4])})"
    missing = sorted((a - b).keys())
    if missing or only_stored:
        return f"leaves out words of the stored memory ({', '.join((missing or only_stored)[:4])})"
    return None


def _metadata(stored: Stored, *, type_: str, pinned: bool, tags: list[str]) -> str | None:
    if pinned and not stored.pinned:
        return "pinned, the stored memory is not"
    if type_ != stored.type:
        return f"another type ({type_} / {stored.type})"
    extra = sorted(set(tags) - set(stored.tags))
    if extra:
        return f"tags the stored memory lacks ({', '.join(extra[:3])})"
    return None


def judge(content: str, near: list[Stored], threshold: float, *, type_: str = "fact",
          pinned: bool = False, tags: list[str] | None = None) -> Verdict:
    """Compare the new memory with the stored ones, nearest first; the first it restates
    makes it redundant. `near` may hold memories below `threshold`: they are not compared."""
    ranked = sorted(near, key=lambda s: -s.cosine)
    close = [s for s in ranked if s.cosine >= threshold]
    if not close:
        nearest = f" (nearest {ranked[0].cosine:.3f})" if ranked else ""
        return Verdict(False, ranked[0] if ranked else None,
                       [f"no stored memory at cosine >= {threshold}{nearest}"])
    reasons: list[str] = []
    for s in close:
        why = difference(s.content, content) or _metadata(s, type_=type_, pinned=pinned,
                                                          tags=tags or [])
        if why is None:
            return Verdict(True, s, [f"restates {s.id} (cosine {s.cosine:.3f}): no guard fired"],
                           compared=True)
        reasons.append(f"{s.id} at {s.cosine:.3f}: {why}")
    return Verdict(False, close[0], reasons, compared=True)
