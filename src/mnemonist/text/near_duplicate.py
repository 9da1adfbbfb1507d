"""Guards of the near-duplicate sweep: reasons why two texts that embed alike still say
different things, so they must not be offered as duplicates.

Sentence embeddings are nearly blind to the details that make a memory true or false:
MiniLM scores "prefers tabs over spaces" / "prefers spaces over tabs" 0.986, "uses Python 3.11"
/ "uses Python 3.12" 0.963 and "Always run the linter" / "Never run the linter" 0.970. Each
guard looks for one such detail; `conflict()` returns the first that fires, or None when the
pair may be a real paraphrase. The guards err on the side of not flagging: a missed duplicate
costs a little clutter, a wrong merge loses a fact.
"""

from __future__ import annotations

import re
from collections import Counter

from mnemonist.text.entities import extract
from mnemonist.text.tokens import STOP_WORDS

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_NUMBER = re.compile(r"(?<![a-z0-9.])v?(\d+(?:[.,:]\d+)*)", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without|nowhere)\b|n['’]t\b",
    re.IGNORECASE,
)
#: a word is code-like (a path, file name, host, dotted or snake_case identifier) when one of
#: these joins two letters or digits inside it; one fixed-width search per word, so any text
#: costs linear time
_JOINED = re.compile(r"[A-Za-z0-9][./_][A-Za-z0-9]")
_WRAPPING = "()[]{}<>,;:!?\"'`“”‘’"

#: words whose order around them carries meaning: "X over Y" is not "Y over X"
_ASYMMETRIC = frozenset((
    "over", "than", "instead", "rather", "before", "after", "to", "from", "into", "vs",
    "versus", "against", "above", "below", "under", "beats", "replaces", "replaced",
))

_ANTONYM_PAIRS = (
    ("always", "never"), ("enable", "disable"), ("enabled", "disabled"),
    ("allow", "forbid"), ("allowed", "forbidden"), ("allow", "deny"), ("true", "false"),
    ("yes", "no"), ("increase", "decrease"), ("more", "less"), ("include", "exclude"),
    ("accept", "reject"), ("start", "stop"), ("on", "off"), ("open", "closed"),
    ("add", "remove"), ("like", "dislike"), ("likes", "dislikes"), ("use", "avoid"),
    ("required", "optional"), ("sync", "async"), ("public", "private"), ("min", "max"),
    ("minimum", "maximum"), ("success", "failure"), ("passes", "fails"), ("up", "down"),
)
_ANTONYMS: dict[str, set[str]] = {}
for _a, _b in _ANTONYM_PAIRS:
    _ANTONYMS.setdefault(_a, set()).add(_b)
    _ANTONYMS.setdefault(_b, set()).add(_a)


def words(text: str) -> list[str]:
    """Lowercased words, contractions kept whole ("doesn't")."""
    return _WORD.findall(text.lower())


_POSSESSIVE = re.compile(r"['’]s$")


def _stem(word: str) -> str:
    if not word.endswith(("s", "\n")):  # nothing below can change it (recall's hot path)
        return word
    word = _POSSESSIVE.sub("", word)
    for suffix in ("ies", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def numbers(text: str) -> Counter[str]:
    """The numbers and versions a text states ("3.11", "16", "8080", "2:30")."""
    return Counter(m.group(1).replace(",", "") for m in _NUMBER.finditer(text))


def negations(text: str) -> int:
    return len(_NEGATION.findall(text))


def names(text: str) -> set[str]:
    """Proper names and technologies, lowercased."""
    found = extract(text)
    out = {e.name.lower() for e in (*found.entities, *found.tentative)}
    return {n for n in out if n and n not in STOP_WORDS}


def identifiers(text: str) -> set[str]:
    """Code-like names (paths, files, hosts, dotted or snake_case identifiers), lowercased."""
    out = set()
    for word in text.split():
        word = word.strip(_WRAPPING).rstrip(".")
        if _JOINED.search(word):
            out.add(word.lower().strip("./"))
    return out - {""}


def _mentions(name: str, text_stems: set[str], text_lower: str) -> bool:
    if name in text_lower:
        return True
    parts = [_stem(w) for w in words(name)]
    return bool(parts) and all(p in text_stems for p in parts)


def _unshared(a: str, b: str) -> tuple[list[str], list[str]]:
    """The names and identifiers each text states that the other does not mention."""
    la, lb = a.lower(), b.lower()
    sa, sb = {_stem(w) for w in words(a)}, {_stem(w) for w in words(b)}
    only_a = [n for n in names(a) if not _mentions(n, sb, lb)]
    only_b = [n for n in names(b) if not _mentions(n, sa, la)]
    ia, ib = identifiers(a), identifiers(b)
    return sorted(only_a + sorted(ia - ib)), sorted(only_b + sorted(ib - ia))


def _content(tokens: list[str]) -> list[str]:
    return [t for t in tokens if t not in STOP_WORDS]


#: how far from an asymmetric word its two sides are looked for ("tabs over the spaces")
_REACH = 4


def _ordered_relations(tokens: list[str]) -> set[tuple[str, str, str]]:
    """(left content word, asymmetric word, right content word) around each asymmetric word,
    each side the nearest content word within `_REACH` words."""
    out = set()
    for i, tok in enumerate(tokens):
        if tok not in _ASYMMETRIC:
            continue
        left = next((t for t in reversed(tokens[max(0, i - _REACH):i])
                     if t not in STOP_WORDS and t not in _ASYMMETRIC), None)
        right = next((t for t in tokens[i + 1:i + 1 + _REACH]
                      if t not in STOP_WORDS and t not in _ASYMMETRIC), None)
        if left and right:
            out.add((_stem(left), tok, _stem(right)))
    return out


def _template(tokens: list[str]) -> list[str]:
    return ["" if t not in STOP_WORDS else t for t in tokens]


def order_conflict(a: str, b: str) -> bool:
    """The same words in an order that changes the meaning: "X over Y" against "Y over X",
    or the same sentence frame with its content words swapped ("Alice reports to Bob" /
    "Bob reports to Alice"). A reordering into another frame ("The payments team's lead is
    Maria") is not a conflict."""
    ta, tb = words(a), words(b)
    ra, rb = _ordered_relations(ta), _ordered_relations(tb)
    if any((r, rel, left) in rb and (left, rel, r) not in rb for left, rel, r in ra
           if left != r):
        return True
    ca, cb = _content(ta), _content(tb)
    return (_template(ta) == _template(tb) and Counter(ca) == Counter(cb) and ca != cb)


def _opposites(ta: set[str], tb: set[str]) -> tuple[str, str] | None:
    for w in ta - tb:
        for other in _ANTONYMS.get(w, ()):
            if other in tb and other not in ta:
                return w, other
    return None


def conflict(a: str, b: str) -> str | None:
    """Why `a` and `b` must not be offered as duplicates, or None when no guard fires."""
    na, nb = numbers(a), numbers(b)
    if na != nb:
        only_a = sorted((na - nb).elements()) or ["none"]
        only_b = sorted((nb - na).elements()) or ["none"]
        return f"different numbers ({', '.join(only_a)} / {', '.join(only_b)})"
    if negations(a) != negations(b):
        return "negation in one only"
    ta, tb = set(words(a)), set(words(b))
    opposite = _opposites(ta, tb)
    if opposite:
        return f"opposite words ({opposite[0]} / {opposite[1]})"
    if order_conflict(a, b):
        return "same words in an order that changes the meaning"
    only_a, only_b = _unshared(a, b)
    if only_a and only_b:
        return f"different names ({only_a[0]} / {only_b[0]})"
    return None
