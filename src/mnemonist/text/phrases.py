"""Noun phrases that name things people work with and talk about: "the checkout API", "the
nightly backup job", "Caroline's adoption agency", "the Q3 roadmap".

The name extractor (`text/entities.py`) sees capitalised names and known technologies; most of
what a team writes about is neither ("the reporting dashboard reads from the checkout API").
This reader tags each sentence (`text/tagger.py`), chunks its noun phrases and keeps those whose
head is a thing and whose modifiers pick out a particular one:

- **Head**: the last noun of the phrase, not a time, a quantity or a vague noun ("last *week*",
  "a *lot* of", "the *idea*": `phrase_words.HEAD_STOP`).
- **Modifiers**: read leftwards from the head while they identify: nouns and names ("checkout",
  "Stripe", "Q3"), classifying adjectives ("nightly", "mobile", "internal":
  `phrase_words.CLASSIFYING`), and gerunds that name a kind ("reporting", "billing"). The first
  word that only describes ("new", "slow", "great", "last") ends the phrase: "the new billing
  service" names *billing service*. A phrase needs at least one modifier: a bare common noun
  ("the database", "orders") is no entity, a single name is the name extractor's.
- **Possessor**: a name before "'s" stays in the phrase ("Caroline's adoption agency"); "my",
  "our", articles and quantifiers are dropped.
- **Canonical form**: lowercase, the head's plural folded ("worker queues" → "worker queue");
  the display keeps the words as written.

Phrases made only of capitalised words ("Bank of America") are left to the name extractor.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from mnemonist.text.entity_words import TIME_WORDS
from mnemonist.text.phrase_words import (
    CLASSIFYING,
    DETERMINERS,
    GERUND_MODIFIERS,
    HEAD_STOP,
    MODIFIER_STOP,
    RELATION_VERBS,
)
from mnemonist.text.phrase_words import words as _words
from mnemonist.text.tagger import Token, lexicon_tag, tag, tokenize

NOUNS = frozenset({"NN", "NNS", "NNP", "NNPS"})
_CHUNK_TAGS = NOUNS | {"JJ", "JJR", "JJS", "VBG", "CD", "DT", "PRP$", "PDT", "POS", "FW", "VBN"}
MAX_PHRASE_WORDS = 5
_SENTENCE_END = frozenset(".!?;")
_NAMEISH = re.compile(r"[A-Z]|\d")  # "Q3", "S3", "LGBTQ", "Stripe": a modifier that names
_ALPHA = re.compile(r"^[A-Za-z][A-Za-z\-]*$")


class Sentence(NamedTuple):
    tokens: list[Token]
    tags: list[str]
    question: bool  # ends with "?" (or opens like one): states nothing


class Phrase(NamedTuple):
    start: int  # offsets in the text
    end: int
    name: str  # as written, determiners dropped
    key: str  # canonical: lowercase, the head's plural folded
    first: int  # token indexes in its sentence (first, last)
    last: int


_NOT_HEAD = TIME_WORDS | _words("now downtown uptown here there too again already just "
                                 "instead anymore together home abroad overseas")
_OBJECT_START = frozenset({"DT", "PRP$", "NNP", "NNPS", "CD", "IN", "TO", "PRP"})
_AFTER_NOUN = frozenset({"VBZ", "VBD", "MD", ",", ".", ":", "VBP", "IN", "TO", "CC"})
_PREPOSITIONS = _words("on to from in into with by for")
#: a "." after these does not end the sentence
_ABBREVIATIONS = _words("i.e e.g etc vs approx dr mr mrs ms st inc ltd jr sr no fig")
_AUX = _words("do does did is are was were can could should would will shall may might "
                 "has have had isn't aren't")


def _clean(tokens: list[Token], text: str) -> list[Token]:
    """Speaker labels and list bullets are not words of the sentence."""
    return [t for t in tokens if t.text not in {"*", "-", "•", ">", "#", "`", '"', "“", "”"}]


#: texts whose tagged sentences are kept. Few: `prose_graph.read`, their one caller that
#: reads a text again, keeps its own answers per text; each text's tokens and tags take about
#: 5 KB, and 4,096 of them held ~20 MiB after any burst of writes
SENTENCES_KEPT = 256


@functools.lru_cache(maxsize=SENTENCES_KEPT)
def sentences(text: str) -> tuple[Sentence, ...]:
    """The text's sentences, tokenised and tagged (lines and ". ! ? ;" split them)."""
    out: list[Sentence] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        tokens = _clean(tokenize(line), line)
        tokens = [Token(t.text, t.start + offset, t.end + offset) for t in tokens]
        offset += len(line)
        run: list[Token] = []
        for t in tokens:
            run.append(t)
            if t.text in _SENTENCE_END and not (
                    t.text == "." and len(run) > 1 and run[-2].text.lower() in _ABBREVIATIONS):
                out.append(_tagged(run))
                run = []
        if run:
            out.append(_tagged(run))
    return tuple(s for s in out if s.tokens)


