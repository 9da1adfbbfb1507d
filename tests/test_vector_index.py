"""The vector index in int8 (codes scanned, candidates rescored from exact vectors) against the
float32 index: the same top k with the same cosines, the same filters, a quarter of the bytes;
and a real daemon whose int8 index rescored from SQLite answers as its float32 twin does."""

from __future__ import annotations

import numpy as np
import pytest

from mnemonist.daemon import open_memory
from mnemonist.model.requests import RecallRequest, RememberRequest
from mnemonist.search.vector_index import VectorIndex, best_positions

DIMS = 384


def _unit_rows(n: int, seed: int) -> np.ndarray:
    """Clustered unit vectors (20 topics + noise), as sentence embeddings are: many close
    neighbours, so the top k's boundary is crowded."""
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((20, DIMS)).astype(np.float32)
    rows = topics[rng.integers(0, 20, n)] + 0.8 * rng.standard_normal((n, DIMS)).astype(
        np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _pair(n: int = 3000, seed: int = 1) -> tuple[VectorIndex, VectorIndex, np.ndarray]:
    rows = _unit_rows(n, seed)
    stored = {seq: rows[seq - 1] for seq in range(1, n + 1)}
    exact = VectorIndex(DIMS)
    codes = VectorIndex(DIMS, exact=lambda seqs: {s: stored[s] for s in seqs if s in stored})
    for seq, vec in stored.items():
        project = "alpha" if seq % 3 == 0 else None
        exact.add(seq, vec, project)
        codes.add(seq, vec, project)
    return exact, codes, rows


def test_int8_index_returns_the_float32_top_k_with_exact_cosines() -> None:
    exact, codes, rows = _pair()
    assert codes.precision == "int8" and exact.precision == "float32"
    rng = np.random.default_rng(9)
    for i in range(25):
        q = rows[i * 7] + 0.3 * rng.standard_normal(DIMS).astype(np.float32)
        q /= np.linalg.norm(q)
        want = exact.search(q, 100)
        got = codes.search(q, 100)
        assert [s for s, _ in got] == [s for s, _ in want]
        assert np.allclose([c for _, c in got], [c for _, c in want], atol=1e-5)
        some = [s for s, _ in want[:5]] + [2999, 5000]
        assert codes.scores(q, some).keys() == exact.scores(q, some).keys()
        for seq, cos in codes.scores(q, some).items():
            assert cos == pytest.approx(exact.scores(q, [seq])[seq], abs=1e-5)


def test_int8_index_applies_the_same_filters() -> None:
    exact, codes, rows = _pair(seed=2)
    q = rows[10]
    allowed = set(range(1, 3001, 2))
    hidden = {s for s, _ in exact.search(q, 5)}
    for kwargs in ({"project": "alpha", "filter_project": True}, {"allowed": allowed},
                   {"hidden": hidden}, {"scope": ["ALPHA"]}):
        want = exact.search(q, 20, **kwargs)
        assert [s for s, _ in codes.search(q, 20, **kwargs)] == [s for s, _ in want], kwargs
    assert not hidden & {s for s, _ in codes.search(q, 20, hidden=hidden)}
    assert codes.search(q, 20, project="nowhere", filter_project=True) == []


def test_int8_index_holds_a_quarter_of_the_bytes_and_forgets_removed_rows() -> None:
    exact, codes, rows = _pair(n=2048)
    assert codes.nbytes * 3 < exact.nbytes
    top = codes.search(rows[0], 1)[0][0]
    assert top == 1 and codes.remove(1) and 1 not in codes
    assert codes.vector(1) is None and 1 not in {s for s, _ in codes.search(rows[0], 50)}
    assert np.array_equal(codes.vector(2), rows[1])


def _daemon_answers(tmp_path, precision: str, texts: list[str], queries: list[str]):
    home = tmp_path / precision
    daemon = open_memory(home, {"search": {"vector_precision": precision}})
    try:
        svc = daemon.service
        for text in texts:
            svc.memories.remember(RememberRequest(content=text))
        assert svc.flush(120), "background embedding did not finish"
        answers = []
        for q in queries:
            out = svc.reads.recall(RecallRequest(query=q, limit=5))
            answers.append([(r["content"], round(r["scores"]["vector"] or 0.0, 5))
                            for r in out["results"]])
        return svc.core.index.precision, answers
    finally:
        daemon.stop()


def test_a_daemon_with_the_int8_index_answers_as_its_float32_twin(tmp_path) -> None:
    """The int8 index reads its candidates' exact vectors from the embeddings table; same
    memories, same queries: the same results with the same vector scores."""
    texts = [f"The {thing} service deploys to {place} every {day}" for thing in
             ("billing", "search", "auth", "email") for place in ("Frankfurt", "Oregon")
             for day in ("Monday", "Friday")]
    texts += ["Maria prefers tabs over spaces", "We chose PostgreSQL for the ledger"]
    queries = ["where does billing deploy?", "which database did we pick?",
               "indentation preference", "what ships on Fridays"]
    kind8, int8 = _daemon_answers(tmp_path, "int8", texts, queries)
    kind32, f32 = _daemon_answers(tmp_path, "float32", texts, queries)
    assert (kind8, kind32) == ("int8", "float32")
    assert int8 == f32
    assert all(answer for answer in int8)


def test_search_and_score_is_search_plus_scores_in_both_precisions() -> None:
    exact, codes, rows = _pair(seed=3)
    q = rows[42]
    also = [5, 17, 400, 2999, 7000]  # 7000 is not indexed
    for index in (exact, codes):
        top, scored = index.search_and_score(q, 30, also, project="alpha", filter_project=True)
        alone = index.search(q, 30, project="alpha", filter_project=True)
        assert [s for s, _ in top] == [s for s, _ in alone]
        assert np.allclose([c for _, c in top], [c for _, c in alone], atol=1e-6)
        plain = index.scores(q, also)
        assert scored.keys() == plain.keys() and 7000 not in scored
        assert all(scored[s] == pytest.approx(plain[s], abs=1e-6) for s in scored)
    assert [s for s, _ in codes.search_and_score(q, 30, also)[0]] == [
        s for s, _ in exact.search(q, 30)]


def test_a_first_pass_run_elsewhere_gives_search_and_score_the_same_answer() -> None:
    """Recall runs `first_pass` on another thread while its keyword leg runs, and hands it to
    `search_and_score`: the same top k and the same scores as without it, in both
    precisions."""
    exact, codes, rows = _pair(seed=5)
    q = rows[7]
    also = [3, 99, 1500, 8000]
    for index in (exact, codes):
        filters = {"project": "alpha", "filter_project": True}
        first = index.first_pass(q, 25, **filters)
        assert index.search_and_score(q, 25, also, first=first, **filters) == (
            index.search_and_score(q, 25, also, **filters))


def test_scores_looks_seqs_up_as_one_row_at_a_time_would() -> None:
    exact, codes, rows = _pair(n=200, seed=6)
    q = rows[0]
    asked = [5, -1, 10**30, 7.0, np.int64(9), 5, 999, 0, 1]
    for index in (exact, codes):
        got = index.scores(q, asked)
        assert set(got) == {5, 9, 1}  # not negative, huge, float, unknown or 0
        alone = {s: index.scores(q, [s])[s] for s in (5, 9, 1)}
        assert got == pytest.approx(alone, abs=1e-6)  # one row or several: BLAS rounds apart


def test_auto_index_turns_to_int8_codes_at_its_threshold_and_answers_the_same() -> None:
    """Below `int8_from` vectors the index keeps float32 rows; the add that reaches it turns
    them into codes (and a reserve of that size starts in codes): the answers do not change."""
    rows = _unit_rows(600, 4)
    stored = {seq: rows[seq - 1] for seq in range(1, 601)}
    auto = VectorIndex(DIMS, exact=lambda seqs: {s: stored[s] for s in seqs if s in stored},
                       int8_from=500)
    plain = VectorIndex(DIMS)
    for seq in range(1, 500):
        auto.add(seq, stored[seq])
        plain.add(seq, stored[seq])
    assert auto.precision == "float32"
    assert auto.search(rows[3], 50) == plain.search(rows[3], 50)
    for seq in range(500, 601):
        auto.add(seq, stored[seq])
        plain.add(seq, stored[seq])
    assert auto.precision == "int8" and auto._matrix.dtype == np.int8
    after, want = auto.search(rows[3], 50), plain.search(rows[3], 50)
    assert [s for s, _ in after] == [s for s, _ in want]
    assert np.array_equal(auto.vector(7), rows[6])
    reserved = VectorIndex(DIMS, exact=auto.exact, int8_from=500)
    reserved.reserve(600)
    assert reserved.precision == "int8"


def test_rows_without_a_stored_vector_keep_their_codes_estimate() -> None:
    """A row the store holds no exact vector for (vectors put straight into the index, or a
    row re-embedded a moment ago) stays a candidate, scored by its codes' estimate."""
    rows = _unit_rows(1000, 5)
    stored = {seq: rows[seq - 1] for seq in range(1, 1001) if seq % 2 == 0}  # odd: missing
    codes = VectorIndex(DIMS, exact=lambda seqs: {s: stored[s] for s in seqs if s in stored})
    plain = VectorIndex(DIMS)
    for seq in range(1, 1001):
        codes.add(seq, rows[seq - 1])
        plain.add(seq, rows[seq - 1])
    q = rows[0]  # seq 1: no stored vector
    got = dict(codes.search(q, 20))
    want = dict(plain.search(q, 20))
    assert 1 in got and got[1] == pytest.approx(1.0, abs=0.02)
    assert len(got.keys() & want.keys()) >= 18
    for seq, cos in got.items():
        assert cos == pytest.approx(float(rows[seq - 1] @ q), abs=0.02 if seq % 2 else 1e-5)
    assert codes.scores(q, [3])[3] == pytest.approx(float(rows[2] @ q), abs=0.02)


@pytest.mark.parametrize("shape", ["normal", "ties", "masked", "ascending", "constant"])
@pytest.mark.parametrize(("n", "k"), [(50_000, 1), (120_000, 300), (60_000, 20_000)])
def test_best_positions_are_the_k_largest_whatever_the_sample_sees(
        shape: str, n: int, k: int) -> None:
    """The sampled threshold only narrows the partition: the values chosen are always the k
    largest, as a full `argpartition` finds them (ties, masked rows and sorted arrays, where a
    strided sample misjudges the threshold, included)."""
    rng = np.random.default_rng(n + k)
    sims = {
        "normal": rng.standard_normal(n),
        "ties": rng.integers(0, 5, n).astype(np.float64),
        "masked": np.where(rng.random(n) < 0.7, -np.inf, rng.standard_normal(n)),
        "ascending": np.sort(rng.standard_normal(n)),
        "constant": np.ones(n),
    }[shape].astype(np.float32)
    chosen = best_positions(sims, k)
    assert chosen.size == k and np.unique(chosen).size == k
    assert np.sort(sims[chosen]).tolist() == np.sort(sims)[-k:].tolist()


def test_rows_move_and_are_found_by_seq_after_growth_and_removals() -> None:
    """The seq → row map (an array indexed by seq) follows growth past its first capacity,
    rows moved by a removal, and seqs far beyond the rest."""
    rows = _unit_rows(3000, 5)
    index = VectorIndex(DIMS, capacity=16)
    seqs = [*range(1, 2001), 50_000]
    for i, seq in enumerate(seqs):
        index.add(seq, rows[i], None)
    for seq in range(1, 2001, 3):
        assert index.remove(seq)
    assert not index.remove(1) and 1 not in index and 50_000 in index
    kept = [s for s in seqs if s in index]
    assert len(index) == len(kept) == 2001 - 667
    for i, seq in enumerate(seqs):
        got = index.vector(seq)
        if seq in index:
            assert got is not None and np.allclose(got, rows[i])
        else:
            assert got is None
    best = index.search(rows[seqs.index(50_000)], 1)
    assert best[0][0] == 50_000


@pytest.mark.parametrize("int8_from", [None, 0, 50])
def test_add_many_leaves_the_index_as_one_add_after_another(
        monkeypatch: pytest.MonkeyPatch, int8_from: int | None) -> None:
    """Loading writes runs of new rows a batch at a time; replacements, a seq that is not a
    plain int, the int8 switch inside a batch and a bad vector take the one-by-one path. The
    index ends the same either way."""
    from mnemonist.search import vector_index
    monkeypatch.setattr(vector_index, "ADD_BATCH", 7)
    rows = _unit_rows(120, 9)
    stored = {seq: rows[seq - 1] for seq in range(1, 121)}

    def make() -> VectorIndex:
        if int8_from is None:
            return VectorIndex(DIMS, capacity=16)
        return VectorIndex(DIMS, capacity=16, int8_from=int8_from,
                           exact=lambda seqs: {s: stored[s] for s in seqs if s in stored})

    items = [(seq, "p" if seq % 4 == 0 else None, rows[seq - 1]) for seq in range(1, 101)]
    items += [(5, "q", rows[4]), (np.int64(101), None, rows[100]), (102, "q", rows[101])]
    batched, single = make(), make()
    batched.add_many(items)
    for seq, project, vec in items:
        single.add(seq, vec, project)
    assert len(batched) == len(single) == 102
    assert batched.precision == single.precision
    for q in (rows[0], rows[4], rows[50], rows[101]):
        assert batched.search(q, 10) == single.search(q, 10)
        assert (batched.search(q, 3, project="q", filter_project=True)
                == single.search(q, 3, project="q", filter_project=True))
    assert 5 in batched and 101 in batched and 200 not in batched
    with pytest.raises(ValueError):
        batched.add_many([(300, None, rows[0]), (301, None, np.ones(DIMS + 1, np.float32))])
