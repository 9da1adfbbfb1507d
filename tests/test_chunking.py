"""Chunking with overlap: properties over arbitrary texts, and the boundary preferences."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonist.ingest.chunking import chunk_text

texts = st.text(
    alphabet=st.sampled_from(list("abcde fgh.!?\n\t,;é漢")), min_size=0, max_size=3000
)


@st.composite
def sizes(draw):
    size = draw(st.integers(min_value=1, max_value=600))
    overlap = draw(st.integers(min_value=0, max_value=size - 1))
    return size, overlap


@settings(max_examples=400, deadline=None)
@given(texts, sizes())
def test_chunks_cover_the_text_in_order_within_size_and_overlap(text, size_overlap):
    size, overlap = size_overlap
    chunks = chunk_text(text, size, overlap)
    if not text:
        assert chunks == []
        return
    # each chunk is exactly its slice, within the size
    for i, c in enumerate(chunks):
        assert c.index == i
        assert c.text == text[c.start : c.end]
        assert 0 < c.end - c.start <= size
    # the first starts at 0, the last ends at the end: together they cover the whole text
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    for prev, nxt in itertools.pairwise(chunks):
        assert prev.start < nxt.start  # progress
        assert nxt.start <= prev.end  # no gap
        assert prev.end - nxt.start <= overlap  # never more shared than the overlap
        assert prev.end < nxt.end


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcxyz", min_size=1, max_size=3000), sizes())
def test_without_whitespace_the_overlap_is_exact_and_windows_full(text, size_overlap):
    size, overlap = size_overlap
    chunks = chunk_text(text, size, overlap)
    for prev, nxt in itertools.pairwise(chunks):
        assert prev.end - nxt.start == overlap
        assert prev.end - prev.start == size  # no boundary to prefer: cut at the size


@given(st.text(min_size=1, max_size=500), st.integers(min_value=500, max_value=2000))
def test_a_text_shorter_than_one_chunk_is_not_split(text, size):
    [only] = chunk_text(text, size, size // 10)
    assert only.text == text and (only.start, only.end) == (0, len(text))


def test_prefers_paragraph_then_sentence_then_word_boundaries():
    para = "First paragraph sentence one. Sentence two is here.\n\nSecond paragraph starts"
    text = para + " and goes on for a while with words " * 5
    chunks = chunk_text(text, 80, 10)
    assert chunks[0].text.endswith("\n\n")  # ended at the paragraph break
    sentences = "Alpha beta gamma delta. Epsilon zeta eta theta iota. Kappa lambda mu nu xi"
    chunks = chunk_text(sentences * 3, 60, 0)
    assert chunks[0].text.endswith(". ")  # ended after a sentence
    words = "word " * 40
    chunks = chunk_text(words, 23, 5)
    assert all(c.text.endswith(" ") for c in chunks[:-1])  # never inside a word
    # the next chunk starts on a word, inside the overlap
    assert all(words[c.start] != " " and words[c.start - 1] == " " for c in chunks[1:])


def test_defaults_on_a_long_document():
    text = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 30 + "\n\n") * 10
    chunks = chunk_text(text, 2000, 200)
    assert len(chunks) > 1
    assert all(len(c.text) <= 2000 for c in chunks)
    assert all(len(c.text) >= 1000 for c in chunks[:-1])  # boundaries only in the second half


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, 11), (10, -1)])
def test_invalid_sizes_are_refused(size, overlap):
    with pytest.raises(ValueError):
        chunk_text("some text", size, overlap)
