"""What one memory's text tells the graph, without an LLM: its entities (names and technologies
from `text/entities.py`, noun phrases from `text/phrases.py`), the relations it states between
them (`text/relations.py`) and the aliases it gives ("the checkout API (CheckoutApi)").

`read(text)` is pure and deterministic; the inline linker (`store/entity_links.py`) writes what
it returns, and `mnemonist bench graph` scores it against a hand-labelled set.

- **Aliases from co-reference in one text**: "A (B)", "A, aka B", "A a.k.a. B", "A, also known
  as B", "A, i.e. B", "A, or B for short" make B another name of A: B is not an entity of its
  own, its mentions are A's, and the linker records it in `entity_aliases` so later texts that
  write B link to A.
- **Promotion by evidence**: a lone capitalised word at a sentence start is only tentative
  (`text/entities.py`), unless the text states a relation with it ("CheckoutApi depends on
  PostgreSQL").
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from typing import NamedTuple

from mnemonist.text.entities import NAME, TECHNOLOGY, Entity, canonical_name, extract
from mnemonist.text.entity_words import TECH_ALIASES
from mnemonist.text.phrases import Sentence, phrase_key, sentence_phrases, sentences
from mnemonist.text.relations import Mention, Relation, mentions_in, sentence_relations
from mnemonist.text.tagger import available

PHRASE = "phrase"
MAX_SCAN_CHARS = 10_000


def key_of(entity: Entity) -> str:
    """The canonical name an entity is kept under: a phrase's plural is folded."""
    if entity.entity_type == PHRASE:
        return phrase_key(entity.name)
    return canonical_name(entity.name)


_DETERMINERS = frozenset(
    "the a an this that these those my our your his her their its".split())  # noqa: SIM905


def resolve_name(name: str) -> tuple[str, list[str]]:
    """A name written elsewhere (an LLM's triple, a stated relation) as the reader would keep
    it: (display, canonical names to look up, the one to create first). A leading article or
    possessive pronoun goes, a technology alias becomes its canonical name ("postgres" ->
    PostgreSQL), and a phrase with a common-noun head folds its plural like the reader's
    phrases ("the worker queues" -> "worker queue")."""
    words = name.split()
    while len(words) > 1 and words[0].lower() in _DETERMINERS:
        words = words[1:]
    display = " ".join(words)
    tech = TECH_ALIASES.get(display.lower())
    if tech is not None:
        return tech, [canonical_name(tech)]
    plain = canonical_name(display)
    if len(words) >= 2 and words[-1][:1].islower():
        folded = phrase_key(display)
        return display, list(dict.fromkeys([folded, plain]))
    return display, [plain]


class Alias(NamedTuple):
    name: str  # as written
    key: str  # its canonical form
    primary: str  # the canonical name of the entity it names


class Reading(NamedTuple):
    entities: list[Entity]
    tentative: list[Entity]
    relations: list[Relation]
    aliases: list[Alias]


@functools.cache
def _tech_spellings() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for alias, canon in TECH_ALIASES.items():
        out.setdefault(canon.lower(), []).append(alias)
    return {k: tuple(v) for k, v in out.items()}


def _find(low: str, spelling: str) -> list[tuple[int, int]]:
    """(start, end) of each whole-word occurrence of `spelling` in the lowercased text, a
    possessive "'s" included: no letter, digit, "." or "-" before, no letter, digit or "-"
    after."""
    out = []
    at = low.find(spelling)
    n = len(spelling)
    while at >= 0:
        end = at + n
        if end + 1 < len(low) and low[end] in "'’" and low[end + 1] == "s":
            end += 2
        before = low[at - 1] if at else " "
        after = low[end] if end < len(low) else " "
        if not (before.isalnum() or before in "_.-") and not (after.isalnum() or after in "_-"):
            out.append((at, end))
        at = low.find(spelling, at + 1)
    return out


def _spellings(entity: Entity) -> list[str]:
    key = canonical_name(entity.name)
    out = {entity.name.lower(), *_tech_spellings().get(key, ())}
    return sorted(out, key=len, reverse=True)


def _person(entity: Entity) -> bool:
    """A name of one to three capitalised words with no inner capital ("Maria", "John Smith"):
    maybe a person, which decides "moved to" (a home) and "joined" (a group)."""
    if entity.entity_type != NAME:
        return False
    words = entity.name.split()
    return 0 < len(words) <= 3 and all(w[:1].isupper() and not any(c.isupper() for c in w[1:])
                                       for w in words)


_ALIAS_GAPS = re.compile(
    r"^\s*(?:\((?:\s*(?:internally\s+)?(?:called|named|aka|a\.k\.a\.))?|,?\s*(?:aka|a\.k\.a\.|"
    r"also known as|i\.e\.,?|or)\s+)\s*$", re.IGNORECASE)
#: "our billing service is called Ledgerly", "a separate repo called Bramble": only between a
#: phrase and a name ("Caroline called Melanie" is a phone call)
_CALLED = re.compile(r"^\s*,?\s*(?:(?:is|was)\s+)?(?:internally\s+)?(?:called|named)\s+$",
                     re.IGNORECASE)
