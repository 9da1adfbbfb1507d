"""An exact in-process vector index over L2-normalised rows.

Two precisions (`search.vector_precision`):

- "float32": a NumPy matrix of the vectors themselves (4 bytes a dimension: 147 MiB at
  100,000 × 384), scanned with one BLAS product.
- "int8": the matrix holds each vector as int8 codes (round(254·x): the components of a unit
  vector of 384 dimensions stay well inside ±0.5), 1 byte a dimension (37 MiB at 100,000),
  scanned with SIMD integer dot products (`simsimd`, several times faster than the float32
  product). The codes only choose candidates: the best RESCORE × k are scored again from
  their stored float32 vectors (`exact`, read from the `embeddings` table), so the scores
  returned are exact cosines and the top k is the exact top k unless a true member ranked
  below RESCORE × k by its codes (docs/benchmarks.md measures the difference).

The truth lives in the `embeddings` table; this index is rebuilt from it at start and updated
after each commit. Rows carry a project code so the common "one project" filter is a
vectorised mask.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Iterable
from typing import Any

import numpy as np
import simsimd

from mnemonist.search.row_blocks import RowBlocks

#: seqs -> their exact (float32) vectors; seqs without a stored vector are left out
ExactVectors = Callable[[list[int]], dict[int, np.ndarray]]
#: int8 code of a unit vector's component x: round(CODE_SCALE·x), clipped to ±127
CODE_SCALE = 254.0
#: int8 search: candidates chosen by their codes, per result asked for, then scored exactly
RESCORE = 3
#: `add_many` writes runs of new rows this many at a time
ADD_BATCH = 4096
#: search.vector_precision "auto": float32 below this many vectors, int8 from there (at 10,000
#: the float32 scan takes about a millisecond, less than reading 300 exact vectors back)
AUTO_INT8_FROM = 25_000


def int8_codes(vector: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(np.asarray(vector, dtype=np.float32) * CODE_SCALE),
                   -127, 127).astype(np.int8)


class Slots:
    """seq → the row it occupies, as an int32 array indexed by seq (-1: none). Seqs are the
    store's row ids, dense from 1, so this is 4 bytes a memory ever written, where a dict of a
    million ints held about 100 MB (measured at 1M memories, docs/benchmarks.md)."""

    def __init__(self) -> None:
        self._at = np.full(1024, -1, dtype=np.int32)

    def get(self, seq: int) -> int | None:
        """The row of `seq`; None when it has none (or is no seq at all, as a dict said)."""
        if isinstance(seq, int | np.integer) and 0 <= seq < self._at.size:
            pos = int(self._at[seq])
            return pos if pos >= 0 else None
        return None

    def __contains__(self, seq: int) -> bool:
        return self.get(seq) is not None

    def __getitem__(self, seq: int) -> int:
        pos = self.get(seq)
        if pos is None:
            raise KeyError(seq)
        return pos

    def __setitem__(self, seq: int, pos: int) -> None:
        if seq < 0:
            raise ValueError(f"seq {seq} is negative")
        if seq >= self._at.size:
            grown = np.full(max(seq + 1, 2 * self._at.size), -1, dtype=np.int32)
            grown[: self._at.size] = self._at
            self._at = grown
        self._at[seq] = pos

    def set_many(self, seqs: list[int], positions: range) -> None:
        """`self[seq] = pos` for each pair (non-negative seqs)."""
        if not seqs:
            return
        self[max(seqs)] = -1  # grows the array once
        self._at[np.asarray(seqs, dtype=np.int64)] = np.asarray(positions, dtype=np.int32)

    def rows_of(self, seqs: list[int]) -> tuple[list[int], np.ndarray]:
        """(the seqs that have a row, in order; their rows): `get` over many at once."""
        wanted: np.ndarray | None = None
        if all(isinstance(s, int | np.integer) for s in seqs):
            with contextlib.suppress(OverflowError):
                wanted = np.fromiter(seqs, dtype=np.int64, count=len(seqs))
        if wanted is None:  # not all seqs, or beyond int64: one at a time, as `get` answers
            found = [(s, at) for s in seqs if (at := self.get(s)) is not None]
            return [s for s, _ in found], np.asarray([p for _, p in found], dtype=np.int64)
        pos = np.full(wanted.size, -1, dtype=np.int64)
        inside = (wanted >= 0) & (wanted < self._at.size)
        pos[inside] = self._at[wanted[inside]]
        keep = pos >= 0
        if keep.all():
            return list(seqs), pos
        return wanted[keep].tolist(), pos[keep]

    def pop(self, seq: int, default: int | None = None) -> int | None:
        pos = self.get(seq)
        if pos is None:
            return default
        self._at[seq] = -1
        return pos

    @property
    def nbytes(self) -> int:
        return self._at.nbytes


class VectorIndex:
    def __init__(
        self, dimensions: int, capacity: int = 1024, *, exact: ExactVectors | None = None,
        int8_from: int = 0,
    ) -> None:
        """With `exact` the index keeps int8 codes (once it holds `int8_from` vectors or has
        room reserved for as many; float32 vectors before) and reads exact vectors through
        it; without, it keeps the float32 vectors."""
        self.dimensions = dimensions
        self.exact = exact
        self.int8_from = int8_from
        self._int8 = exact is not None and int8_from <= 0
        dtype = np.int8 if self._int8 else np.float32
        self._matrix = RowBlocks(dimensions, dtype, capacity)
        self._seqs = np.zeros(capacity, dtype=np.int64)
        self._projects = np.zeros(capacity, dtype=np.int32)
        self._pos = Slots()
        self._project_codes: dict[str | None, int] = {None: 0}
        self._n = 0
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return self._n

    def __contains__(self, seq: int) -> bool:
        return seq in self._pos

    @property
    def precision(self) -> str:
        return "int8" if self._int8 else "float32"

    def _to_int8(self) -> None:
        """Replace the float32 vectors by their codes (under the lock): from here on the
        exact vectors are read from the store."""
        if self._int8 or self.exact is None:
            return
        self._matrix = self._matrix.converted(np.int8, int8_codes, self._n)
        self._int8 = True

    @property
    def nbytes(self) -> int:
        """Memory held by the index's arrays (allocated capacity included)."""
        return (self._matrix.nbytes + self._seqs.nbytes + self._projects.nbytes
                + self._pos.nbytes)

    def vector(self, seq: int) -> np.ndarray | None:
        """A copy of the memory's indexed vector; None when it is not indexed."""
        with self._lock:
            pos = self._pos.get(seq)
            if pos is None:
                return None
            if not self._int8:
                return self._matrix[pos].copy()
        assert self.exact is not None
        found = self.exact([seq]).get(seq)
        return None if found is None else np.array(found, dtype=np.float32)

    def _code(self, project: str | None) -> int:
        code = self._project_codes.get(project)
        if code is None:
            code = len(self._project_codes)
            self._project_codes[project] = code
        return code

    def reserve(self, capacity: int) -> None:
        """Make room for `capacity` rows at once (a load of known size grows no copies)."""
        with self._lock:
            if self.exact is not None and capacity >= self.int8_from:
                self._to_int8()
            self._grow(capacity, exact=True)

    def _grow(self, need: int, exact: bool = False) -> None:
        """Room for `need` rows: the matrix adds blocks (row_blocks: nothing copied); the
        seq and project columns (12 bytes a row) grow by copying."""
        self._matrix.ensure(need, exact=exact)
        cap = self._seqs.shape[0]
        if need <= cap:
            return
        new_cap = need if exact else max(need, cap * 2)
        for name in ("_seqs", "_projects"):
            old = getattr(self, name)
            grown = np.zeros(new_cap, dtype=old.dtype)
            grown[: old.shape[0]] = old
            setattr(self, name, grown)

    def add(self, seq: int, vector: np.ndarray, project: str | None = None) -> None:
        vec = np.asarray(vector, dtype=np.float32)
        if vec.shape != (self.dimensions,):
            raise ValueError(f"vector has shape {vec.shape}, index has {self.dimensions} dims")
        with self._lock:
            if not self._int8 and self.exact is not None and self._n + 1 >= self.int8_from:
                self._to_int8()
            row = int8_codes(vec) if self._int8 else vec
            pos = self._pos.get(seq)
            if pos is None:
                self._grow(self._n + 1)
                pos = self._n
                self._n += 1
                self._pos[seq] = pos
            self._matrix[pos] = row
            self._seqs[pos] = seq
            self._projects[pos] = self._code(project)

    def add_many(self, items: Iterable[tuple[int, str | None, np.ndarray]]) -> None:
        """`add` for each item, in order. Loading a store's vectors at start is this call
        with a million items: runs of new seqs are written `ADD_BATCH` at a time (their codes
        computed together, the rows copied block by block), anything else one by one."""
        batch: list[tuple[int, str | None, np.ndarray]] = []
        for item in items:
            batch.append(item)
            if len(batch) == ADD_BATCH:
                self._add_batch(batch)
                batch = []
        if batch:
            self._add_batch(batch)

    def _add_batch(self, batch: list[tuple[int, str | None, np.ndarray]]) -> None:
        with self._lock:
            seqs = [seq for seq, _, _ in batch]
            simple = (
                (self._int8 or self.exact is None or self._n + len(batch) < self.int8_from)
                and len(set(seqs)) == len(seqs)
                and all(isinstance(s, int) and s >= 0 and s not in self._pos for s in seqs)
                and all(np.shape(v) == (self.dimensions,) for _, _, v in batch)
            )
            if not simple:  # a replacement, the int8 switch, a bad vector: add() decides
                for seq, project, vector in batch:
                    self.add(seq, vector, project)
                return
            vectors = np.stack([np.asarray(v, dtype=np.float32) for _, _, v in batch])
            start, count = self._n, len(batch)
            self._grow(start + count)
            self._matrix.write(start, int8_codes(vectors) if self._int8 else vectors)
            self._seqs[start : start + count] = seqs
            self._projects[start : start + count] = [self._code(p) for _, p, _ in batch]
            self._pos.set_many(seqs, range(start, start + count))
            self._n += count

    def remove(self, seq: int) -> bool:
        with self._lock:
            pos = self._pos.pop(seq, None)
            if pos is None:
                return False
            last = self._n - 1
            if pos != last:
                self._matrix[pos] = self._matrix[last]
                self._seqs[pos] = self._seqs[last]
                self._projects[pos] = self._projects[last]
                self._pos[int(self._seqs[pos])] = pos
            self._n = last
            return True

    def set_project(self, seq: int, project: str | None) -> None:
        with self._lock:
            pos = self._pos.get(seq)
            if pos is not None:
                self._projects[pos] = self._code(project)

    def scores(self, query: np.ndarray, seqs: Iterable[int]) -> dict[int, float]:
        """Cosine of the query against specific rows (those not indexed are left out)."""
        q = np.asarray(query, dtype=np.float32)
        with self._lock:
            wanted, positions = self._pos.rows_of(list(seqs))
            if not wanted:
                return {}
            rows = None if self._int8 else self._matrix.take(positions)
        if rows is None:
            return self._exact_scores(q, wanted)
        return dict(zip(wanted, (rows @ q).tolist(), strict=True))

    def _exact_scores(self, q: np.ndarray, seqs: list[int]) -> dict[int, float]:
        """Cosines from the stored vectors; a row the store holds no vector for (a bench's
        vectors put straight into the index, a row re-embedded a moment ago) keeps its codes'
        estimate rather than dropping out."""
        assert self.exact is not None
        vectors = self.exact(seqs)
        found = [s for s in seqs if s in vectors]
        out: dict[int, float] = {}
        if found:
            sims = np.stack([vectors[s] for s in found]).astype(np.float32, copy=False) @ q
            out = {s: float(v) for s, v in zip(found, sims, strict=True)}
        if len(found) < len(seqs):
            out.update(self._code_scores(q, [s for s in seqs if s not in vectors]))
        return out

    def _code_scores(self, q: np.ndarray, seqs: list[int]) -> dict[int, float]:
        """The int8 codes' estimate of the cosine (within about 0.01 of it)."""
        codes_q = int8_codes(q).astype(np.int32)
        with self._lock:
            found = [(s, self._pos[s]) for s in seqs if s in self._pos]
            if not found or not self._int8:
                return {}
            rows = self._matrix.take([p for _, p in found]).astype(np.int32)
        sims = (rows @ codes_q) / (CODE_SCALE * CODE_SCALE)
        return {s: float(v) for (s, _), v in zip(found, sims, strict=True)}

    def _similarities(self, q: np.ndarray, n: int) -> np.ndarray:
        """Every row's similarity to the query: the cosine (float32), or its int8 estimate
        (in units of CODE_SCALE²)."""
        out = np.empty(n, dtype=np.float32)
        codes = int8_codes(q) if self._int8 else None
        for start, rows in self._matrix.chunks(n):
            if codes is None:
                out[start : start + rows.shape[0]] = rows @ q
            else:  # float32 holds every int8 dot product of 384 dimensions exactly (< 2^24)
                sims = simsimd.cdist(codes, rows, metric="dot", out_dtype="float32")
                out[start : start + rows.shape[0]] = np.asarray(sims).reshape(-1)
        return out

    def first_pass(self, query: np.ndarray, k: int, **filters: Any) -> list[tuple[int, float]]:
        """The part of `search_and_score` that reads nothing from the store: the top k of a
        float32 index, the candidates an int8 index's codes choose (its exact vectors are read
        after). Any thread may run it: recall runs it beside its keyword leg."""
        return self.search(query, k, _rescore=False, **filters)

    def search_and_score(
        self, query: np.ndarray, k: int, also: Collection[int], *,
        first: list[tuple[int, float]] | None = None, **filters: Any
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """`search` and the `scores` of `also` (other candidates of the recall), in one read
        of exact vectors for an int8 index. `first`: what `first_pass` answered for the same
        query and filters, when it ran already."""
        if not self._int8:
            top = first if first is not None else self.search(query, k, **filters)
            return top, self.scores(query, also)
        chosen = first if first is not None else self.search(query, k, _rescore=False,
                                                             **filters)
        q = np.asarray(query, dtype=np.float32)
        wanted = list(dict.fromkeys([*(s for s, _ in chosen),
                                     *(s for s in also if s in self._pos)]))
        exact = self._exact_scores(q, wanted) if wanted else {}
        mine = {s for s, _ in chosen}
        top = sorted(((s, c) for s, c in exact.items() if s in mine),
                     key=lambda t: (-t[1], t[0]))[:k]
        return top, {s: exact[s] for s in also if s in exact}

    def search(
        self,
        query: np.ndarray,
        k: int,
        *,
        _rescore: bool = True,
        project: str | None = None,
        filter_project: bool = False,
        allowed: set[int] | None = None,
        scope: Collection[str] | None = None,
        hidden: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Top-k (seq, cosine), optionally within one project, within `scope` (any of these
        projects, case-insensitive, or no project) and/or an allowed set of seqs, never one
        of the `hidden` seqs (private memories the reader may not see)."""
        q = np.asarray(query, dtype=np.float32)
        with self._lock:
            n = self._n
            if n == 0 or k <= 0:
                return []
            sims = self._similarities(q, n)
            seqs = self._seqs[:n].copy()
            mask = None
            if filter_project:
                code = self._project_codes.get(project)
                if code is None:
                    return []
                mask = self._projects[:n] == code
            if scope is not None:
                names = {p.lower() for p in scope}
                codes = [c for p, c in self._project_codes.items()
                         if p is None or p.lower() in names]
                in_scope = np.isin(self._projects[:n], codes)
                mask = in_scope if mask is None else (mask & in_scope)
            if allowed is not None:
                allow = np.zeros(n, dtype=bool)
                positions = [self._pos[s] for s in allowed if s in self._pos]
                allow[positions] = True
                mask = allow if mask is None else (mask & allow)
            if hidden:
                keep = np.ones(n, dtype=bool)
                keep[[self._pos[s] for s in hidden if s in self._pos]] = False
                mask = keep if mask is None else (mask & keep)
        available = n
        if mask is not None:
            sims = np.where(mask, sims, -np.inf)
            available = int(mask.sum())
            if available == 0:
                return []
        if not self._int8:  # float32 rows: the cosines themselves
            return _top(seqs, sims, min(k, available))
        # int8: the codes choose RESCORE × k candidates, their exact vectors rank them
        chosen = _top(seqs, sims, min(RESCORE * k, available))
        if not _rescore:
            return chosen
        exact = self._exact_scores(q, [s for s, _ in chosen])
        return sorted(exact.items(), key=lambda t: (-t[1], t[0]))[:k]


def _top(seqs: np.ndarray, sims: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best (seq, similarity), best first; masked rows (-inf) never."""
    n = sims.shape[0]
    if k <= 0:
        return []
    top = best_positions(sims, k) if k < n else np.arange(n)
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(int(seqs[i]), float(sims[i])) for i in top if np.isfinite(sims[i])]


#: from this many rows `best_positions` first cuts by a threshold taken from a sample
SAMPLED_FROM = 50_000
SAMPLE = 20_000


def best_positions(sims: np.ndarray, k: int) -> np.ndarray:
    """The positions of the k largest values (in no order; k < len(sims)), as
    `np.argpartition(-sims, k - 1)[:k]` finds them. A large array is first cut to the rows
    at or above a threshold that a strided sample puts about 4k rows above (one comparison
    pass, where partitioning a million values costs 15 ms); when fewer than k pass, the
    whole array is partitioned, so the answer never depends on the sample."""
    n = sims.shape[0]
    if n >= SAMPLED_FROM:
        sample = sims[:: n // SAMPLE]
        above = min(sample.size - 1, max(1, (4 * k * sample.size) // n))
        threshold = np.partition(sample, sample.size - above)[sample.size - above]
        passed = np.flatnonzero(sims >= threshold)
        if k <= passed.size < n // 2:
            return passed[np.argpartition(-sims[passed], k - 1)[:k]]
    return np.argpartition(-sims, k - 1)[:k]
