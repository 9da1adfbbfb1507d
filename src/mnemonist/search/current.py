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
from mnemonist.text.same_fact import same_subject

#: sources whose memories record what was said or written then, not a standing fact
RECORD_SOURCES = frozenset({"session", "conversation", "file", "chatgpt", "claude",
                            "session_summary", "document"})


def is_statement(m: Memory) -> bool:
    return (m.source_type or "") not in RECORD_SOURCES


def _when(m: Memory) -> tuple[str, str]:
    return (m.valid_from or m.occurred_at or m.created_at or "", m.created_at or "")


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
