"""An in-memory copy of the context keyword index that ranks BM25 in NumPy.

Why: FTS5 ranks an OR query by walking every row that matches any of its words, and bm25()
counts each word's rows again for its idf. Past a few hundred thousand memories a query of
common words matches a large share of the index (477,000 of 1,000,000 rows for the worst
queries of `bench scale`), and the context keyword leg alone took 260 ms at the 95th
percentile, the phrase leg 140 ms more. Here each word's postings (document slot, count) are
one contiguous NumPy slice, so the same BM25 costs a gather and a sum over those slices:
milliseconds at a million memories.

What it holds: for every row of `memory_context` (the text the context index sees), its
length in tokens and, per token and per pair of adjacent tokens, how often it occurs
(search/keyword_postings.py). Tokens are FTS5's own (search/fts_words.py), so a query ranks
as it would in FTS5: the same N, average length, idf, k1 = 1.2 and b = 0.75, phrase counts
as FTS5 counts phrase instances. FTS5 stays the truth: this index is rebuilt from it, kept in
step by the keeper (search/keyword_mirror_keeper.py), and the keyword leg falls back to FTS5
whenever this index is not caught up.

Documents live in slots; a changed document takes a new slot and its old one is marked
dead. Slots are assigned in increasing order, and each segment covers a range of them:
the segments built at start hold `SEGMENT_DOCS` documents each; each catch-up adds a small
one, and small neighbours merge (dropping dead postings) while the older one is not more
than twice the newer, so a long-running daemon holds a few dozen segments at most.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable

import numpy as np

from mnemonist.search.fts_words import FtsWords
from mnemonist.search.keyword_postings import Segment, batch_of, pair_key

K1, B = 1.2, 0.75  # FTS5's bm25() constants
SEGMENT_DOCS = 50_000
#: a segment rebuilt without its dead postings once this share of its documents is dead
DEAD_SHARE = 0.5


class KeywordMirror:
    def __init__(self, words: FtsWords | None = None) -> None:
        self.words = words or FtsWords()
        self._lock = threading.RLock()
        self._segments: list[Segment] = []
        self._ranges: list[tuple[int, int]] = []  # the slots [lo, hi) of each segment
        self._used = 0
        self._slot_seq = np.zeros(0, np.int64)
        self._length = np.zeros(0, np.int32)
        self._alive = np.zeros(0, bool)
        self._seq_slot = np.zeros(0, np.int32)  # by seq: its slot, or -1
        self._docs = 0
        self._tokens = 0

    # -- size -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._docs

    def stats(self) -> dict[str, int]:
        with self._lock:
            postings = sum(s.postings for s in self._segments)
            nbytes = sum(s.nbytes() for s in self._segments) + self._slot_seq.nbytes + \
                self._length.nbytes + self._alive.nbytes + self._seq_slot.nbytes
            return {"documents": self._docs, "segments": len(self._segments),
                    "postings": postings, "bytes": nbytes, "tokens": len(self.words)}

    # -- changes ----------------------------------------------------------------------------
    def load(self, rows: Iterable[tuple[int, str]], batch: int = 5_000) -> None:
        """Add documents (seq, text) in bulk: a segment per `SEGMENT_DOCS`, tokenized `batch`
        at a time (a build's transient memory is mostly one batch's token lists: at 100,000
        rows 20,000 a batch peaked 160 MiB higher than 5,000, for the same build time)."""
        pending: list[tuple[int, str]] = []
        for row in rows:
            pending.append(row)
            if len(pending) >= SEGMENT_DOCS:
                self._add_segment(pending, batch)
                pending = []
        if pending:
            self._add_segment(pending, batch)

    def apply(self, changes: list[tuple[int, str | None]]) -> None:
        """Documents changed since: (seq, its text now), text None for one removed."""
        if not changes:
            return
        with self._lock:
            killed: list[int] = []
            for seq, _ in changes:
                old = self._slot_of(seq)
                if old >= 0:
                    self._kill(old, seq)
                    killed.append(old)
            added = [(seq, text) for seq, text in dict(changes).items() if text is not None]
            if added:
                self._add_segment(added, len(added))
                self._merge_tail()
            if killed:
                self._clean(killed)

    def _slot_of(self, seq: int) -> int:
        return int(self._seq_slot[seq]) if seq < self._seq_slot.size else -1

    def _kill(self, slot: int, seq: int) -> None:
        self._alive[slot] = False
        self._seq_slot[seq] = -1
        self._docs -= 1
        self._tokens -= int(self._length[slot])

    def _add_segment(self, docs: list[tuple[int, str]], batch: int) -> None:
        lo = self._used
        self._grow(lo + len(docs), max(seq for seq, _ in docs) + 1)
        batches = []
        for start in range(0, len(docs), batch):
            encoded = []
            part = docs[start : start + batch]
            texts = self.words.encode_many([text for _, text in part])
            for i, (seq, _), ids in zip(range(lo + start, lo + start + len(part)), part, texts,
                                        strict=True):
                old = self._slot_of(seq)
                if old >= 0:  # the same seq twice in a bulk load: the later text wins
                    self._kill(old, seq)
                self._slot_seq[i] = seq
                self._length[i] = len(ids)
                self._alive[i] = True
                self._seq_slot[seq] = i
                self._docs += 1
                self._tokens += len(ids)
                encoded.append((i, ids))
            batches.append(batch_of(encoded))
        segment = Segment.build(batches)
        with self._lock:
            self._used = lo + len(docs)
            self._segments.append(segment)
            self._ranges.append((lo, self._used))

    def _grow(self, slots: int, seqs: int) -> None:
        if slots > self._slot_seq.size:
            size = max(slots, 2 * self._slot_seq.size, 1024)
            self._slot_seq = _resized(self._slot_seq, size, 0)
            self._length = _resized(self._length, size, 0)
            self._alive = _resized(self._alive, size, False)
        if seqs > self._seq_slot.size:
            self._seq_slot = _resized(self._seq_slot, max(seqs, 2 * self._seq_slot.size, 1024), -1)

    def _merge_tail(self) -> None:
        """Merge the newest segments while the older of the last two is at most twice the
        newer and together they fit `SEGMENT_DOCS`."""
        while len(self._ranges) >= 2:
            (a, b), (c, d) = self._ranges[-2], self._ranges[-1]
            if (b - a) > 2 * (d - c) or (d - a) > SEGMENT_DOCS:
                return
            merged = self._rebuilt([self._segments[-2], self._segments[-1]])
            self._segments[-2:] = [merged]
            self._ranges[-2:] = [(a, d)]

    def _clean(self, killed: list[int]) -> None:
        """Rebuild, without their dead postings, the segments now mostly dead."""
        starts = np.array([lo for lo, _ in self._ranges])
        for i in sorted(set(np.searchsorted(starts, killed, side="right") - 1)):
            lo, hi = self._ranges[i]
            if hi > lo and 1 - self._alive[lo:hi].mean() >= DEAD_SHARE:
                self._segments[i] = self._rebuilt([self._segments[i]])

    def _rebuilt(self, segments: list[Segment]) -> Segment:
        batches = []
        for segment in segments:
            keys, slots, tf = segment.as_batch()
            live = self._alive[slots]
            batches.append((keys[live], slots[live], tf[live]))
        return Segment.build(batches)

    # -- ranking ----------------------------------------------------------------------------
    def keys(self, terms: list[str]) -> list[int] | None:
        """The index keys of a query's words or two-word phrases, in order (a word FTS5
        makes into no token is left out); None when one makes three tokens or more, which
        this index cannot rank (the caller asks FTS5)."""
        out: list[int] = []
        for term in terms:
            ids = self.words.encode(term)
            if len(ids) == 1:
                out.append(ids[0])
            elif len(ids) == 2:
                out.append(pair_key(ids[0], ids[1]))
            elif ids:
                return None
        return out

    def top(self, keys: list[int], k: int,
            among: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The best k (seq, bm25) of the OR of `keys`, best first, bm25 negative as FTS5's
        (lower is better), among the given seqs only when `among` is given (scores stay
        those of the whole index, as FTS5's with a filter joined to its query). A key given
        twice counts twice, as a phrase repeated in an FTS5 query does."""
        with self._lock:
            docs = self._docs
            if docs == 0 or not keys:
                return []
            average = self._tokens / docs
            allowed = self._alive
            if among is not None:
                among = among[among < self._seq_slot.size]
                slots = self._seq_slot[among]
                allowed = np.zeros_like(self._alive)
                allowed[slots[slots >= 0]] = True
            slot_parts, weight_parts = [], []
            for key in keys:
                found = [s.lookup(key) for s in self._segments]
                slots = np.concatenate([f[0] for f in found])
                tf = np.concatenate([f[1] for f in found])
                live = self._alive[slots]
                slots, tf = slots[live], tf[live].astype(np.float64)
                if not slots.size:
                    continue
                idf = math.log((docs - slots.size + 0.5) / (slots.size + 0.5))
                idf = idf if idf > 0 else 1e-6
                if among is not None:
                    kept = allowed[slots]
                    slots, tf = slots[kept], tf[kept]
                norm = K1 * (1 - B + B * self._length[slots] / average)
                slot_parts.append(slots)
                weight_parts.append(idf * tf * (K1 + 1) / (tf + norm))
            if not slot_parts:
                return []
            slots = np.concatenate(slot_parts)
            weights = np.concatenate(weight_parts)
            if len(slot_parts) > 1 and slots.size * 16 >= self._used:  # sum per slot
                dense = np.bincount(slots, weights=weights, minlength=self._used)
                slots = np.flatnonzero(dense)
                weights = dense[slots]
            elif len(slot_parts) > 1:
                slots, inverse = np.unique(slots, return_inverse=True)
                weights = np.bincount(inverse, weights=weights)
            if slots.size > k:
                best = np.argpartition(-weights, k - 1)[:k]
                slots, weights = slots[best], weights[best]
            order = np.argsort(-weights, kind="stable")
            seqs = self._slot_seq[slots[order]]
            return [(int(s), -float(w)) for s, w in zip(seqs, weights[order], strict=True)]


def _resized(array: np.ndarray, size: int, fill: object) -> np.ndarray:
    out = np.full(size, fill, dtype=array.dtype)
    out[: array.size] = array
    return out