def _tagged(tokens: list[Token]) -> Sentence:
    words = [t.text for t in tokens]
    tags = tag(words)
    for i, w in enumerate(words):  # a capital inside a word or a digit-letter mix is a name
        if (not w[1:].islower() and (any(c.isupper() for c in w[1:]) or (
                any(c.isdigit() for c in w) and any(c.isalpha() for c in w)))) or (
                i and w[:1].isupper() and tags[i] == "NN"):
            tags[i] = "NNP"
    verb_seen = False
    for i, w in enumerate(words):
        if i and i + 1 < len(words) and _is_relation_verb(words, tags, i, verb_seen):
            tags[i] = "VBZ" if w.endswith("s") else "VBP"
        elif (i and i + 1 < len(words) and tags[i] in ("VB", "VBP")
              and tags[i - 1] in ("DT", "PRP$", "VBZ", "VBD") and tags[i + 1] in NOUNS):
            tags[i] = "NN"  # "the *deploy* API", "caches *checkout* sessions"
        elif (i >= 2 and tags[i] in ("VB", "VBP") and tags[i - 1] in NOUNS
              and tags[i - 2] in ("DT", "PRP$", "JJ", "POS")
              and (i + 1 == len(words) or tags[i + 1] in _AFTER_NOUN)):
            tags[i] = "NN"  # "the data *store* is fast", "the payments *team* at Acme"
        verb_seen = verb_seen or tags[i].startswith(("VB", "MD"))
    first = next((w.lower() for w in words if w[:1].isalnum()), "")
    question = words[-1] == "?" or (first in _AUX and words[-1] != ".")
    return Sentence(tokens, tags, question)


_NOT_PLURAL = _words("news series species means always perhaps whereas lens canvas atlas "
                     "alias bias gas kudos chaos ethos thanks")


def phrase_key(name: str) -> str:
    """The canonical form of a phrase: lowercase, whitespace collapsed, the last word's plural
    folded ("worker queues" -> "worker queue")."""
    words = name.lower().split()
    if words:
        words[-1] = singular(words[-1])
    return " ".join(words)


def _is_relation_verb(words: list[str], tags: list[str], i: int, verb_seen: bool) -> bool:
    """A verb of the relation patterns the tagger read as a noun: "the mobile app *talks* to",
    "the web client *loads* translations", "… and *stores* hits in Valkey"."""
    w = words[i]
    if tags[i] not in ("NNS", "NN", "VB", "VBP", "NNP") or not w.islower():
        return False
    if w not in RELATION_VERBS:
        # any -s word after the subject's noun, before the sentence has a verb, followed by
        # what can be an object: "the Falcon service *caches* checkout sessions" (not "the
        # worker queues *are*", not a sentence's last word)
        return (tags[i] == "NNS" and not verb_seen and tags[i - 1] in NOUNS
                and len(w) > 3 and not w.endswith("ss") and i + 1 < len(words)
                and (tags[i + 1] in _OBJECT_START | NOUNS | {"JJ"} or (
                    tags[i + 1] in ("VB", "VBP") and words[i + 1].lower() not in _AUX)))
    if tags[i - 1] == "CC":
        return verb_seen and w.endswith("s")
    if tags[i - 1] not in NOUNS:
        return False
    return (tags[i + 1] in _OBJECT_START or words[i + 1].lower() in _PREPOSITIONS
            or (w.endswith("s") and (words[i - 1][:1].isupper() or not verb_seen)))


