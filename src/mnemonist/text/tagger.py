"""A part-of-speech tagger for the graph's prose reader (`text/phrases.py`, `text/relations.py`):
Eric Brill's rule-based tagger (1992), with the lexicon and rules it learned from the Brown
corpus and the Penn Treebank.

The data (a 94,000-word lexicon, 151 morphological rules for unknown words, 293 contextual
rules) comes from the PyPI package `textblob` (MIT; the files come from CLiPS' `pattern`, BSD),
pinned in pyproject.toml. Only its data files are read: the package is located without being
imported (importing it would import NLTK), and each file's SHA-256 is checked against the
digests below, so an upgrade that changes them is noticed instead of silently changing the
graph. When the files are missing or differ, `available()` is False and the prose reader adds
nothing (the name extractor of `text/entities.py` still runs).

Why this tagger: it is small (1.2 MB of text, loaded once in ~0.2 s), pure Python, needs no
model runtime, and tags ~95% of tokens right on edited English — enough to tell "writes" the
verb from "orders" the noun, which is what the noun-phrase chunker needs. The rules are applied
as the reference implementation applies them (per token, in file order), with the contextual
rules indexed by the tag they change so a token only meets rules that can fire on it.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import importlib.util
import logging
import re
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger(__name__)

PACKAGE = "textblob"
DIGESTS = {
    "en-lexicon.txt": "9545c71faf16e4461d0bff1d9948fe92b2cf94766af118a6c69c37b43363d5d2",
    "en-morphology.txt": "4032100aab324739d0f26fd32d13e2e0f58018066e9b76a0e4cd065bbfc0b248",
    "en-context.txt": "d78dc6807bdaacc8e69e3a3635ce2cee548a243eacce8aacbf1fe65093980131",
}
_NUMBER = re.compile(r"^[0-9.,:/%+-]+$|^\d+(?:st|nd|rd|th|s)$")
_PAD = ("STAART", "STAART")
#: tokens: words with inner . - ' (Next.js, on-call, O'Brien), "n't", "'s", numbers, punctuation
_TOKEN = re.compile(r"\w+?(?=n't\b)|n't\b|['’]s\b|\w+(?:[.\-/]\w+)*|[^\w\s]")


class Token(NamedTuple):
    text: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Words, clitics ("do" + "n't", "Caroline" + "'s"), numbers and punctuation, with their
    offsets in `text`."""
    return [Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _files() -> dict[str, str] | None:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "en"
    out = {}
    for name, digest in DIGESTS.items():
        try:
            data = (folder / name).read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            log.warning("%s/%s differs from the pinned data: the prose reader is off", PACKAGE,
                        name)
            return None
        out[name] = data.decode("utf-8")
    return out


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()
            if line.strip() and not line.startswith(";;;")]


class _Rules:
    def __init__(self, files: dict[str, str]) -> None:
        self.lexicon: dict[str, str] = {}
        for row in _rows(files["en-lexicon.txt"]):
            if len(row) >= 2:
                self.lexicon.setdefault(row[0], row[1])
        self.morphology = [r for r in _rows(files["en-morphology.txt"]) if len(r) >= 4]
        self.context = [r for r in _rows(files["en-context.txt"]) if len(r) >= 4]
        self.by_tag: dict[str, list[int]] = {}
        for i, rule in enumerate(self.context):
            self.by_tag.setdefault(rule[0], []).append(i)
        self.any_tag = self.by_tag.pop("*", [])


@functools.cache
def _rules() -> _Rules | None:
    files = _files()
    return _Rules(files) if files is not None else None


def lexicon_tag(word: str) -> str | None:
    """The lexicon's most frequent tag for `word` as written, or None."""
    r = _rules()
    return r.lexicon.get(word) if r is not None else None


def available() -> bool:
    """The tagger's data is installed and matches the pinned digests."""
    return _rules() is not None


_MORPH = {"char", "haspref", "hassuf", "addpref", "addsuf", "deletepref", "deletesuf",
          "goodleft", "goodright"}


def _unknown(r: _Rules, word: str, prev: str | None, nxt: str | None) -> str:
    if word.istitle():
        return "NNP"
    if _NUMBER.match(word):
        return "CD"
    tag = "NN"
    lex = r.lexicon
    for rule in r.morphology:
        if rule[1].lower() in _MORPH:  # "ly hassuf 2 RB x"
            from_tag, x, cmd, to = None, rule[0], rule[1].lower(), rule[-2]
        elif rule[2].lower().lstrip("f") in _MORPH:  # "NN s fhassuf 1 NNS x"
            from_tag, x, cmd, to = rule[0], rule[1], rule[2].lower().lstrip("f"), rule[-2]
        else:
            continue
        if from_tag is not None and tag != from_tag:
            continue
        if ((cmd == "char" and x in word) or (cmd == "haspref" and word.startswith(x))
                or (cmd == "hassuf" and word.endswith(x))
                or (cmd == "addpref" and x + word in lex)
                or (cmd == "addsuf" and word + x in lex)
                or (cmd == "deletepref" and word.startswith(x) and word[len(x):] in lex)
                or (cmd == "deletesuf" and word.endswith(x) and word[:-len(x)] in lex)
                or (cmd == "goodleft" and x == nxt) or (cmd == "goodright" and x == prev)):
            tag = to
    return tag


