"""Fast-path entity extraction (the inline entity linker's names) and decision language
(decisions are protected from silent supersession). Pure and deterministic: no
I/O, no model, only regular expressions and the word lists of `entity_words`.

`extract_entities(text)` returns `(name, entity_type)` pairs, one per canonical name
(lowercased, whitespace collapsed: the key of the `entities` table), in order of first
appearance. Four readings, the first one wins when two give the same canonical name:

1. `technology` — a known technology name, mapped to its canonical form ("postgres" ->
   "PostgreSQL", "nextjs" -> "Next.js"). A name that is also an ordinary word ("react",
   "slack") counts only when written capitalised.
2. `domain` — a domain name (`github.com`, `www.` dropped), not the domain of an e-mail address.
3. `name` — capitalised words: runs of Capitalised words separated by spaces only (lowercase
   "of", "de", "van", ... may join them: "Bank of America"), split at stop words, with leading
   noise stripped ("Fixed ...", "Using ...", "Hey ...", and at a sentence start any frequent
   word). Junk is dropped: phrases with a time word ("Monday Meeting"), a generic last word
   ("Error Fix", "Background Color"), more than 40% frequent words ("Thank You So Much"),
   words touching code or path characters (`/ \\ < > { } [ ] = | @ # $ ...`), dotted words,
   camelCase and snake_case, and more than six words.
   A single capitalised word mid-sentence is a name unless it is a frequent or generic word.
   At a sentence start capitalisation proves nothing ("Nature is healing", "Pets always ..."),
   so a single word there is a name only with evidence in the text: it also appears
   capitalised mid-sentence, or it labels a line ("Caroline: ..."). Otherwise it is
   *tentative*: `extract()` returns it apart, and the inline linker links it only to an
   entity that already exists ("Alice prefers tabs" links Alice once Alice is known).
   A single word the text also writes in lowercase is tentative too (maybe an ordinary word).
   Replies and acknowledgements ("Understood", "Noted") are frequent words, roles and parts of
   a system ("Owner", "Assistant", "Hub") generic ones: never a name alone. The single word a
   technology name leaves of its phrase is none either ("Docker Hub" gives Docker).
   PascalCase words are kept: brand and class names ("GitHub", "HybridSearch") are what a
   coding agent asks about.
4. `quoted` — text in quotes or backticks, 3-60 characters, with the same junk filter, and
   neither a single lowercase word (`ls`, "cool") nor a sentence.

Not handled: one-letter names ("C", "R"), names with symbols ("C++", "C#"), lowercase names
that are not in the technology list, names across a line break.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from mnemonist.text.entity_words import (
    COMMON,
    CONNECTORS,
    GENERIC,
    GENERIC_ALONE,
    LEADING_NOISE,
    TECH_ALIASES,
    TECH_FIRST_WORDS,
    TECH_LOOSE,
    TIME_WORDS,
)
from mnemonist.text.normalize import collapse_whitespace
from mnemonist.text.tokens import STOP_WORDS

TECHNOLOGY, DOMAIN, NAME, QUOTED = "technology", "domain", "name", "quoted"
#: raise it when a change of these rules or of the word lists makes some name no longer an
#: entity: the entity-health pass (graph/entity_health.py) then judges every entity again
RULES_VERSION = 1
_PRIORITY = {TECHNOLOGY: 0, DOMAIN: 1, NAME: 2, QUOTED: 3}
MAX_NAME_CHARS = 60
MAX_PHRASE_WORDS = 6
PROSE_SHARE = 0.4


class Entity(NamedTuple):
    name: str
    entity_type: str


def canonical_name(name: str) -> str:
    """The key of an entity: whitespace collapsed, lowercased."""
    return collapse_whitespace(name).lower()


# a word: letters/digits with inner . ' ’ - ("Next.js", "O'Brien", "Jean-Luc", "github.com")
_WORD = re.compile(r"\w+(?:[.'’\-]\w+)*")
_CODE_CHARS = frozenset("/\\<>{}[]=|@#$%^*~+`_")
_SENTENCE_GAP = re.compile(r"[.!?;:\n\r\u2028\u2029]")
_INLINE_SPACE = re.compile(r"[ \t\u00a0]+")
_KEEP = TECH_LOOSE | CONNECTORS | {w for a in TECH_LOOSE for w in a.split()}
_INFLECTED = re.compile(r"..(?:ed|ing|ly)\Z")
_QUARTER = re.compile(r"q[1-4]\Z")
_CAMEL = re.compile(r"(?<![^\W\d_])[a-z]+[A-Z]")
_DOMAIN = re.compile(
    r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+"
    r"(?:com|org|net|io|dev|ai|app|co|ca|uk|us|de|fr|nl|eu|edu|gov|me|xyz|info|tech|cloud|ly|tv)"
)
_QUOTES = (
    re.compile(r'"([^"\n]{3,60})"'),
    re.compile(r"“([^”\n]{3,60})”"),
    re.compile(r"‘([^’\n]{3,60})’"),
    re.compile(r"(?<!\w)'([^'\n]{3,60})'(?!\w)"),
    re.compile(r"`([^`\n]{3,60})`"),  # code spans: only with a capital letter (not `ls -la`)
)
_QUOTED_JUNK = re.compile(r"[/\\<>{}\[\]()=;$|@#%^*~_`]|[.!?,:;]\Z")


class _Word(NamedTuple):
    start: int
    end: int
    text: str  # possessive "'s" removed
    lower: str
    at_start: bool  # first word of a sentence (or of the text, or of a line)
    joined: bool  # separated from the previous word by spaces only
    near_code: bool  # touches a path or code character


def _words(text: str, lowercase: set[str] | None = None) -> list[_Word]:
    """The words that can matter: capitalised ones, dotted ones (domains, "next.js"), words of
    technology names and connectors. `joined` is False after a word left out. `lowercase`, when
    given, receives every word the text writes in lowercase."""
    out: list[_Word] = []
    prev_end, last, n = 0, -2, len(text)
    for index, m in enumerate(_WORD.finditer(text)):
        start, end = m.span()
        raw = m.group()
        word = raw[:-2] if len(raw) > 2 and raw[-2] in "'’" and raw[-1] in "sS" else raw
        lower = word.lower()
        if lowercase is not None and word == lower:
            lowercase.add(lower)
        if word[0].isupper() or "." in word or lower in _KEEP:
            if index and start - prev_end == 1 and text[prev_end] == " ":  # the usual gap
                at_start, joined = False, last == index - 1
            else:
                at_start = index == 0 or _SENTENCE_GAP.search(text, prev_end, start) is not None
                joined = last == index - 1 and _INLINE_SPACE.fullmatch(
                    text, prev_end, start) is not None
            near_code = (start > 0 and text[start - 1] in _CODE_CHARS) or (
                end < n and text[end] in _CODE_CHARS)
            out.append(_Word(start, end, word, lower, at_start, joined, near_code))
            last = index
        prev_end = end
    return out


def _capitalised(w: _Word) -> bool:
    """Could be (part of) a name: starts with a capital, no dot, no underscore, no
    contraction ("Don't"), not a stop word ("The", "This", "My")."""
    t = w.text
    if len(t) < 2 or not t[0].isupper() or w.near_code or "." in t or "_" in t:
        return False
    if ("'" in t or "’" in t) and not re.search(r"['’][A-Z]", t):  # O'Brien, not Don't
        return False
    return w.lower not in STOP_WORDS


def _technology(words: list[_Word]) -> tuple[list[tuple[int, str]], set[int]]:
    """Known technology names (multi-word ones first); also the word indexes they used."""
    found: list[tuple[int, str]] = []
    used: set[int] = set()
    for i, w in enumerate(words):
        if w.lower not in TECH_FIRST_WORDS or i in used:
            continue
        for n in (3, 2):
            span = words[i : i + n]
            if len(span) == n and all(x.joined for x in span[1:]):
                key = " ".join(x.lower for x in span)
                if key in TECH_LOOSE:
                    found.append((w.start, TECH_ALIASES[key]))
                    used.update(range(i, i + n))
                    break
    for i, w in enumerate(words):
        if i not in used and w.lower in TECH_LOOSE and not w.near_code:
            found.append((w.start, TECH_ALIASES[w.lower]))
            used.add(i)
    return found, used


def _domains(text: str, words: list[_Word]) -> list[tuple[int, str]]:
    out = []
    for w in words:
        if "." in w.lower and _DOMAIN.fullmatch(w.lower):
            if w.start and text[w.start - 1] == "@":  # an e-mail address
                continue
            out.append((w.start, w.lower.removeprefix("www.")))
    return out


def _runs(words: list[_Word]) -> list[list[int]]:
    """Maximal runs of capitalised words joined by spaces (and lowercase connectors)."""
    runs: list[list[int]] = []
    run: list[int] = []
    for i, w in enumerate(words):
        if _capitalised(w):
            if run and w.joined:
                run.append(i)
            else:
                if run:
                    runs.append(run)
                run = [i]
        elif run and w.joined and w.text in CONNECTORS:
            run.append(i)
        else:
            if run:
                runs.append(run)
            run = []
    if run:
        runs.append(run)
    return runs


def _prose(lowers: list[str]) -> bool:
    content = [w for w in lowers if w not in CONNECTORS]
    return not content or sum(w in COMMON for w in content) / len(content) > PROSE_SHARE


def _accept(part: list[_Word]) -> bool:
    lowers = [w.lower for w in part]
    if len(part) > MAX_PHRASE_WORDS or any(
        w in TIME_WORDS or _QUARTER.fullmatch(w) for w in lowers
    ):
        return False
    if any(_CAMEL.search(w.text) for w in part):
        return False
    if len(part) == 1:
        return lowers[0] not in COMMON and lowers[0] not in GENERIC_ALONE
    return lowers[-1] not in GENERIC and not _prose(lowers)


def _strip(part: list[_Word]) -> list[_Word]:
    """Leading noise off (at a sentence start any frequent word is noise), and connectors off
    both ends. The word that becomes first is then mid-sentence."""
    while part and (part[0].lower in LEADING_NOISE or part[0].lower in CONNECTORS
                    or (part[0].at_start and part[0].lower in COMMON)):
        part = part[1:]
        if part:
            part = [part[0]._replace(at_start=False), *part[1:]]
    while part and part[-1].lower in CONNECTORS:
        part = part[:-1]
    return part


def _is_label(text: str, w: _Word) -> bool:
    """"Caroline: ..." at the start of the text or of a line (a speaker, an author); not a
    heading like "Fixed:" or "Invited:"."""
    if text[w.end : w.end + 1] != ":" or _INFLECTED.search(w.lower):
        return False
    line_start = text.rfind("\n", 0, w.start) + 1
    return not text[line_start : w.start].strip(" \t-*•>#")


def _names(
    text: str, words: list[_Word], used: set[int], lowercase: set[str]
) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(names, tentative names): a lone word at a sentence start without evidence is
    tentative, and so is one the text also writes in lowercase ("the game Mario ... a mario
    controller", "Ask the Lead. The lead signs off": maybe an ordinary word). A lone word is no
    name at all when it is what is left of a phrase beside a technology name ("Docker Hub",
    "Redis Cluster": the technology is the entity, "Hub" alone is not)."""
    recurring = {w.text for w in words if not w.at_start and _capitalised(w)}
    out: list[tuple[int, str]] = []
    tentative: list[tuple[int, str]] = []
    for run in _runs(words):
        parts: list[list[_Word]] = [[]]
        beside: list[bool] = [False]  # the part touches a technology name of its phrase
        for i in run:  # a technology name splits the phrase
            if i in used:
                beside[-1] = True
                parts.append([])
                beside.append(True)
            else:
                parts[-1].append(words[i])
        for part, by_tech in zip(map(_strip, parts), beside, strict=True):
            if not part or not _accept(part):
                continue
            if len(part) == 1 and by_tech:
                continue
            name = " ".join(w.text for w in part)  # whitespace collapsed, "'s" dropped
            if len(name) > MAX_NAME_CHARS:
                continue
            w = part[0]
            label = _is_label(text, w)
            if len(part) == 1 and (w.lower in lowercase or (
                    w.at_start and w.text not in recurring and not label)):
                tentative.append((w.start, name))
            else:
                out.append((w.start, name))
    return out, tentative


