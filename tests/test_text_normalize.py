import hashlib
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonist.text.normalize import JS_WHITESPACE, normalize_and_hash


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_storage_trims_and_collapses_but_keeps_case() -> None:
    r = normalize_and_hash("  Use  Postgres\n\tfor   the DB.  ")
    assert r.storage == "Use Postgres for the DB."
    assert r.normalized == "use postgres for the db"
    assert r.content_hash == sha("use postgres for the db")


def test_known_vector() -> None:
    r = normalize_and_hash("Hello World!!")
    assert r.content_hash == "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"


def test_only_trailing_punctuation_is_stripped() -> None:
    r = normalize_and_hash("v1.2, ok? yes!?;:.")
    assert r.normalized == "v1.2, ok? yes"
    assert normalize_and_hash("...wait").normalized == "...wait"
    assert normalize_and_hash("end. )").normalized == "end. )"


def test_all_punctuation_hashes_the_lowercased_storage() -> None:
    r = normalize_and_hash("  ?!.  ")
    assert r.storage == "?!."
    assert r.normalized == ""
    assert r.content_hash == sha("?!.")


def test_empty_content() -> None:
    r = normalize_and_hash(" \n\t ")
    assert (r.storage, r.normalized, r.content_hash) == ("", "", sha(""))


@pytest.mark.parametrize("ws", ["\u00a0", "\u2028", "\u2029", "\u3000", "\u202f", "\ufeff", "\v"])
def test_javascript_whitespace_is_collapsed_and_trimmed(ws: str) -> None:
    r = normalize_and_hash(f"{ws}a{ws}{ws}b{ws}")
    assert r.storage == "a b"


@pytest.mark.parametrize("ch", ["\x1c", "\x1f", "\x85"])
def test_python_only_whitespace_is_kept_like_javascript(ch: str) -> None:
    # Python's str.isspace() is true for these, JavaScript's \s is not.
    assert ch.isspace()
    assert normalize_and_hash(f"a{ch}b").storage == f"a{ch}b"
    assert normalize_and_hash(f"{ch}a").storage == f"{ch}a"


def test_lone_surrogate_hashes_like_node_replacement_char() -> None:
    assert normalize_and_hash("x\ud800").content_hash == sha("x\ufffd")
    assert normalize_and_hash("\ud83d\ude00").content_hash == sha("\U0001f600")


def test_result_is_frozen() -> None:
    r = normalize_and_hash("x")
    with pytest.raises(AttributeError):
        r.storage = "y"  # type: ignore[misc]


_ws = st.sampled_from(list(JS_WHITESPACE))
_words = st.lists(st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1), min_size=1)


@given(st.text())
def test_idempotent(content: str) -> None:
    first = normalize_and_hash(content)
    assert normalize_and_hash(first.storage) == first


@given(st.text())
def test_shape_of_result(content: str) -> None:
    r = normalize_and_hash(content)
    assert re.fullmatch(r"[0-9a-f]{64}", r.content_hash)
    assert r.storage == r.storage.strip(JS_WHITESPACE)
    assert not any(f"{a}{b}" in r.storage for a in JS_WHITESPACE for b in JS_WHITESPACE)
    assert not r.normalized.endswith(tuple(".,!?;:"))


@given(_words, st.lists(st.lists(_ws, min_size=1).map("".join), min_size=2))
def test_whitespace_variants_share_a_hash(words: list[str], gaps: list[str]) -> None:
    spaced = gaps[0] + "".join(w + gaps[(i + 1) % len(gaps)] for i, w in enumerate(words))
    expected = normalize_and_hash(" ".join(words))
    assert normalize_and_hash(spaced).content_hash == expected.content_hash


@given(st.text(alphabet=st.characters(codec="ascii", categories=["L", "N", "Zs"])), st.randoms())
def test_case_variants_share_a_hash(content: str, rnd: random.Random) -> None:
    flipped = "".join(c.upper() if rnd.random() < 0.5 else c.lower() for c in content)
    assert normalize_and_hash(flipped).content_hash == normalize_and_hash(content).content_hash


@given(_words.map(" ".join), st.text(alphabet=".,!?;:", min_size=1))
def test_trailing_punctuation_variants_share_a_hash(content: str, punct: str) -> None:
    expected = normalize_and_hash(content).content_hash
    assert normalize_and_hash(content + punct).content_hash == expected