def singular(word: str) -> str:
    """The singular of an English plural noun, by rule ("queues" → "queue", "policies" →
    "policy", "boxes" → "box"); words that are not plural come back as they are."""
    low = word.lower()
    if re.fullmatch(r"[A-Z0-9]{2,}s", word):  # "APIs", "SDKs"
        return word[:-1]
    if (len(low) <= 3 or not low.endswith("s") or low in _NOT_PLURAL
            or low.endswith(("ss", "us", "is", "'s", "ics", "ous"))):
        return word
    if low.endswith("ies") and len(low) > 4:
        return word[:-3] + ("Y" if word[-3:].isupper() else "y")
    if low.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    return word[:-1]


def _modifier(s: Sentence, i: int, determined: bool) -> bool:
    w, t = s.tokens[i].text, s.tags[i]
    low = w.lower()
    if low in MODIFIER_STOP or low in TIME_WORDS or low in DETERMINERS:
        return False
    if t in NOUNS:
        return bool(_ALPHA.match(w) or _NAMEISH.search(w))
    if t == "CD":
        return bool(re.search(r"[A-Za-z]", w))  # "Q3", not "3"
    if t in ("JJ", "VBN"):  # "the *ranking* service" read as an adjective is a gerund
        return low in CLASSIFYING or low in GERUND_MODIFIERS or (
            determined and low.endswith("ing") and len(low) > 5)
    if t == "VBG":
        return low in GERUND_MODIFIERS or determined
    return False


def _proper(word: str) -> bool:
    """A capitalised head that is a name, not a common noun written with a capital: "BackupJob",
    "Tahoe" are names; "API", "SDK" (acronyms), "Hub", "Service" are common nouns."""
    if word.isupper() or not word[:1].isupper():
        return False
    if any(c.isupper() for c in word[1:]):
        return True
    return lexicon_tag(word.lower()) not in ("NN", "NNS")


def _phrase(s: Sentence, first: int, last: int) -> Phrase | None:
    """The entity the chunk tokens[first..last] names, if any."""
    # the head: the last noun of the chunk
    head = last
    while head >= first and (s.tags[head] not in NOUNS or s.tokens[head].text.lower() in
                             _NOT_HEAD):  # "the support group yesterday", "… center downtown"
        head -= 1
    if head < first:
        return None
    hw = s.tokens[head].text
    if hw.lower() in HEAD_STOP or not (_ALPHA.match(hw) or _NAMEISH.search(hw)):
        return None
    determined = first < head and s.tokens[first].text.lower() in DETERMINERS
    start = head
    while start - 1 >= first and head - start + 1 < MAX_PHRASE_WORDS and _modifier(
            s, start - 1, determined):
        start -= 1
    possessor = None
    if start - 2 >= first and s.tags[start - 1] == "POS" and s.tags[start - 2] == "NNP":
        possessor = start - 2
    if start == head:
        return None
    words = [s.tokens[i].text for i in range(start, head + 1)]
    if _proper(hw) or (possessor is None and all(w[:1].isupper() for w in words)
                       and not hw.isupper()):
        # a name ("Okapi Systems", "the nightly BackupJob", "my friend Tasha"): the name
        # extractor's; an acronym head makes a phrase of names ("the GraphQL API")
        return None
    lo = possessor if possessor is not None else start
    display_tokens = s.tokens[lo:head + 1]
    name = "".join(
        (" " if k and display_tokens[k].start > display_tokens[k - 1].end else "") + t.text
        for k, t in enumerate(display_tokens))
    key = phrase_key(name.replace("’", "'"))
    return Phrase(display_tokens[0].start, display_tokens[-1].end, name, key, lo, head)


def sentence_phrases(s: Sentence) -> list[Phrase]:
    out: list[Phrase] = []
    n = len(s.tokens)
    i = 0
    while i < n:
        if s.tags[i] not in _CHUNK_TAGS:
            i += 1
            continue
        j = i
        while j + 1 < n and s.tags[j + 1] in _CHUNK_TAGS and not (
                s.tags[j + 1] in ("DT", "PRP$", "PDT") and s.tags[j] != "POS"):
            j += 1
        found = _phrase(s, i, j)
        if found is not None:
            out.append(found)
        i = j + 1
    return out


def noun_phrases(text: str) -> list[Phrase]:
    """The phrases `text` names (see the module docstring), in order."""
    return [p for s in sentences(text) for p in sentence_phrases(s)]