def _quoted(text: str) -> list[tuple[int, str]]:
    out = []
    for pattern in _QUOTES:
        for m in pattern.finditer(text):
            inner = collapse_whitespace(m.group(1))
            if len(inner) < 3 or _QUOTED_JUNK.search(inner) or _CAMEL.search(inner):
                continue
            if m.group()[0] == "`" and inner == inner.lower():
                continue
            lowers = [w.lower() for w in _WORD.findall(inner)]
            if not lowers or len(lowers) > MAX_PHRASE_WORDS:
                continue
            if inner.lower() in TECH_ALIASES:
                out.append((m.start(1), inner))
                continue
            if ((len(lowers) == 1 and (inner == inner.lower() or lowers[0] in GENERIC_ALONE))
                    or lowers[-1] in GENERIC):
                continue
            if _prose(lowers) or any(w in TIME_WORDS for w in lowers):
                continue
            out.append((m.start(1), inner))
    return out


class Extraction(NamedTuple):
    entities: list[Entity]
    #: lone capitalised words at a sentence start: names only if already known elsewhere
    tentative: list[Entity]


def _dedupe(candidates: list[tuple[int, int, str, str]]) -> list[Entity]:
    """One entity per canonical name: the best reading (priority, then position), ordered by
    the first position of the name."""
    best: dict[str, tuple[int, int, str, str]] = {}
    first: dict[str, int] = {}
    for cand in candidates:
        key = cand[2].lower()  # = canonical_name(): every name here is whitespace-collapsed
        if not key:
            continue
        first[key] = min(first.get(key, cand[1]), cand[1])
        if key not in best or cand[:2] < best[key][:2]:
            best[key] = cand
    ordered = sorted(best.items(), key=lambda kv: (first[kv[0]], kv[1][0]))
    return [Entity(c[2], c[3]) for _, c in ordered]


