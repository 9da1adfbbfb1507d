"""Stated dependencies between entities, read off one sentence without an LLM: "ShopApi
depends on ShopDb", "BackupJob reads from ShopDb", "ShopDb is used by ShopApi".

Pure and deterministic. Given the text and the entities the extractor found in it, returns
directed pairs (dependent, dependency) for two entity mentions next to each other in one
sentence with only a dependency verb phrase between them. Anything looser ("ShopApi and ShopDb
were slow") is left to co-occurrence: a wrong dependency edge would put a wrong WILL BREAK in
an impact report, a missing one only leaves the pair associated.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable

from mnemonist.text.entities import Entity, canonical_name
from mnemonist.text.entity_words import TECH_ALIASES

#: a role word between the name and the verb: "the ShopApi service depends on ShopDb"
_ROLE = (r"(?:(?:service|services|job|jobs|app|server|module|library|package|worker|cache|"
         r"database|db|api|client|pipeline|cluster|component|system|team)\s+)?")
_ADVERB = r"(?:(?:also|directly|only|still|now|heavily|mostly|always|indirectly)\s+)?"
_ARTICLE = r"(?:(?:the|a|an|its|their|our|his|her)\s+)?"
_FORWARD = (
    r"depends\s+on|depend\s+on|relies\s+on|rely\s+on|uses|calls|reads\s+from|writes\s+to|"
    r"talks\s+to|requires|runs\s+on|connects\s+to|queries|imports|is\s+built\s+on|"
    r"backs\s+up|pulls\s+from|consumes|needs"
)
_BACKWARD = r"is\s+(?:used|called|read|required|queried|consumed|imported|needed)\s+by"
_GAP_FORWARD = re.compile(rf"^[\s,]*{_ROLE}{_ADVERB}(?:{_FORWARD})\s+{_ARTICLE}$", re.IGNORECASE)
_GAP_BACKWARD = re.compile(rf"^[\s,]*{_ROLE}{_ADVERB}(?:{_BACKWARD})\s+{_ARTICLE}$", re.IGNORECASE)
#: every verb phrase a dependency needs: a text without one states none (checked first, as
#: most texts hold none)
_ANY_VERB = re.compile(rf"{_FORWARD}|{_BACKWARD}", re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?\n]+")
MAX_PAIRS = 16


@functools.cache
def _aliases() -> dict[str, tuple[str, ...]]:
    """canonical name (lower case) -> the technology aliases that write it."""
    out: dict[str, list[str]] = {}
    for alias, canon in TECH_ALIASES.items():
        out.setdefault(canon.lower(), []).append(alias)
    return {k: tuple(v) for k, v in out.items()}


def _spellings(entity: Entity) -> list[str]:
    """The ways the entity can be written: its name and, for a technology, its aliases."""
    key = canonical_name(entity.name)
    out = {entity.name.lower()}
    out.update(_aliases().get(key, ()))
    return sorted(out, key=len, reverse=True)


@functools.lru_cache(maxsize=4096)
def _mention_pattern(spelling: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.-]){re.escape(spelling)}(?![\w-])", re.IGNORECASE)


def _mentions(sentence: str, entities: Iterable[Entity]) -> list[tuple[int, int, str]]:
    """(start, end, canonical name) of each entity mention in the sentence, left to right,
    overlapping ones dropped (the longer spelling wins)."""
    found: list[tuple[int, int, str]] = []
    for entity in entities:
        key = canonical_name(entity.name)
        for spelling in _spellings(entity):
            found += [(m.start(), m.end(), key)
                      for m in _mention_pattern(spelling).finditer(sentence)]
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    out: list[tuple[int, int, str]] = []
    for start, end, key in found:
        if out and start < out[-1][1]:
            continue
        out.append((start, end, key))
    return out


def dependencies(text: str, entities: list[Entity]) -> list[tuple[str, str]]:
    """(dependent, dependency) canonical-name pairs stated in `text`, in order, unique."""
    if len(entities) < 2 or not _ANY_VERB.search(text):
        return []
    pairs: dict[tuple[str, str], None] = {}
    for sentence in _SENTENCE.finditer(text):
        spots = _mentions(sentence.group(), entities)
        for (_, a_end, a), (b_start, _, b) in itertools.pairwise(spots):
            if a == b:
                continue
            gap = sentence.group()[a_end:b_start]
            if _GAP_FORWARD.match(gap):
                pairs[(a, b)] = None
            elif _GAP_BACKWARD.match(gap):
                pairs[(b, a)] = None
            if len(pairs) >= MAX_PAIRS:
                return list(pairs)
    return list(pairs)
