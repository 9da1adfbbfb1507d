"""FTS5's own tokens for a text, as small integer ids, without asking FTS5 for every text.

The keyword mirror (search/keyword_mirror.py) must see a text exactly as the FTS5 index it
mirrors does ('porter unicode61': Unicode letters and digits make words, case folded,
diacritics removed, then the Porter stemmer). Splitting into words is cheap in Python; the
folding and stemming are FTS5's, learned once per distinct word: new words are put through an
in-memory FTS5 table with the same tokenizer and its `fts5vocab` instance table says which
token(s) each became. So a word stems here exactly as SQLite stems it, at the cost of one
small insert per word the mirror has never seen.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from itertools import chain

from mnemonist.store import fts

#: a run of Unicode letters and digits (unicode61's token characters; '_' separates)
WORD = re.compile(r"[^\W_]+")


class FtsWords:
    """Word -> token ids, learned from FTS5 ('porter unicode61') and remembered."""

    def __init__(self) -> None:
        self._db = fts.tokenizer()
        self._lock = threading.Lock()
        self.token_ids: dict[str, int] = {}
        #: a word FTS5 makes into exactly one token -> that token's id (nearly every word)
        self._single: dict[str, int] = {}
        #: a word FTS5 makes into no token or several -> their ids
        self._other: dict[str, tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self.token_ids)

    def learn(self, words: Iterable[str]) -> None:
        """Put the words not seen yet through FTS5's tokenizer."""
        with self._lock:
            new = [w for w in set(words) if w not in self._single and w not in self._other]
            if not new:
                return
            tokens = fts.tokens_of(self._db, new)
            ids = self.token_ids
            for i, word in enumerate(new, 1):
                these = tuple(ids.setdefault(t, len(ids)) for t in tokens.get(i, ()))
                if len(these) == 1:
                    self._single[word] = these[0]
                else:
                    self._other[word] = these

    def encode_many(self, texts: list[str]) -> list[list[int]]:
        """`encode` for many texts, the words new to all of them learned at once."""
        out: list[list[int]] = []
        missing: dict[int, list[str]] = {}
        single = self._single
        for i, text in enumerate(texts):
            words = WORD.findall(text.lower())
            try:
                out.append([single[w] for w in words])
            except KeyError:
                out.append([])
                missing[i] = words
        if missing:
            self.learn(chain.from_iterable(missing.values()))
            for i, words in missing.items():
                out[i] = self._ids(words)
        return out

    def encode(self, text: str) -> list[int]:
        """The token ids of `text` in order, as FTS5 would index it."""
        words = WORD.findall(text.lower())
        single = self._single
        try:
            return [single[w] for w in words]
        except KeyError:
            self.learn(words)
        return self._ids(words)

    def _ids(self, words: list[str]) -> list[int]:
        out: list[int] = []
        for w in words:
            one = self._single.get(w)
            if one is not None:
                out.append(one)
            else:
                out.extend(self._other[w])
        return out