def _reading(pos: int, name: str, kind: str) -> tuple[int, int, str, str]:
    alias = TECH_ALIASES.get(name.lower())
    if alias is not None:
        return (0, pos, alias, TECHNOLOGY)
    return (_PRIORITY[kind], pos, name, kind)


def extract(text: str) -> Extraction:
    """The entities `text` names, and the tentative ones (see the module docstring)."""
    lowercase: set[str] = set()
    words = _words(text, lowercase)
    tech, used = _technology(words)
    names, tentative = _names(text, words, used, lowercase)
    candidates = [(0, pos, name, TECHNOLOGY) for pos, name in tech]
    candidates += [(1, pos, name, DOMAIN) for pos, name in _domains(text, words)]
    candidates += [_reading(pos, name, NAME) for pos, name in names]
    candidates += [_reading(pos, name, QUOTED) for pos, name in _quoted(text)]
    entities = _dedupe(candidates)
    known = {e.name.lower() for e in entities}
    maybe = _dedupe([_reading(pos, name, NAME) for pos, name in tentative])
    return Extraction(entities, [e for e in maybe if e.name.lower() not in known])


def extract_entities(text: str) -> list[Entity]:
    """The entities `text` names for certain, one per canonical name, in order of first
    appearance."""
    return extract(text).entities


