"""The ranking columns of recent candidates, kept between recalls and dropped the moment a
commit changes their row.

A recall ranks ~185 candidates to return ~10, and reads for each the columns ranking uses
(`store.memories.ranking_rows`: a primary-key lookup of a wide row, and a `Memory` built from
it): about 1.4 ms of a 13 ms recall at 10,000 memories, spent mostly on the same rows again,
since the memories that match many queries are candidates of many recalls. This cache keeps
the `Memory` of the last `ROWS` candidates read (least recently used out).

Exact as the table is: it watches `memories` on the daemon's one writer connection
(`Database.watch_rows`: a temporary trigger reports every row a transaction inserts, changes
or deletes; they are handed over after the commit, before the write's caller gets its answer)
and drops those rows. A read racing a commit (its SQL ran before the commit, its rows would be
stored after the commit's drop) stores nothing: every drop moves an epoch, and a read stores
what it read only when the epoch did not move meanwhile. The recall's filters are still asked
of the table for every candidate (a lookup of seqs alone), so what the cache holds never
decides what a recall may see.

SQLite only: there every write of the home goes through this daemon's writer (one daemon per
home). On PostgreSQL other daemons write too, and recall reads the rows each time.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from typing import Any

from mnemonist.model.memory import Memory
from mnemonist.store import fts, memories
from mnemonist.store.db import Database

#: candidates' rows held: about 2 KB each with their strings (16 MB); at 10,000 memories
#: three recalls in four find a candidate's row here
ROWS = 8192
#: seqs asked of SQLite in one statement
CHUNK = 500


class RankingCache:
    def __init__(self, db: Database, size: int = ROWS) -> None:
        self._db = db
        self.size = size
        self._lock = threading.Lock()
        self._epoch = 0  # moves with every drop (see the module's docstring)
        self._rows: OrderedDict[int, Memory] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def start(self) -> None:
        self._db.watch_rows("ranked", "memories", "seq", self._changed)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"rows": len(self._rows), "size": self.size, "hits": self.hits,
                    "misses": self.misses}

    def _changed(self, seqs: list[int]) -> None:
        """After a commit: its rows go (under the writer's lock: dictionary work only)."""
        with self._lock:
            self._epoch += 1
            for seq in seqs:
                self._rows.pop(seq, None)

    def ranking_rows(self, conn: sqlite3.Connection, seqs: list[int], where: str = "1",
                     args: list[Any] | None = None) -> dict[int, Memory]:
        """What `store.memories.ranking_rows` answers: the rows of those of `seqs` whose
        memory passes `where`."""
        passing: list[int] = []
        for start in range(0, len(seqs), CHUNK):
            passing += fts.passing_seqs(conn, seqs[start : start + CHUNK], where, args or [])
        found: dict[int, Memory] = {}
        missing: list[int] = []
        with self._lock:
            epoch, rows = self._epoch, self._rows
            for seq in passing:
                m = rows.get(seq)
                if m is None:
                    missing.append(seq)
                else:
                    rows.move_to_end(seq)
                    found[seq] = m
            self.hits += len(found)
            self.misses += len(missing)
        if missing:
            read = memories.ranking_rows(conn, missing)
            found.update(read)
            with self._lock:
                if self._epoch == epoch:
                    rows.update(read)
                    while len(rows) > self.size:
                        rows.popitem(last=False)
        return found
