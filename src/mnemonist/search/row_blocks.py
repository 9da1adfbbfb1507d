"""A growable matrix of rows kept as blocks, so that growing never copies what it holds.

One contiguous matrix has to be copied to grow: NumPy's `resize` allocates the new matrix,
copies and frees (measured: growing a 384 MB int8 matrix by a tenth raised the peak RSS from
391 to 757 MB), and doubling it zero-fills the new half as well. At a million 384-dimension
vectors, the one row that crossed the capacity raised the daemon's RSS from 497 MB to 1.66 GB
(peak 2.05 GB). Here the rows live in blocks of `BLOCK_ROWS`; growing adds blocks, and a block
is allocated zeroed by the operating system (`np.zeros` maps untouched pages lazily), so only
the rows written are resident. Only the first block, while it is smaller than `BLOCK_ROWS`,
grows by copying (a small index stays small).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

#: rows per block: 24 MiB of int8 codes (96 MiB of float32) at 384 dimensions
BLOCK_ROWS = 65_536
#: rows converted at a time by `converted`
SLICE = 8192


class RowBlocks:
    def __init__(self, dimensions: int, dtype: type, capacity: int = 0,
                 block_rows: int | None = None) -> None:
        self.dimensions = dimensions
        self.dtype = np.dtype(dtype)
        self.block_rows = block_rows or BLOCK_ROWS
        self._blocks: list[np.ndarray] = []
        self._capacity = 0  # rows held by the blocks (asked on every add: kept, not summed)
        self.ensure(capacity, exact=True)

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def nbytes(self) -> int:
        """Bytes allocated (untouched pages of a block are not resident)."""
        return sum(b.nbytes for b in self._blocks)

    def ensure(self, rows: int, *, exact: bool = False) -> None:
        """Room for `rows` rows. A first block below full size grows to `rows` when `exact`
        (a load of known size), else to at least twice its size."""
        cap = self.capacity
        if rows <= cap:
            return
        first = self._blocks[0].shape[0] if self._blocks else 0
        if len(self._blocks) <= 1 and first < self.block_rows:
            want = rows if exact else max(rows, 2 * first, 1024)
            size = min(self.block_rows, want)
            grown = np.zeros((size, self.dimensions), dtype=self.dtype)
            if self._blocks:
                grown[:first] = self._blocks[0]
            self._blocks = [grown]
            cap = size
        while cap < rows:
            self._blocks.append(np.zeros((self.block_rows, self.dimensions), dtype=self.dtype))
            cap += self.block_rows
        self._capacity = cap

    def _at(self, pos: int) -> tuple[np.ndarray, int]:
        block, offset = divmod(pos, self.block_rows)
        return self._blocks[block], offset

    def __getitem__(self, pos: int) -> np.ndarray:
        block, offset = self._at(pos)
        return block[offset]

    def __setitem__(self, pos: int, row: np.ndarray) -> None:
        block, offset = self._at(pos)
        block[offset] = row

    def write(self, start: int, rows: np.ndarray) -> None:
        """Rows `start`, `start + 1`, … set to `rows` (room already ensured)."""
        done = 0
        while done < rows.shape[0]:
            block, offset = self._at(start + done)
            count = min(rows.shape[0] - done, block.shape[0] - offset)
            block[offset : offset + count] = rows[done : done + count]
            done += count

    def take(self, positions: list[int] | np.ndarray) -> np.ndarray:
        """The rows at `positions`, in that order, as one (len, dimensions) array."""
        pos = np.asarray(positions, dtype=np.int64)
        out = np.empty((pos.size, self.dimensions), dtype=self.dtype)
        blocks, offsets = np.divmod(pos, self.block_rows)
        for b in np.unique(blocks):
            where = blocks == b
            out[where] = self._blocks[int(b)][offsets[where]]
        return out

    def chunks(self, rows: int) -> Iterator[tuple[int, np.ndarray]]:
        """(start, view) over the first `rows` rows, block by block."""
        start = 0
        for block in self._blocks:
            if start >= rows:
                return
            view = block[: min(block.shape[0], rows - start)]
            yield start, view
            start += view.shape[0]

    def converted(self, dtype: type, convert: Callable[[np.ndarray], np.ndarray],
                  rows: int) -> RowBlocks:
        """A copy of the same capacity holding `convert(rows)` of the first `rows` rows (the
        float32 → int8 switch), a slice at a time: the old blocks and the new are both held,
        but never a converted copy of more than `SLICE` rows beside them."""
        out = RowBlocks(self.dimensions, dtype, 0, self.block_rows)
        out.ensure(self.capacity, exact=True)
        for (start, view), target in zip(self.chunks(rows), out._blocks, strict=False):
            assert start % self.block_rows == 0  # both have the same layout
            for at in range(0, view.shape[0], SLICE):
                part = view[at : at + SLICE]
                target[at : at + part.shape[0]] = convert(part)
        return out