# --- decision language (14 patterns: decisions are protected from silent supersession) --------

_GAP = r"[^.!?\n]{1,60}?"  # "X" in "picked X over Y": within one sentence
DECISION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\bcho(?:se|sen)\s+(?:to\s+use\b|{_GAP}\s+over\b)",  # chose/chosen to use X over Y
        r"\bdecided\s+(?:to|on|against)\b",
        r"\bswitched\s+(?:from|to)\b",
        r"\bmigrated\s+(?:from|to|away)\b",
        rf"\bpicked\s+{_GAP}\s+over\b",
        r"\bwent\s+with\b",
        r"\bsticking\s+with\b",
        r"\bcommitted\s+to\b",
        r"\bsettled\s+on\b",
        r"\bwill\s+(?:use|go\s+with|stick\s+with)\b",
        rf"\bprefers?\s+{_GAP}\s+(?:over|instead|rather)\b",
        # "adopted trunk-based development", not "adopted a beagle" (a pet, a child: "a", "an",
        # a possessive or a number before it)
        r"\badopted\s+(?!(?:a|an|my|his|her|their|your|one|two|three|four|twins)\b)\w",
        r"\barchitect(?:ure|ural)\s+decision\b",
        r"\bdesign\s+decision\b",
    )
)


#: the patterns as one alternation: one scan of the text instead of one per pattern
_ANY_DECISION = re.compile("|".join(f"(?:{p.pattern})" for p in DECISION_PATTERNS),
                           re.IGNORECASE)


def is_decision_content(text: str) -> bool:
    """True when `text` states a decision ("we went with SQLite", "switched to uv")."""
    return _ANY_DECISION.search(text) is not None
