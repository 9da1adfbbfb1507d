"""Prefix parsing and memory-type inference for explicit saves.

Recognised prefixes, each at most once, in either order, with optional whitespace::

    critical: [project, auth]: never expose tokens
    [auth]: critical: never expose tokens

Edge cases (deliberate):

- ``critical:`` is case-insensitive and needs no space after the colon.
- A tag prefix is ``[...]:`` with the colon right after ``]``; so a Markdown link
  such as ``[link](http://x): foo`` is not a prefix and passes through unchanged.
- A bracket holding no usable tag (``[]:``, ``[ , ]:``) is not a prefix either.
- If removing the prefixes would leave nothing (``"critical: "``, ``"[a]:"``), no
  prefix is parsed: the original text is kept as content, unpinned and untagged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CRITICAL = re.compile(r"\s*critical:", re.IGNORECASE)
_TAGS = re.compile(r"\s*\[([^\[\]\r\n]*)\]:")

CRITICAL_IMPORTANCE = 1.0


@dataclass(frozen=True)
class ParsedPrefix:
    """Content with its save prefixes removed, and what the prefixes asked for."""

    content: str
    pinned: bool
    importance: float | None
    tags: tuple[str, ...]


def _parse_tags(body: str) -> tuple[str, ...]:
    tags = (t.strip().lower() for t in body.split(","))
    return tuple(dict.fromkeys(t for t in tags if t))


def parse_prefix(content: str) -> ParsedPrefix:
    """Strip ``critical:`` and ``[tag,...]:`` prefixes off ``content``.

    ``importance`` is 1.0 when pinned and otherwise None (the caller applies its default).
    """
    rest = content
    pinned = False
    tags: tuple[str, ...] = ()
    while True:
        if not pinned and (m := _CRITICAL.match(rest)):
            pinned = True
            rest = rest[m.end() :]
            continue
        if not tags and (m := _TAGS.match(rest)) and (parsed := _parse_tags(m.group(1))):
            tags = parsed
            rest = rest[m.end() :]
            continue
        break
    rest = rest.strip()
    if not rest:
        return ParsedPrefix(content=content.strip(), pinned=False, importance=None, tags=())
    return ParsedPrefix(
        content=rest,
        pinned=pinned,
        importance=CRITICAL_IMPORTANCE if pinned else None,
        tags=tags,
    )


def _words(*alternatives: str) -> re.Pattern[str]:
    # Word-boundary alternation; a space in a phrase matches any whitespace run.
    parts = (re.escape(a).replace(r"\ ", r"\s+") for a in alternatives)
    return re.compile(r"\b(?:" + "|".join(parts) + r")\b", re.IGNORECASE)


# First match wins, in this order; "fact" is the fallback.
_TYPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("preference", _words("prefers", "prefer", "likes", "wants")),
    ("decision", _words("decided", "agreed", "will use", "chose", "going with")),
    ("rule", _words("never", "always", "must")),
    # "TIL" only in capitals: lowercase "til" is ordinary prose ("wait til Monday").
    ("learning", re.compile(r"\b(?:learned|discovered|turns\s+out|(?-i:TIL))\b", re.IGNORECASE)),
    ("issue", _words("bug", "broken", "problem", "error", "fails")),
)
DEFAULT_TYPE = "fact"
#: every rule as one alternation: a text that matches none (a fact) takes one scan, not five
_ANY_TYPE = re.compile("|".join(f"(?:{p.pattern})" for _, p in _TYPE_RULES), re.IGNORECASE)


def infer_type(content: str) -> str:
    """Guess a memory type from keywords: preference, decision, rule, learning, issue or fact.

    Whole words, case-insensitive (except ``TIL``), first matching type in that order wins.
    """
    if _ANY_TYPE.search(content) is None:
        return DEFAULT_TYPE
    for memory_type, pattern in _TYPE_RULES:
        if pattern.search(content):
            return memory_type
    return DEFAULT_TYPE
