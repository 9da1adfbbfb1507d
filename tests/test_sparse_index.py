"""The in-memory inverted index against brute-force scoring, through adds, replacements,
removals, project changes and compaction."""

from __future__ import annotations

import numpy as np
import pytest

from mnemonist.search.sparse_index import SparseIndex

VOCAB = 500


def random_doc(rng, seq: int, project: str | None):
    terms = np.unique(rng.integers(0, VOCAB, rng.integers(1, 40))).astype(np.int32)
    return seq, project, terms, rng.random(terms.size).astype(np.float32) + 0.01


def brute(docs: dict, q_terms, q_weights, project=None, filter_project=False):
    q = np.zeros(VOCAB, np.float32)
    q[q_terms] = q_weights
    out = []
    for seq, (proj, terms, weights) in docs.items():
        if filter_project and proj != project:
            continue
        s = float(q[terms] @ weights)
        if s > 0:
            out.append((seq, s))
    return sorted(out, key=lambda t: (-t[1], t[0]))


def same(got, want, k):
    """The same scores in the same order (equal scores may list their memories either way),
    and every memory returned has the score brute force gives it."""
    assert len(got) == min(k, len(want))
    assert np.allclose([v for _, v in got], [v for _, v in want[:k]], rtol=1e-5)
    full = dict(want)
    assert all(abs(full[s] - v) < 1e-4 for s, v in got)


@pytest.mark.parametrize("compact_first", [True, False])
def test_search_equals_brute_force_through_changes(compact_first):
    rng = np.random.default_rng(3)
    index = SparseIndex(VOCAB)
    truth: dict[int, tuple] = {}
    docs = [random_doc(rng, i, "a" if i % 3 else None) for i in range(300)]
    index.add_many(docs)
    truth.update({d[0]: d[1:] for d in docs})
    if compact_first:
        index.compact()
    for i in range(0, 300, 7):  # removals
        index.remove(i)
        truth.pop(i)
    for i in range(1, 300, 11):  # replacements (a modified memory re-expanded)
        if i in truth:
            d = random_doc(rng, i, "b")
            index.add(*d)
            truth[i] = d[1:]
    for i in range(2, 300, 13):
        if i in truth:
            index.set_project(i, "c")
            truth[i] = ("c", *truth[i][1:])
    for _ in range(5):
        q = np.unique(rng.integers(0, VOCAB, 12))
        w = rng.random(q.size).astype(np.float32)
        same(index.search(q, w, 20), brute(truth, q, w), 20)
        for project in ("a", "b", "c", None):
            same(index.search(q, w, 10, project=project, filter_project=True),
                 brute(truth, q, w, project, True), 10)
    index.compact()
    q = np.unique(rng.integers(0, VOCAB, 12))
    w = rng.random(q.size).astype(np.float32)
    same(index.search(q, w, 50), brute(truth, q, w), 50)
    assert len(index) == len(truth)
    some = list(truth)[:5]
    want = dict(brute({s: truth[s] for s in some}, q, w))
    got = index.scores(q, w, [*some, 99999])
    assert set(got) == set(some)
    assert all(abs(got[s] - want.get(s, 0.0)) < 1e-4 for s in some)


def test_a_term_outside_the_vocabulary_is_refused():
    index = SparseIndex(VOCAB)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        index.add(1, None, np.array([VOCAB]), np.array([1.0]))
    assert len(index) == 0


def test_nothing_shared_finds_nothing():
    index = SparseIndex(VOCAB)
    index.add(1, None, np.array([1, 2]), np.array([1.0, 1.0]))
    assert index.search(np.array([3]), np.array([1.0]), 5) == []
