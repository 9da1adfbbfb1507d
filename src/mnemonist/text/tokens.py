"""Tokenisation and safe SQLite FTS5 query building.

User text is always treated as data: every term handed to FTS5 is a double-quoted
string, so FTS5 operators (``AND``/``OR``/``NOT``/``NEAR``), prefix ``*``, initial
token ``^``, column filters (``col:``), ``-`` and parentheses lose their meaning.
"""

from __future__ import annotations

import itertools
import re
import string
import unicodedata

# Common English function words (articles, pronouns, auxiliaries, prepositions,
# conjunctions, question words) and the stems left by splitting contractions.
_STOP_WORDS_TEXT = """
    a about above across after again against all along am among an and any are aren around as at
    be because been before being below between both but by
    can cannot could couldn
    did didn do does doesn doing don down during
    each either else ever every
    few for from further
    had hadn has hasn have haven having he her here hers herself him himself his how
    i if in into is isn it its itself
    just
    let ll
    may me might more most much must mustn my myself
    neither no nor not now
    of off often on once only or other ought our ours ourselves out over own
    re
    same shall shan she should shouldn so some such
    than that the their theirs them themselves then there these they this those
    through to too toward towards
    under until up upon us
    ve very
    was wasn we were weren what when where whether which while who whom whose why
    will with within without won would wouldn
    yet you your yours yourself yourselves
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())

MAX_QUERY_TERMS = 64
_PUNCTUATION = string.punctuation + "“”‘’…"
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_OPERATORS = frozenset({"OR", "AND"})


def _is_word_char(ch: str) -> bool:
    return ch.isalnum()


def _is_mark(ch: str) -> bool:
    # Combining marks continue a token: "é" as e + U+0301, Devanagari vowel signs, ...
    return unicodedata.category(ch).startswith("M")


def tokenize(text: str) -> list[str]:
    """Lowercased runs of letters/digits (combining marks included); 1-char tokens dropped.

    The underscore and all punctuation separate tokens, like FTS5's unicode61 tokenizer.
    """
    if text.isascii():  # the common case, 4× faster; the same tokens as the general loop
        return [t for t in _ASCII_TOKEN.findall(text.lower()) if len(t) > 1]
    return tokenize_any(text)


def tokenize_any(text: str) -> list[str]:
    """`tokenize` for any text, one character at a time."""
    tokens: list[str] = []
    current: list[str] = []
    for ch in text.lower():
        if _is_word_char(ch) or (current and _is_mark(ch)):
            current.append(ch)
        elif current:
            tokens.append("".join(current))
            current = []
    if current:
        tokens.append("".join(current))
    return [t for t in tokens if len(t) > 1]


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def content_tokens(text: str) -> list[str]:
    """Tokens that carry meaning: stop words removed, first occurrences kept in order."""
    return _dedupe([t for t in tokenize(text) if t not in STOP_WORDS])


def quote_fts_term(term: str) -> str:
    """Quote one term as an FTS5 string (embedded double quotes are doubled)."""
    return '"' + term.replace('"', '""') + '"'


def remove_words(text: str, words: set[str]) -> str:
    """The text without the given (lowercase) words, a possessive "'s" included; the rest is
    kept as written, a dropped word's trailing punctuation too. Empty when no word is left."""
    kept: list[str] = []
    for piece in text.split():
        core = _POSSESSIVE.sub("", piece.strip(_PUNCTUATION)).lower()
        if core in words:
            tail = piece[len(piece.rstrip(_PUNCTUATION)):]
            if tail and kept:
                kept[-1] += tail
            continue
        kept.append(piece)
    out = " ".join(kept)
    return out if tokenize(out) else ""


def query_phrases(query: str, *, limit: int = 16) -> list[str]:
    """The query's two-word phrases: adjacent tokens that are both content words ("support
    group", "charity tournament"), at most `limit`."""
    toks = tokenize(query)
    return _dedupe([f"{a} {b}" for a, b in itertools.pairwise(toks)
                    if a not in STOP_WORDS and b not in STOP_WORDS])[:limit]


def fts_phrase_query(query: str, *, limit: int = 16) -> str | None:
    """FTS5 OR of the query's two-word phrases (`query_phrases`). None when it has none."""
    pairs = query_phrases(query, limit=limit)
    if not pairs:
        return None
    return " OR ".join(quote_fts_term(p) for p in pairs)


def fts_match_query(query: str, *, operator: str = "OR") -> str | None:
    """Build a safe FTS5 MATCH expression from arbitrary user text, or None if it has no terms.

    Uses the content tokens of ``query`` (or all its tokens when every one is a stop
    word), at most ``MAX_QUERY_TERMS`` of them, each quoted, joined by ``operator``.
    """
    op = operator.upper()
    if op not in _OPERATORS:
        raise ValueError(f"operator must be 'OR' or 'AND', not {operator!r}")
    terms = content_tokens(query) or _dedupe(tokenize(query))
    if not terms:
        return None
    return f" {op} ".join(quote_fts_term(t) for t in terms[:MAX_QUERY_TERMS])
