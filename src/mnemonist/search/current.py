"""The current value wins: of two statements about the same thing that say different things,
only the newer is handed to an agent, and it says what it replaced.

Superseded and deleted memories never reach here (recall leaves them out). What remains are
plain contradictions nobody linked: "the API listens on port 8080" stored in March, "the API
listens on port 9090" in May. Two memories are about the same thing when they read the same
but for one short changed stretch (`same_subject`); they disagree when a guard of the
near-duplicate sweep fires (`text/near_duplicate.conflict`: different numbers, a negation on
one side, opposite words, other names). Only statements are compared: turns of a conversation or a
session and chunks of files record what was said or written at the time, and an older turn
is history, not a stale fact.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemonist.model.memory import Memory
from mnemonist.text.near_duplicate import conflict, words

#: sources whose memories record what was said or written then, not a standing fact
RECORD_SOURCES = frozenset({"session", "conversation", "file", "chatgpt", "claude",
                            "session_summary", "document"})
#: share of the longer memory's words the unchanged stretch must cover to be "about the same"
SAME_SUBJECT = 0.6
MIN_SHARED = 3
MAX_CHANGED = 4  # words changed on each side at most: one value, not a different sentence


def is_statement(m: Memory) -> bool:
    return (m.source_type or "") not in RECORD_SOURCES


def _when(m: Memory) -> tuple[str, str]:
    return (m.valid_from or m.occurred_at or m.created_at or "", m.created_at or "")


def same_subject(a: list[str], b: list[str]) -> bool:
    """`a`, `b`: the words of two memories. They state the same thing's value when they read
    the same but for one changed stretch of at most `MAX_CHANGED` words on each side, and the
    words they share around it are most of both: "the API listens on port [8080 → 9090]",
    "the cluster runs in region [eu-west-1 → us-east-2]", "CI [is → is not] required". Two notes
    of a series ("Kubernetes ingress: setup note 1", "Kubernetes node pools: setup note 3")
    differ in two places, so they are about different things."""
    prefix = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        prefix += 1
    suffix = 0
    for x, y in zip(reversed(a[prefix:]), reversed(b[prefix:]), strict=False):
        if x != y:
            break
        suffix += 1
    kept = prefix + suffix
    changed_a, changed_b = len(a) - kept, len(b) - kept
    return (kept >= MIN_SHARED and kept >= SAME_SUBJECT * max(len(a), len(b))
            and max(changed_a, changed_b) > 0 and changed_a <= MAX_CHANGED
            and changed_b <= MAX_CHANGED)


def current_only(memories: Sequence[Memory]) -> tuple[list[Memory], dict[str, Memory]]:
    """The memories (order kept) without every statement that a newer statement among them
    contradicts, and for each newer one kept, the older memory it replaced."""
    statements = sorted((m for m in memories if is_statement(m)), key=_when, reverse=True)
    text = {m.id: words(m.content) for m in statements}
    stale: set[str] = set()
    replaced: dict[str, Memory] = {}
    for i, newer in enumerate(statements):
        if newer.id in stale:
            continue
        for older in statements[i + 1:]:
            if (older.id not in stale and same_subject(text[newer.id], text[older.id])
                    and conflict(newer.content, older.content) is not None):
                stale.add(older.id)
                replaced.setdefault(newer.id, older)
    return [m for m in memories if m.id not in stale], replaced
