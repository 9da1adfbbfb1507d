"""Hint strings (prospective indexing): reading and cleaning what an LLM proposed, and a small
local generator that needs no LLM.

A hint is a short text the keyword leg searches in place of the memory's own words: for an LLM,
a question the memory answers; for the local generator, a key phrase of the memory prefixed with
who said it. Every hint is scrubbed of credentials, whitespace-collapsed, at most
`MAX_HINT_CHARS` long and holds at least one searchable token; duplicates (case-insensitive)
are dropped. Nothing here raises.

The local generator is deliberately plain, so that what it measures is the lever (a second,
short keyword document per memory, naming its speaker), not a clever NLP model:

- quoted titles ("The Night Circus", “Dune”);
- names: runs of capitalised words ("Lake Tahoe", "PostgreSQL"), a sentence's first word only
  when it is no common opener;
- key phrases: runs of up to four content words between stop words, filler and punctuation,
  ranked RAKE-style (word degree / frequency), so "sunset painting" in "I finished a sunset
  painting" is one phrase;
- each prefixed with `who` (the speaker), which the memory's text rarely contains.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mnemonist.text.normalize import collapse_whitespace
from mnemonist.text.scrub import scrub_credentials
from mnemonist.text.tokens import STOP_WORDS, tokenize

MAX_HINT_CHARS = 200
MAX_WHO_CHARS = 60
MAX_PHRASE_WORDS = 4
MAX_INPUT_CHARS = 20_000  # the local generator reads at most this much of a memory
ANSWER_KEYS = ("hints", "questions", "queries")
ITEM_KEYS = ("question", "hint", "query", "text")

#: chat filler and light verbs: they end a key phrase like stop words do
_FILLER_TEXT = """
    yeah yes yep nope oh ooh wow hey hi hello thanks thank okay ok sure well really also just
    like lol haha omg um uh hmm actually definitely totally pretty kinda gonna wanna anyway
    got get gets getting thing things stuff lot lots something anything everything nothing
    someone anyone everyone way good great nice cool awesome amazing glad sounds sound seems
    seem think know feel want going make made see say said tell told mean guess hope love loved
    maybe still even always never already one ones bit kind sort much many finally
    went go goes come came take took put done yesterday today tomorrow tonight last next
"""
FILLER: frozenset[str] = frozenset(_FILLER_TEXT.split())

#: capitalised only because a sentence starts with them
_OPENERS_TEXT = """
    yesterday today tomorrow tonight last next yes no hey hi hello thanks thank wow oh well
    sure okay ok so and but also then now please sorry congrats congratulations good great
