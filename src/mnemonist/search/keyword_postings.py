"""Postings of an in-memory BM25 index, in the form NumPy scans fastest.

A *key* is a token id (search/fts_words.py) or a pair of adjacent token ids (a two-word
phrase): `(first + 1) << 32 | second`, above every token id. A `Segment` holds, for each of
its keys in sorted order, the document slots holding it and how often (`tf`) — compressed
sparse rows, looked up by binary search. Documents are numbered by *slot*, not by memory:
a changed document gets a new slot and its old one is marked dead by the index that owns the
segments (search/keyword_mirror.py), so a segment never changes once built.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

PAIR = 1 << 32
MAX_TF = np.iinfo(np.uint8).max  # a count past 255 scores as 255: BM25 has long saturated

#: (keys, slots, tf) of a batch of documents, one entry per (document, key)
Batch = tuple[np.ndarray, np.ndarray, np.ndarray]


def pair_key(first: int, second: int) -> int:
    return (first + 1) * PAIR + second


def batch_of(docs: list[tuple[int, list[int]]]) -> Batch:
    """The (key, slot, tf) entries of documents given as (slot, token ids in order): each
    token and each pair of adjacent tokens, counted per document."""
    lengths = np.fromiter((len(ids) for _, ids in docs), dtype=np.int64, count=len(docs))
    tokens = np.fromiter(chain.from_iterable(ids for _, ids in docs), dtype=np.int64,
                         count=int(lengths.sum()))
    local = np.repeat(np.arange(len(docs), dtype=np.int64), lengths)
    same = local[1:] == local[:-1]
    keys = np.concatenate([tokens, (tokens[:-1][same] + 1) * PAIR + tokens[1:][same]])
    owner = np.concatenate([local, local[:-1][same]])
    if keys.size == 0:
        return keys, np.zeros(0, np.int32), np.zeros(0, np.uint8)
    width = len(docs)
    if int(keys.max()) < (1 << 62) // max(width, 1):  # one sort of (key, document) numbers
        unique, tf = np.unique(keys * width + owner, return_counts=True)
        keys, owner = unique // width, unique % width
    else:
        order = np.lexsort((owner, keys))
        keys, owner = keys[order], owner[order]
        first = np.flatnonzero(np.r_[True, (keys[1:] != keys[:-1]) | (owner[1:] != owner[:-1])])
        tf = np.diff(np.r_[first, keys.size])
        keys, owner = keys[first], owner[first]
    slots = np.fromiter((s for s, _ in docs), dtype=np.int32, count=len(docs))[owner]
    return keys, slots, np.minimum(tf, MAX_TF).astype(np.uint8)


@dataclass(frozen=True)
class Segment:
    keys: np.ndarray  # int64, sorted, unique
    starts: np.ndarray  # int64, len(keys) + 1
    slots: np.ndarray  # int32
    tf: np.ndarray  # uint8

    @property
    def postings(self) -> int:
        return int(self.slots.size)

    def nbytes(self) -> int:
        return self.keys.nbytes + self.starts.nbytes + self.slots.nbytes + self.tf.nbytes

    def lookup(self, key: int) -> tuple[np.ndarray, np.ndarray]:
        i = int(np.searchsorted(self.keys, key))
        if i == self.keys.size or self.keys[i] != key:
            return _NONE
        a, b = self.starts[i], self.starts[i + 1]
        return self.slots[a:b], self.tf[a:b]

    def as_batch(self) -> Batch:
        return np.repeat(self.keys, np.diff(self.starts)), self.slots, self.tf

    @classmethod
    def build(cls, batches: list[Batch]) -> Segment:
        """One segment from batches, consumed (emptied) as they are written so that only one
        copy of the postings is held at a time, bar one batch."""
        keys = np.zeros(0, np.int64)
        for batch_keys, _, _ in batches:
            keys = np.union1d(keys, batch_keys)
        counts = np.zeros(keys.size, dtype=np.int64)
        places = []
        for batch_keys, _, _ in batches:
            where = np.searchsorted(keys, batch_keys).astype(np.int32)
            counts += np.bincount(where, minlength=keys.size)
            places.append(where)
        starts = np.zeros(keys.size + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        slots = np.empty(int(starts[-1]), dtype=np.int32)
        tf = np.empty(int(starts[-1]), dtype=np.uint8)
        cursor = starts[:-1].copy()
        while batches:
            _, batch_slots, batch_tf = batches.pop(0)
            where = places.pop(0)
            order = np.argsort(where, kind="stable")
            ranked = where[order]
            rank = np.arange(ranked.size) - np.searchsorted(ranked, ranked)
            dest = cursor[ranked] + rank
            slots[dest] = batch_slots[order]
            tf[dest] = batch_tf[order]
            cursor += np.bincount(where, minlength=keys.size)
        return cls(keys, starts, slots, tf)


_NONE = (np.zeros(0, np.int32), np.zeros(0, np.uint8))