_ALIAS_CLOSE = re.compile(r"^\s*(?:\)|for short\b)", re.IGNORECASE)


def _aliases(text: str, s: Sentence, mentions: list[Mention],
             every: dict[str, Entity]) -> dict[str, str]:
    """alias key -> primary key, from "A (B)" and "A, aka B" within the sentence. A technology
    keeps its own name ("the data store, i.e. Redis")."""
    out: dict[str, str] = {}
    for a, b in itertools.pairwise(mentions):
        if b.key in every and every[b.key].entity_type == TECHNOLOGY:
            continue
        between = text[s.tokens[a.last].end:s.tokens[b.first].start]
        after = text[s.tokens[b.last].end:s.tokens[b.last].end + 12]
        bare = [w for w in between.replace(",", " , ").split() if w.lower() not in _DETERMINERS]
        if bare == [","] and after.lstrip().startswith(","):
            # an apposition: "the billing service, BillingSvc, talks to …", "Wren, the
            # internal CLI, calls …" (a phrase and a name; two names are a list)
            pa, pb = every.get(a.key), every.get(b.key)
            if (pa and pb and (pa.entity_type == PHRASE) != (pb.entity_type == PHRASE)
                    and a.key != b.key and b.key not in out.values()):
                out[b.key] = a.key
            continue
        pa, pb = every.get(a.key), every.get(b.key)
        mixed = bool(pa and pb and (pa.entity_type == PHRASE) != (pb.entity_type == PHRASE))
        if _CALLED.match(between) and mixed and a.key != b.key and b.key not in out.values():
            out[b.key] = a.key
            continue
        if not _ALIAS_GAPS.match(between):
            continue
        paren = "(" in between
        if paren and not after.lstrip().startswith(")"):
            continue
        if not paren and between.strip().lower().rstrip(",") == "or" and not _ALIAS_CLOSE.match(
                after):
            continue  # "A or B" is a choice, "A, or B for short" a name
        if a.key != b.key and b.key not in out.values():
            out[b.key] = a.key
    return out


@functools.lru_cache(maxsize=2048)
def read(text: str) -> Reading:
    """Entities, tentative names, relations and aliases of `text` (see the module docstring).
    Cached per text (the linker reads a memory again on modify and delete): do not mutate."""
    text = text[:MAX_SCAN_CHARS]
    names = extract(text)
    entities: dict[str, Entity] = {canonical_name(e.name): e for e in names.entities}
    tentative: dict[str, Entity] = {canonical_name(e.name): e for e in names.tentative}
    tagged = sentences(text) if available() else ()
    per_sentence = []
    for s in tagged:
        phrases = sentence_phrases(s)
        for p in phrases:
            if p.key not in entities and p.key not in tentative:
                entities[p.key] = Entity(p.name, PHRASE)
        per_sentence.append((s, phrases))
    every = {**tentative, **entities}
    heads = {k: (e.name.split()[-1].lower() if e.name.split() else k) for k, e in every.items()}
    relations: dict[tuple[str, str, str], Relation] = {}
    alias_of: dict[str, str] = {}
    # every name's mentions in the whole text, once; each sentence takes those inside it
    low = text.lower()
    named = sorted((start, end, key, _person(e))
                   for key, e in every.items() if e.entity_type != PHRASE
                   for spelling in _spellings(e) for start, end in _find(low, spelling))
    starts = [n[0] for n in named]
    for s, phrases in per_sentence:
        lo, hi = s.tokens[0].start, s.tokens[-1].end
        spans = [(p.start, p.end, p.key, False) for p in phrases]
        spans += [n for n in named[bisect.bisect_left(starts, lo):bisect.bisect_left(starts, hi)]
                  if n[1] <= hi]
        if len(spans) < 2:
            continue  # no pair: no relation, no alias
        mentions = mentions_in(s, spans, lambda k: heads.get(k, k))
        alias_of.update(_aliases(text, s, mentions, every))
        if alias_of:  # an alias given in an earlier sentence holds in this one too
            mentions = [m._replace(key=alias_of.get(m.key, m.key)) for m in mentions]
        for r in sentence_relations(s, mentions, text):
            relations.setdefault((r.source, r.relation_type, r.target), r)
    aliases = []
    for alias, primary in alias_of.items():
        e = every.get(alias)
        if e is None or primary not in every:
            continue
        aliases.append(Alias(e.name, alias, primary))
        entities.pop(alias, None)
        tentative.pop(alias, None)
    evidence = [k for r in relations.values() for k in (r.source, r.target)]
    evidence += [k.split("'")[0] for k, e in entities.items()  # "Caroline's adoption agency"
                 if e.entity_type == PHRASE and "'s " in k]
    for key in evidence:  # a relation or a possessive is the evidence a tentative name lacked
        if key in tentative:
            entities[key] = tentative.pop(key)
    ordered = sorted(entities.items(), key=lambda kv: _first(text, kv[1]))
    return Reading([e for _, e in ordered], list(tentative.values()), list(relations.values()),
                   aliases)


def _first(text: str, e: Entity) -> int:
    low = text.lower()
    at = [i for sp in _spellings(e) if (i := low.find(sp)) >= 0]
    return min(at) if at else len(text)

