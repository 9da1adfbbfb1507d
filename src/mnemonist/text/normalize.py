"""Content normalisation and hashing for duplicate detection.

A port of the TypeScript original::

    storage    = content.trim().replace(/\\s+/g, " ")
    normalized = storage.toLowerCase().replace(/[.,!?;:]+$/, "")
    hash       = sha256(normalized || storage.toLowerCase())

JavaScript's ``\\s`` (and ``String.prototype.trim``) is not the same set as
Python's ``\\s`` / ``str.strip``: Python also treats U+001C..U+001F and U+0085
as whitespace, and JavaScript also treats U+FEFF (BOM) as whitespace. To keep
hashes identical to the original, the JavaScript set is spelled out here.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

# ECMAScript WhiteSpace + LineTerminator: TAB, LF, VT, FF, CR, SPACE, NBSP, the
# Unicode Zs category (U+1680, U+2000..U+200A, U+202F, U+205F, U+3000),
# LS (U+2028), PS (U+2029) and ZWNBSP (U+FEFF).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_WS_RUN = re.compile(f"[{JS_WHITESPACE}]+")
_TRAILING_PUNCT = re.compile(r"[.,!?;:]+\Z")  # \Z, not $: "$" would also match before "\n"


@dataclass(frozen=True)
class NormalizedContent:
    """The three derived forms of a piece of memory content."""

    storage: str
    normalized: str
    content_hash: str


def collapse_whitespace(text: str) -> str:
    """Trim and collapse every whitespace run to one space (JavaScript semantics)."""
    return _WS_RUN.sub(" ", text.strip(JS_WHITESPACE))


def _utf8_like_node(text: str) -> bytes:
    """UTF-8 bytes as Node's ``hash.update(string)`` produces them.

    Python strings may hold surrogate code points (JavaScript strings may hold lone
    ones). Node joins valid pairs into one character and turns lone surrogates into
    U+FFFD; strict UTF-8 encoding would raise instead.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        utf16 = text.encode("utf-16-le", "surrogatepass")
        return utf16.decode("utf-16-le", "replace").encode("utf-8")


def normalize_and_hash(content: str) -> NormalizedContent:
    """Return the storage form, the comparison form and the sha256 of the latter."""
    storage = collapse_whitespace(content)
    lowered = storage.lower()
    normalized = _TRAILING_PUNCT.sub("", lowered)
    basis = normalized or lowered
    digest = hashlib.sha256(_utf8_like_node(basis)).hexdigest()
    return NormalizedContent(storage=storage, normalized=normalized, content_hash=digest)
