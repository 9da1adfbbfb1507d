"""People the store knows as authors (`who`), and their names taken out of a query.

A query that names an author ("what has Melanie painted?") lifts that author's memories
(`search.who_weight`). The name then has done its work; left in the text the vector leg
embeds, it pulls the query towards every memory that mentions the person, whatever it says
(a small embedding model weighs names heavily). With `search.who_strip` the vector leg embeds
"what has painted?" instead, while the keyword leg keeps the name (measured on LoCoMo:
docs/benchmarks.md).
"""

from __future__ import annotations

import sqlite3
import threading

from mnemonist.store import recall_reads
from mnemonist.text.tokens import remove_words, tokenize


class KnownAuthors:
    """The distinct `who` values, read incrementally by `seq` (new rows only), so a recall
    after a write costs one indexed range query; a `who` that modify gives an old row is
    `add`ed by the service. A name no longer used stays known — harmless: the lift finds no
    memory of it, and the vector leg embeds the query without a word that names no author.

    On PostgreSQL several daemons write: another daemon's modify of `who`, and a row whose
    seq was drawn before but committed after a higher one (concurrent transactions), would
    escape the seq range; every daemon's change listener (store/postgres/notify.py) `add`s
    each author written anywhere, and `reload`s all after a gap in the notifications."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: dict[str, frozenset[str]] = {}  # who -> its words
        self._last_seq = 0

    def refresh(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            last = self._last_seq
        rows = recall_reads.authors_after(conn, last)
        if not rows:
            return
        with self._lock:
            for who, seq in rows:
                words = frozenset(tokenize(who))
                if words:
                    self._names[who] = words
                self._last_seq = max(self._last_seq, seq)

    def reload(self, conn: sqlite3.Connection) -> None:
        """Every author anew (a full read): on PostgreSQL after the change listener
        (re)connects, when notifications may have been missed."""
        names: dict[str, frozenset[str]] = {}
        last = 0
        for who, seq in recall_reads.authors(conn):
            words = frozenset(tokenize(who))
            if words:
                names[who] = words
            last = max(last, seq)
        with self._lock:
            self._names.update(names)
            self._last_seq = max(self._last_seq, last)

    def add(self, who: str) -> None:
        words = frozenset(tokenize(who))
        if words:
            with self._lock:
                self._names[who] = words

    def named_in(self, query: str) -> set[str]:
        """The words of every author all of whose words appear in the query."""
        words = set(tokenize(query))
        with self._lock:
            names = list(self._names.values())
        out: set[str] = set()
        for parts in names:
            if parts <= words:
                out |= parts
        return out

    def strip(self, conn: sqlite3.Connection, query: str) -> str:
        """The query without the names of the authors it names (itself if nothing is left)."""
        self.refresh(conn)
        named = self.named_in(query)
        if not named:
            return query
        return remove_words(query, named) or query
