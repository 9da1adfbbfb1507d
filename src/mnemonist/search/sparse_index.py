"""An in-memory inverted index over term ids with float weights (learned sparse recall).

Structure: a compressed posting list (CSR) built at compaction — `starts[t]..starts[t+1]` in
`post_doc` / `post_weight` are the documents holding term `t` and their weights — plus a small
*delta* of documents added since, scored directly, and tombstones for documents removed or
replaced since (their postings stay until the next compaction, masked out by `alive`). A
query touches only the postings of its own terms (a few hundred thousand floats at 10k
memories), so recall cost grows with the postings of the query's terms, not with the corpus
times the vocabulary. Compaction runs when the delta outgrows `max(COMPACT_MIN, N/4)`, or
when tombstones are a quarter of the documents.

Weights are whatever the writer gives per (document, term): SPLADE term weights here;
precomputed BM25 term weights (idf × saturated tf) would fit the same structure, scored by
the same dot product, which is why nothing in it is SPLADE-specific. The truth lives in
`sparse_terms` (store/sparse.py); this index is rebuilt from it at start and updated after
each commit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

import numpy as np

COMPACT_MIN = 2048

Doc = tuple[int, "str | None", np.ndarray, np.ndarray]  # seq, project, terms, weights


class SparseIndex:
    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self._lock = threading.RLock()
        self._docs: dict[int, Doc] = {}  # every live document: the truth for compaction
        self._project_codes: dict[str | None, int] = {None: 0}
        # compacted part
        self._seqs = np.zeros(0, dtype=np.int64)
        self._projects = np.zeros(0, dtype=np.int32)
        self._alive = np.zeros(0, dtype=bool)
        self._pos: dict[int, int] = {}
        self._starts = np.zeros(vocab_size + 1, dtype=np.int64)
        self._post_doc = np.zeros(0, dtype=np.int32)
        self._post_weight = np.zeros(0, dtype=np.float32)
        self._dead = 0
        # documents added or replaced since the last compaction
        self._delta: dict[int, Doc] = {}
        self._delta_flat: tuple[np.ndarray, np.ndarray, np.ndarray, list[Doc]] | None = None
        #: called with the seqs of every add, replace, removal or project change (the
        #: session vectors of `search/session_splade.py` follow the index this way)
        self.listeners: list[Callable[[list[int]], None]] = []

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, seq: int) -> bool:
        return seq in self._docs

    def _code(self, project: str | None) -> int:
        code = self._project_codes.get(project)
        if code is None:
            code = self._project_codes[project] = len(self._project_codes)
        return code

    # -- changes -------------------------------------------------------------------------
    def add_many(self, docs: Iterable[Doc]) -> None:
        changed: list[int] = []
        with self._lock:
            for seq, project, terms, weights in docs:
                terms = np.asarray(terms, dtype=np.int32)
                if terms.size and (terms.min() < 0 or terms.max() >= self.vocab_size):
                    raise ValueError(f"memory {seq}: term id outside the vocabulary")
                doc = (seq, project, terms, np.asarray(weights, dtype=np.float32))
                self._bury(seq)
                self._docs[seq] = doc
                self._delta[seq] = doc
                self._delta_flat = None
                changed.append(seq)
            self._maybe_compact()
        self._tell(changed)

    def add(self, seq: int, project: str | None, terms: np.ndarray, weights: np.ndarray) -> None:
        self.add_many([(seq, project, terms, weights)])

    def remove(self, seq: int) -> None:
        with self._lock:
            self._docs.pop(seq, None)
            if self._delta.pop(seq, None) is not None:
                self._delta_flat = None
            self._bury(seq)
            self._maybe_compact()
        self._tell([seq])

    def set_project(self, seq: int, project: str | None) -> None:
        with self._lock:
            doc = self._docs.get(seq)
            if doc is None:
                return
            self._docs[seq] = (seq, project, doc[2], doc[3])
            if seq in self._delta:
                self._delta[seq] = self._docs[seq]
                self._delta_flat = None
            pos = self._pos.get(seq)
            if pos is not None:
                self._projects[pos] = self._code(project)
        self._tell([seq])

    def _tell(self, seqs: list[int]) -> None:
        if seqs:
            for listener in self.listeners:
                listener(seqs)

    def seqs(self) -> list[int]:
        """Every indexed document."""
        with self._lock:
            return list(self._docs)

    def doc(self, seq: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The document's (terms, weights), or None when it is not indexed."""
        with self._lock:
            doc = self._docs.get(seq)
        return None if doc is None else (doc[2], doc[3])

    def _bury(self, seq: int) -> None:
        pos = self._pos.pop(seq, None)
        if pos is not None and self._alive[pos]:
            self._alive[pos] = False
            self._dead += 1

    def _maybe_compact(self) -> None:
        n = len(self._docs)
        if len(self._delta) > max(COMPACT_MIN, n // 4) or self._dead > max(COMPACT_MIN, n // 4):
            self.compact()

    def compact(self) -> None:
        """Rebuild the posting lists from every live document; the delta empties."""
        with self._lock:
            docs = list(self._docs.values())
            lengths = np.array([d[2].size for d in docs], dtype=np.int64)
            terms = np.concatenate([d[2] for d in docs]) if docs else np.zeros(0, np.int32)
            weights = np.concatenate([d[3] for d in docs]) if docs else np.zeros(0, np.float32)
            owner = np.repeat(np.arange(len(docs), dtype=np.int32), lengths)
            order = np.argsort(terms, kind="stable")
            self._post_doc = owner[order]
            self._post_weight = weights[order]
            counts = np.bincount(terms, minlength=self.vocab_size)
            self._starts = np.zeros(self.vocab_size + 1, dtype=np.int64)
            np.cumsum(counts, out=self._starts[1:])
            self._seqs = np.array([d[0] for d in docs], dtype=np.int64)
            self._projects = np.array([self._code(d[1]) for d in docs], dtype=np.int32)
            self._alive = np.ones(len(docs), dtype=bool)
            self._pos = {int(s): i for i, s in enumerate(self._seqs)}
            self._dead = 0
            self._delta = {}
            self._delta_flat = None

    # -- queries -------------------------------------------------------------------------
    def search(self, terms: np.ndarray, weights: np.ndarray, k: int, *,
               project: str | None = None, filter_project: bool = False) -> list[tuple[int, float]]:
        """The k documents with the largest dot product with the query (score > 0), best
        first; with `filter_project`, only those of `project`."""
        terms = np.asarray(terms, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float32)
        with self._lock:
            n = len(self._seqs)
            scores = np.zeros(n, dtype=np.float32)
            if n and terms.size:
                lo, hi = self._starts[terms], self._starts[terms + 1]
                sizes = hi - lo
                if sizes.sum():
                    idx = np.repeat(lo - np.cumsum(np.r_[0, sizes[:-1]]), sizes) + np.arange(
                        sizes.sum())
                    contrib = self._post_weight[idx] * np.repeat(weights, sizes)
                    scores = np.bincount(self._post_doc[idx], weights=contrib,
                                         minlength=n).astype(np.float32)
            ok = self._alive & (scores > 0)
            if filter_project:
                code = self._project_codes.get(project)
                ok &= self._projects == (code if code is not None else -1)
            cand = np.flatnonzero(ok)
            if cand.size > k:
                cand = cand[np.argpartition(-scores[cand], k - 1)[:k]]
            out = [(int(self._seqs[i]), float(scores[i])) for i in cand]
            if self._delta:
                out += self._search_delta(self._dense(terms, weights), project, filter_project)
        out.sort(key=lambda t: -t[1])
        return out[:k]

    def _dense(self, terms: np.ndarray, weights: np.ndarray) -> np.ndarray:
        dense = np.zeros(self.vocab_size, dtype=np.float32)
        dense[np.asarray(terms, dtype=np.int64)] = weights
        return dense

    def _search_delta(self, query: np.ndarray, project: str | None,
                      filter_project: bool) -> list[tuple[int, float]]:
        """The delta scored in one pass over its concatenated postings."""
        if self._delta_flat is None:
            docs = list(self._delta.values())
            lengths = np.array([d[2].size for d in docs], dtype=np.int64)
            self._delta_flat = (
                np.concatenate([d[2] for d in docs]).astype(np.int64),
                np.concatenate([d[3] for d in docs]),
                np.repeat(np.arange(len(docs)), lengths), docs)
        terms, weights, owner, docs = self._delta_flat
        scores = np.bincount(owner, weights=query[terms] * weights, minlength=len(docs))
        return [(d[0], float(sc)) for d, sc in zip(docs, scores.tolist(), strict=True)
                if sc > 0 and (not filter_project or d[1] == project)]

    def scores(self, terms: np.ndarray, weights: np.ndarray,
               seqs: Iterable[int]) -> dict[int, float]:
        """The dot product for the given documents (those indexed)."""
        query = self._dense(terms, weights)
        out: dict[int, float] = {}
        with self._lock:
            for seq in seqs:
                doc = self._docs.get(seq)
                if doc is not None:
                    out[seq] = float(query[doc[2]] @ doc[3])
        return out