def _fires(rule: list[str], t: list[list[str]], i: int) -> bool:
    cmd, x = rule[2].lower(), rule[3]
    y = rule[4] if len(rule) > 4 else ""
    w, tg = t[i][0], t[i][1]
    if cmd == "prevtag":
        return x == t[i - 1][1]
    if cmd == "nexttag":
        return x == t[i + 1][1]
    if cmd == "surroundtag":
        return x == t[i - 1][1] and y == t[i + 1][1]
    if cmd == "wdnexttag":
        return x == w and y == t[i + 1][1]
    if cmd == "prevwd":
        return x == t[i - 1][0]
    if cmd == "curwd":
        return x == w
    if cmd == "wdprevtag":
        return x == t[i - 1][1] and y == w
    if cmd == "rbigram":
        return x == w and y == t[i + 1][0]
    if cmd == "prevbigram":
        return x == t[i - 2][1] and y == t[i - 1][1]
    if cmd == "prev1or2wd":
        return x in (t[i - 1][0], t[i - 2][0])
    if cmd == "nextwd":
        return x == t[i + 1][0]
    if cmd == "nextbigram":
        return x == t[i + 1][1] and y == t[i + 2][1]
    if cmd == "prev1or2tag":
        return x in (t[i - 1][1], t[i - 2][1])
    if cmd == "prev1or2or3tag":
        return x in (t[i - 1][1], t[i - 2][1], t[i - 3][1])
    if cmd == "lbigram":
        return x == t[i - 1][0] and y == w
    if cmd == "next1or2tag":
        return x in (t[i + 1][1], t[i + 2][1])
    if cmd == "next1or2or3tag":
        return x in (t[i + 1][1], t[i + 2][1], t[i + 3][1])
    if cmd == "wdand2tagaft":
        return x == w and y == t[i + 2][1]
    if cmd == "wdand2aft":
        return x == w and y == t[i + 2][0]
    if cmd == "wdand2tagbfr":
        return x == t[i - 2][1] and y == w
    if cmd == "prev2tag":
        return x == t[i - 2][1]
    if cmd == "next2tag":
        return x == t[i + 2][1]
    if cmd == "next1or2wd":
        return x in (t[i + 1][0], t[i + 2][0])
    if cmd == "prevwdtag":
        return x == t[i - 1][0] and y == t[i - 1][1]
    if cmd == "nextwdtag":
        return x == t[i + 1][0] and y == t[i + 1][1]
    if cmd == "next1or2or3wd":
        return x in (t[i + 1][0], t[i + 2][0], t[i + 3][0])
    if cmd == "prev1or2or3wd":
        return x in (t[i - 1][0], t[i - 2][0], t[i - 3][0])
    del tg
    return False


def _next_rule(r: _Rules, tag: str, after: int) -> int | None:
    best = None
    for indexes in (r.by_tag.get(tag, ()), r.any_tag):
        k = bisect.bisect_right(indexes, after)  # type: ignore[arg-type]
        if k < len(indexes) and (best is None or indexes[k] < best):
            best = indexes[k]
    return best


def tag(words: list[str]) -> list[str]:
    """Penn Treebank tags of `words` (one sentence); all "NN" when the data is missing."""
    r = _rules()
    if r is None:
        return ["NN"] * len(words)
    lex = r.lexicon
    tags: list[str | None] = [
        lex.get(w) or (lex.get(w.lower()) if i == 0 or not w[:1].isupper() else None)
        for i, w in enumerate(words)]
    for i, w in enumerate(words):
        if tags[i] is None:
            tags[i] = _unknown(r, w, words[i - 1] if i else None,
                               words[i + 1] if i + 1 < len(words) else None)
    t = [list(_PAD)] * 3 + [[w, tg] for w, tg in zip(words, tags, strict=True)] + [
        list(_PAD)] * 3
    for i in range(3, len(t) - 3):
        at = -1
        while True:
            k = _next_rule(r, t[i][1], at)
            if k is None:
                break
            rule = r.context[k]
            if _fires(rule, t, i):
                t[i] = [t[i][0], rule[1]]
            at = k
    out = [x[1] for x in t[3:-3]]
    for i, w in enumerate(words):  # what the contextual rules must not undo (see _keep)
        out[i] = _keep(w, tags[i] or out[i], out[i])
    return out


#: closed-class words: their lexicon tag is right whatever the context rules say
_CLOSED = {"the": "DT", "a": "DT", "an": "DT", "no": "DT"}


def _keep(word: str, before: str, after: str) -> str:
    """The contextual rules were learned on edited news text, where a capitalised run is a
    title: after a name they turn "no", "longer", "directly" into proper nouns and an unknown
    capitalised word ("Kestrel") into an adjective. A lowercase word is never a proper noun,
    an unknown capitalised word stays one, an article stays an article."""
    if word.lower() in _CLOSED:
        return _CLOSED[word.lower()]
    if after in ("NNP", "NNPS") and word[:1].islower():
        return before
    if before == "NNP" and word[:1].isupper() and not after.startswith("NN"):
        return before
    if after == "VBG" and not word.lower().endswith("ing"):
        return before  # "the backup *job*"
    return after
