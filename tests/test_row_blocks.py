"""The vector index's block matrix: the same rows as one contiguous array through every kind
of growth, growth that keeps the blocks it had (nothing copied), and an index spanning many
blocks that answers as a brute-force scan does."""

from __future__ import annotations

import numpy as np
import pytest

from mnemonist.search import row_blocks
from mnemonist.search.row_blocks import RowBlocks
from mnemonist.search.vector_index import VectorIndex, int8_codes

DIMS = 8


@pytest.mark.parametrize("start", [0, 3, 10, 25])
def test_rows_read_back_as_written_through_growth(start: int) -> None:
    rng = np.random.default_rng(start)
    want = rng.standard_normal((97, DIMS)).astype(np.float32)
    blocks = RowBlocks(DIMS, np.float32, start, block_rows=10)
    for i, row in enumerate(want):
        blocks.ensure(i + 1)
        blocks[i] = row
    assert blocks.capacity >= 97 and blocks.capacity % 10 == 0
    for i in (0, 9, 10, 11, 55, 96):
        assert np.array_equal(blocks[i], want[i])
    order = rng.permutation(97)
    assert np.array_equal(blocks.take(order), want[order])
    assert np.array_equal(blocks.take([]), np.zeros((0, DIMS), np.float32))
    pieces = list(blocks.chunks(97))
    assert [s for s, _ in pieces] == list(range(0, 97, 10))
    assert np.array_equal(np.concatenate([v for _, v in pieces]), want)
    assert sum(v.shape[0] for _, v in blocks.chunks(33)) == 33


def test_a_small_first_block_grows_to_fit_and_an_exact_reserve_takes_what_it_asks() -> None:
    blocks = RowBlocks(DIMS, np.int8, 3, block_rows=1000)
    assert blocks.capacity == 3
    blocks.ensure(4)
    assert blocks.capacity == 1000  # at least 1024 asked, one block at most
    exact = RowBlocks(DIMS, np.int8, 0, block_rows=1000)
    exact.ensure(700, exact=True)
    assert exact.capacity == 700
    exact.ensure(2500, exact=True)
    assert exact.capacity == 3000  # a full first block, then whole blocks


def test_growing_past_full_blocks_keeps_the_blocks_it_had() -> None:
    """The property the module exists for: a million-row index that crosses its capacity adds
    a block; the blocks holding the rows are the same arrays, not copies."""
    blocks = RowBlocks(DIMS, np.float32, 20, block_rows=10)
    before = list(blocks._blocks)
    blocks.ensure(45)
    assert all(a is b for a, b in zip(before, blocks._blocks, strict=False))
    assert len(blocks._blocks) == 5


def test_conversion_keeps_every_row_and_the_layout() -> None:
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((53, DIMS)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    blocks = RowBlocks(DIMS, np.float32, 53, block_rows=20)
    for i, row in enumerate(rows):
        blocks[i] = row
    codes = blocks.converted(np.int8, int8_codes, 53)
    assert codes.dtype == np.int8 and codes.capacity == blocks.capacity
    assert np.array_equal(codes.take(range(53)), int8_codes(rows))


@pytest.mark.parametrize("exact", [False, True])
def test_an_index_over_many_blocks_finds_what_a_full_scan_finds(
        monkeypatch: pytest.MonkeyPatch, exact: bool) -> None:
    monkeypatch.setattr(row_blocks, "BLOCK_ROWS", 256)
    rng = np.random.default_rng(11)
    rows = rng.standard_normal((2000, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    stored = {seq: rows[seq - 1] for seq in range(1, 2001)}
    index = VectorIndex(384, capacity=16, exact=(
        (lambda seqs: {s: stored[s] for s in seqs if s in stored}) if exact else None))
    for seq, vec in stored.items():
        index.add(seq, vec, "p" if seq % 2 else None)
    assert len(index._matrix._blocks) == 8
    for seq in range(1, 2001, 7):
        index.remove(seq)
    live = np.array([s for s in range(1, 2001) if s in index])
    q = rows[500]
    sims = rows[live - 1] @ q
    want = live[np.argsort(-sims, kind="stable")[:10]].tolist()
    got = index.search(q, 10)
    assert [s for s, _ in got] == want
    odd = live[live % 2 == 1]
    want_p = odd[np.argsort(-(rows[odd - 1] @ q), kind="stable")[:5]].tolist()
    assert [s for s, _ in index.search(q, 5, project="p", filter_project=True)] == want_p
    assert index.scores(q, [want[0], 1])[want[0]] == pytest.approx(float(rows[want[0] - 1] @ q),
                                                                 abs=1e-5)
