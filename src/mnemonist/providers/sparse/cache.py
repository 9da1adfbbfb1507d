"""An on-disk cache of SPLADE expansions keyed by model and text (`sparse.cache_dir`).

Encoding is the slow part of the sparse leg (a few thousand word pieces per second on one
core). A benchmark that builds a fresh store per run re-encodes the same texts each time; with
a cache directory the second run reads them back instead. A plain SQLite file, written with
one short transaction per batch; safe to delete at any time.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import numpy as np

from mnemonist.providers.sparse.splade import SparseVector, SpladeEncoder


class CachedEncoder:
    def __init__(self, encoder: SpladeEncoder, folder: Path) -> None:
        self.encoder = encoder
        self.model_id = encoder.model_id
        folder.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(folder / "splade-cache.sqlite3", check_same_thread=False)
        self._conn.execute("CREATE TABLE IF NOT EXISTS enc (key TEXT PRIMARY KEY,"
                           " terms BLOB NOT NULL, weights BLOB NOT NULL)")
        self._lock = threading.Lock()

    @property
    def vocab_size(self) -> int:
        return self.encoder.vocab_size

    def _key(self, text: str) -> str:
        raw = f"{self.model_id}\0{self.encoder.max_tokens}\0{text}".encode()
        return hashlib.sha256(raw).hexdigest()

    def encode(self, texts: list[str]) -> list[SparseVector]:
        keys = [self._key(t) for t in texts]
        found: dict[str, SparseVector] = {}
        with self._lock:
            for key in set(keys):
                row = self._conn.execute("SELECT terms, weights FROM enc WHERE key = ?",
                                         (key,)).fetchone()
                if row:
                    found[key] = SparseVector(np.frombuffer(row[0], dtype="<i4"),
                                              np.frombuffer(row[1], dtype="<f4"))
        todo = [(k, t) for k, t in zip(keys, texts, strict=True) if k not in found]
        if todo:
            fresh = self.encoder.encode([t for _, t in todo])
            with self._lock, self._conn:
                for (key, _), vec in zip(todo, fresh, strict=True):
                    found[key] = vec
                    self._conn.execute(
                        "INSERT OR REPLACE INTO enc VALUES (?, ?, ?)",
                        (key, vec.terms.astype("<i4").tobytes(),
                         vec.weights.astype("<f4").tobytes()))
        return [found[k] for k in keys]