"""
OPENERS: frozenset[str] = frozenset(_OPENERS_TEXT.split())

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_QUOTED = re.compile(r"[\"“”«»]([^\"“”«»\n]{2,80})[\"“”«»]")
_SENTENCE_END = re.compile(r"[.!?…\n;:]")
_POSSESSIVE = re.compile(r"['’]s$", re.I)
_MARKER = re.compile(r"\[REDACTED:[^\]]*\]")
_STRIP = " \t\"'`*•·-–—"


# -- cleaning -------------------------------------------------------------------------------


def clean_hint(value: object) -> str | None:
    """One hint as stored, or None (not text, empty, or nothing searchable)."""
    if not isinstance(value, str):
        return None
    text = collapse_whitespace(scrub_credentials(value).text).strip(_STRIP)
    if len(text) > MAX_HINT_CHARS:
        cut = text[:MAX_HINT_CHARS]
        space = cut.rfind(" ")
        text = (cut[:space] if space > MAX_HINT_CHARS // 2 else cut).rstrip(_STRIP)
    if not text or not tokenize(text):
        return None
    return text


def clean_hints(values: Iterable[object], limit: int) -> list[str]:
    """Cleaned, deduplicated (case-insensitively), at most `limit`."""
    out: list[str] = []
    seen: set[str] = set()
    for value in values:
        hint = clean_hint(value)
        if hint is None or hint.casefold() in seen:
            continue
        seen.add(hint.casefold())
        out.append(hint)
        if len(out) >= limit:
            break
    return out


def hints_from_answer(value: Any) -> tuple[list[object], list[str]]:
    """The candidate hints in a parsed LLM answer: a JSON array, or an object holding one under
    "hints" / "questions" / "queries"; array items may be objects with a "question" (or "hint",
    "query", "text") string. Returns (candidates, warnings); never raises."""
    warnings: list[str] = []
    if isinstance(value, dict):
        found = next((value[k] for k in ANSWER_KEYS if isinstance(value.get(k), list)), None)
        if found is None:
            return [], ["the answer has no 'hints' array: no hints"]
        value = found
    if not isinstance(value, list):
        return [], ["the answer is neither an array nor an object: no hints"]
    out: list[object] = []
    for item in value:
        if isinstance(item, dict):
            item = next((item[k] for k in ITEM_KEYS if isinstance(item.get(k), str)), None)
        if isinstance(item, str):
            out.append(item)
        else:
            warnings.append("an item that is not text was dropped")
    return out, warnings


# -- the local generator ----------------------------------------------------------------------


def _is_stop(word: str) -> bool:
    base = re.split(r"['’]", word.lower(), maxsplit=1)[0]
    return len(base) < 2 or base in STOP_WORDS or base in FILLER or base.isdigit()


def _looks_like_name(word: str, sentence_start: bool) -> bool:
    if _is_stop(word) or not word[0].isalpha():
        return False
    if word[0].isupper():
        return not (sentence_start and word.lower() in OPENERS)
    return any(c.isupper() for c in word[1:])  # iPhone, macOS


def _tokens(text: str) -> list[tuple[str, bool, bool]]:
    """(word, starts a sentence, follows punctuation) for each word of the text."""
    out: list[tuple[str, bool, bool]] = []
    prev_end = 0
    for match in _TOKEN.finditer(text):
        gap = text[prev_end:match.start()]
        start = not out or bool(_SENTENCE_END.search(gap))
        broken = start or bool(gap.strip())
        out.append((_POSSESSIVE.sub("", match.group()), start, broken))
        prev_end = match.end()
    return out


def _names(tokens: list[tuple[str, bool, bool]]) -> list[str]:
    names: list[str] = []
    run: list[str] = []
    for word, start, broken in [*tokens, ("", True, True)]:
        is_name = bool(word) and _looks_like_name(word, start)
        if run and (broken or not is_name):
            names.append(" ".join(run))
            run = []
        if is_name:
            run.append(word)
    return names


def _key_phrases(tokens: list[tuple[str, bool, bool]]) -> list[str]:
    """Runs of content words, best first (RAKE: sum of degree / frequency of their words)."""
    runs: list[list[str]] = []
    run: list[str] = []
    for word, _start, broken in [*tokens, ("", True, True)]:
        if run and (broken or not word or _is_stop(word) or len(run) >= MAX_PHRASE_WORDS):
            runs.append(run)
            run = []
        if word and not _is_stop(word):
            run.append(word)
    freq: dict[str, int] = {}
    degree: dict[str, int] = {}
    for r in runs:
        for w in r:
            key = w.lower()
            freq[key] = freq.get(key, 0) + 1
            degree[key] = degree.get(key, 0) + len(r)
    scored = []
    for i, r in enumerate(runs):
        score = sum(degree[w.lower()] / freq[w.lower()] for w in r)
        scored.append((-score, i, " ".join(r)))
    return [phrase for _s, _i, phrase in sorted(scored)]


def _words(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


def local_hints(content: str, who: str | None, limit: int) -> list[str]:
    """Deterministic hints from the memory alone: key phrases, each prefixed with `who`."""
    text = content[:MAX_INPUT_CHARS] if isinstance(content, str) else ""
    text = _MARKER.sub(" . ", scrub_credentials(text).text)  # a secret is never a phrase
    speaker = collapse_whitespace(who)[:MAX_WHO_CHARS] if isinstance(who, str) else ""
    speaker_words = _words(speaker)
    tokens = _tokens(text)
    titles = [t.strip() for t in _QUOTED.findall(text)]
    candidates = [*titles, *_names(tokens), *_key_phrases(tokens)]
    chosen: list[frozenset[str]] = []
    hints: list[str] = []
    for phrase in candidates:
        words = _words(phrase)
        if not words or words <= speaker_words or any(words <= c for c in chosen):
            continue
        chosen.append(words)
        prefix = speaker if speaker_words and not speaker_words <= words else ""
        hints.append(f"{prefix} {phrase}".strip())
    return clean_hints(hints, limit)
