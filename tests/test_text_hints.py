"""Hint strings: cleaning an LLM's proposals, reading its answer, and the local generator."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonist.text.hints import (
    MAX_HINT_CHARS,
    clean_hint,
    clean_hints,
    hints_from_answer,
    local_hints,
)
from mnemonist.text.tokens import tokenize

ALNUM = "aB3dE5fG7hJ9kL2mN4pQ6rS8tV0wX1yZ"
GITHUB = "gh" + "p_" + ALNUM + "1a2B"  # assembled so that no literal looks like a real token


def test_clean_hints_scrub_trim_cut_dedupe_and_drop():
    long = "Why " + "very " * 60 + "long?"
    out = clean_hints(
        ["  What pet did   Maria adopt?\n", "what pet did maria adopt?", "", "   ", "???", 42,
         None, f"Which token is {GITHUB}?", long, "- Where is the shelter?"],
        limit=10,
    )
    assert out[0] == "What pet did Maria adopt?"  # whitespace collapsed, first spelling kept
    assert sum(h.casefold() == "what pet did maria adopt?" for h in out) == 1
    assert not any(GITHUB in h for h in out)
    assert any("[REDACTED:" in h for h in out)
    assert all(0 < len(h) <= MAX_HINT_CHARS and tokenize(h) for h in out)
    assert "Where is the shelter?" in out  # a list bullet is not part of the hint
    assert len(out) == 4


def test_clean_hints_stops_at_the_limit():
    assert clean_hints([f"question number {i}" for i in range(30)], 3) == [
        "question number 0", "question number 1", "question number 2"]


def test_clean_hint_cuts_at_a_word_boundary():
    hint = clean_hint("word " * 100)
    assert hint is not None and len(hint) <= MAX_HINT_CHARS and hint.endswith("word")


def test_hints_from_answer_shapes():
    assert hints_from_answer(["a?", "b?"]) == (["a?", "b?"], [])
    assert hints_from_answer({"hints": ["a?"]})[0] == ["a?"]
    assert hints_from_answer({"questions": [{"question": "q?"}, {"text": "t?"}]})[0] == [
        "q?", "t?"]
    items, warnings = hints_from_answer({"hints": ["a?", 3, {"nope": 1}]})
    assert items == ["a?"] and len(warnings) == 2
    assert hints_from_answer({"facts": []}) == ([], ["the answer has no 'hints' array: no hints"])
    assert hints_from_answer("text")[0] == []


def test_local_hints_key_phrases_with_the_speaker():
    content = ('I finally finished "The Night Circus" and painted a sunset at Lake Tahoe '
               "last weekend!")
    out = local_hints(content, "Melanie", 5)
    assert out[:2] == ["Melanie The Night Circus", "Melanie Lake Tahoe"]
    assert all(h.startswith("Melanie ") for h in out) and len(out) <= 5
    # without a speaker: the phrases alone; names before the other phrases
    plain = local_hints("We decided the billing service keeps invoices in PostgreSQL.", None, 3)
    assert plain[0] == "PostgreSQL" and "billing service keeps invoices" in plain


def test_local_hints_skip_sentence_openers_secrets_and_the_speaker_alone():
    out = local_hints(f"Yesterday Caroline said the deploy token is {GITHUB}. Thanks!",
                      "Caroline", 5)
    assert not any("Yesterday" in h or "Thanks" in h or GITHUB in h for h in out)
    assert "Caroline" not in out  # the speaker's own name is no hint
    assert any("deploy token" in h for h in out)


def test_local_hints_of_nothing_are_empty():
    assert local_hints("", "Maria", 5) == []
    assert local_hints("ok, thanks!", None, 5) == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.one_of(st.none(), st.text(max_size=40)),
       st.integers(min_value=1, max_value=20))
def test_local_hints_total_and_deterministic(content, who, limit):
    out = local_hints(content, who, limit)
    assert out == local_hints(content, who, limit)
    assert isinstance(out, list) and len(out) <= limit
    assert len({h.casefold() for h in out}) == len(out)
    for h in out:
        assert isinstance(h, str) and 0 < len(h) <= MAX_HINT_CHARS and tokenize(h)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=300), st.integers(), st.none()), max_size=30),
       st.integers(min_value=1, max_value=20))
def test_clean_hints_total(values, limit):
    out = clean_hints(values, limit)
    assert len(out) <= limit
    assert all(0 < len(h) <= MAX_HINT_CHARS for h in out)
