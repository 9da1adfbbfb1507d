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

import functools
import hashlib
import importlib.util
import logging
import re
from collections.abc import Callable
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
#: tokens: words with inner . - ' (Next.js, on-call, O'Brien), "n't", "'s", numbers, punctuation
_TOKEN = re.compile(r"['’]s\b|\w+(?:[.\-/]\w+)*|[^\w\s]")


class Token(NamedTuple):
    text: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Words, clitics ("do" + "n't", "Caroline" + "'s"), numbers and punctuation, with their
    offsets in `text`."""
    out = [Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    if "'t" not in text and "’t" not in text:
        return out
    fixed: list[Token] = []  # "don", "'", "t" -> "do", "n't"
    k = 0
    while k < len(out):
        t = out[k]
        if (k + 2 < len(out) and t.text[-1:] in "nN" and out[k + 1].text in "'’"
                and out[k + 2].text in ("t", "T") and t.end == out[k + 1].start
                and out[k + 1].end == out[k + 2].start and len(t.text) > 1):
            fixed.append(Token(t.text[:-1], t.start, t.end - 1))
            fixed.append(Token("n't", t.end - 1, out[k + 2].end))
            k += 3
            continue
        fixed.append(t)
        k += 1
    return fixed


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
        #: (from-tag or None, affix or word, command, to-tag), in file order
        self.morph: list[tuple[str | None, str, str, str]] = []
        for rule in self.morphology:
            if rule[1].lower() in _MORPH:  # "ly hassuf 2 RB x"
                self.morph.append((None, rule[0], rule[1].lower(), rule[-2]))
            elif rule[2].lower().lstrip("f") in _MORPH:  # "NN s fhassuf 1 NNS x"
                self.morph.append((rule[0], rule[1], rule[2].lower().lstrip("f"), rule[-2]))
        #: some rule for unknown words reads the words beside them
        self.neighbours = any("good" in r[1].lower() or "good" in r[2].lower()
                              for r in self.morphology)
        context = [r for r in _rows(files["en-context.txt"]) if len(r) >= 4]
        compiled = [(i, r[0], r[1], _compile(r)) for i, r in enumerate(context)]
        tags = {r[0] for r in context} - {"*"}
        #: from-tag -> [(rule index, to-tag, test)], the "*" rules merged in, in file order
        self.by_tag: dict[str, list[_Compiled]] = {
            tag: [(i, to, test) for i, frm, to, test in compiled
                  if frm in (tag, "*") and test is not None] for tag in tags}
        self.any_tag: list[_Compiled] = [(i, to, test) for i, frm, to, test in compiled
                                         if frm == "*" and test is not None]


_Test = Callable[[list[str], list[str]], bool]
_Compiled = tuple[int, str, _Test]


def _compile(rule: list[str]) -> _Test | None:
    """The rule's condition over a window of 7 words `w` and tags `t`, the token at 3."""
    cmd, x = rule[2].lower(), rule[3]
    y = rule[4] if len(rule) > 4 else ""
    tests: dict[str, _Test] = {
        "prevtag": lambda w, t: t[2] == x,
        "nexttag": lambda w, t: t[4] == x,
        "surroundtag": lambda w, t: t[2] == x and t[4] == y,
        "wdnexttag": lambda w, t: w[3] == x and t[4] == y,
        "prevwd": lambda w, t: w[2] == x,
        "curwd": lambda w, t: w[3] == x,
        "wdprevtag": lambda w, t: t[2] == x and w[3] == y,
        "rbigram": lambda w, t: w[3] == x and w[4] == y,
        "prevbigram": lambda w, t: t[1] == x and t[2] == y,
        "prev1or2wd": lambda w, t: x in (w[2], w[1]),
        "nextwd": lambda w, t: w[4] == x,
        "nextbigram": lambda w, t: t[4] == x and t[5] == y,
        "prev1or2tag": lambda w, t: x in (t[2], t[1]),
        "prev1or2or3tag": lambda w, t: x in (t[2], t[1], t[0]),
        "lbigram": lambda w, t: w[2] == x and w[3] == y,
        "next1or2tag": lambda w, t: x in (t[4], t[5]),
        "next1or2or3tag": lambda w, t: x in (t[4], t[5], t[6]),
        "wdand2tagaft": lambda w, t: w[3] == x and t[5] == y,
        "wdand2aft": lambda w, t: w[3] == x and w[5] == y,
        "wdand2tagbfr": lambda w, t: t[1] == x and w[3] == y,
        "prev2tag": lambda w, t: t[1] == x,
        "next2tag": lambda w, t: t[5] == x,
        "next1or2wd": lambda w, t: x in (w[4], w[5]),
        "prevwdtag": lambda w, t: w[2] == x and t[2] == y,
        "nextwdtag": lambda w, t: w[4] == x and t[4] == y,
        "next1or2or3wd": lambda w, t: x in (w[4], w[5], w[6]),
        "prev1or2or3wd": lambda w, t: x in (w[2], w[1], w[0]),
    }
    return tests.get(cmd)


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
    if not r.neighbours:
        prev = nxt = None  # no rule looks at the neighbours: one answer per word
    return _unknown_cached(word, prev, nxt)


@functools.lru_cache(maxsize=65536)
def _unknown_cached(word: str, prev: str | None, nxt: str | None) -> str:
    r = _rules()
    assert r is not None
    return _guess(r, word, prev, nxt)


def _guess(r: _Rules, word: str, prev: str | None, nxt: str | None) -> str:
    if word.istitle() or (word.isupper() and len(word) > 1):
        return "NNP"
    if _NUMBER.match(word):
        return "CD"
    if not word.isalpha() and any(c.isalpha() for c in word):
        return "NN"  # an identifier, a slug, a ticket: "sable-comet", "GLAC-1825", "v2"
    tag = "NN"
    lex = r.lexicon
    for from_tag, x, cmd, to in r.morph:
        if from_tag is not None and tag != from_tag:
            continue
        if ((cmd == "hassuf" and word.endswith(x)) or (cmd == "char" and x in word)
                or (cmd == "haspref" and word.startswith(x))
                or (cmd == "addpref" and x + word in lex)
                or (cmd == "addsuf" and word + x in lex)
                or (cmd == "deletepref" and word.startswith(x) and word[len(x):] in lex)
                or (cmd == "deletesuf" and word.endswith(x) and word[:-len(x)] in lex)
                or (cmd == "goodleft" and x == nxt) or (cmd == "goodright" and x == prev)):
            tag = to
    return tag


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
    ws = ["STAART"] * 3 + words + ["STAART"] * 3
    ts = ["STAART"] * 3 + [str(tg) for tg in tags] + ["STAART"] * 3
    by_tag, any_tag = r.by_tag, r.any_tag
    for i in range(3, len(ws) - 3):
        near_w, near_t = ws[i - 3:i + 4], ts[i - 3:i + 4]
        after = -1
        changed = True
        while changed:  # the tag changed: go on with the new tag's rules after that one
            changed = False
            for index, to, test in by_tag.get(near_t[3], any_tag):
                if index > after and test(near_w, near_t):
                    near_t[3] = to
                    after = index
                    changed = True
                    break
        ts[i] = near_t[3]
    out = ts[3:-3]
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
