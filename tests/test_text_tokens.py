import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonist.text.tokens import (
    MAX_QUERY_TERMS,
    STOP_WORDS,
    content_tokens,
    fts_match_query,
    fts_phrase_query,
    remove_words,
    tokenize,
    tokenize_any,
)

ROWS = [
    "The user prefers dark mode in every editor",
    "Deploys run nightly and the job runs for an hour",
    "Preference: tabs over spaces",
    "Never commit the secret token to git",
    "café au lait is the morning order",
]


@pytest.fixture()
def db() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO t(content) VALUES (?)", [(r,) for r in ROWS])
    yield conn
    conn.close()


def search(conn: sqlite3.Connection, query: str, **kw: str) -> list[str]:
    expr = fts_match_query(query, **kw)
    if expr is None:
        return []
    rows = conn.execute("SELECT content FROM t WHERE t MATCH ? ORDER BY rowid", (expr,))
    return [r[0] for r in rows]


# --- tokenize / content_tokens ---------------------------------------------------------


def test_tokenize_lowercases_and_splits_on_punctuation_and_underscore() -> None:
    assert tokenize("Hello, World! snake_case v2 3.14 a I x") == [
        "hello", "world", "snake", "case", "v2", "14",
    ]  # fmt: skip


def test_tokenize_is_unicode_aware() -> None:
    assert tokenize("Größe café ÉTÉ 東京タワー") == ["größe", "café", "été", "東京タワー"]
    # combining marks stay inside the word: "e" + U+0301, Devanagari vowel signs
    assert tokenize("cafe\u0301 हिन्दी") == ["cafe\u0301", "हिन्दी"]


def test_tokenize_drops_everything_that_is_not_a_word() -> None:
    assert tokenize("\"*^()-:;'\x00 🎉 \u0301") == []


def test_stop_words_cover_question_words() -> None:
    assert 150 <= len(STOP_WORDS) <= 200
    assert {"what", "when", "where", "who", "how", "which", "did", "does", "the"} <= STOP_WORDS
    assert all(w == w.lower() for w in STOP_WORDS)
    assert not {"database", "prefer", "token", "never"} & STOP_WORDS


def test_content_tokens_removes_stop_words_and_duplicates_in_order() -> None:
    assert content_tokens("What did the user say about the Database? database!") == [
        "user", "say", "database",
    ]  # fmt: skip


# --- fts_match_query shape ---------------------------------------------------------------


def test_query_quotes_each_term_and_joins_with_or() -> None:
    assert fts_match_query("Which editor does the user prefer?") == '"editor" OR "user" OR "prefer"'


def test_query_with_and_operator() -> None:
    assert fts_match_query("dark mode", operator="AND") == '"dark" AND "mode"'
    assert fts_match_query("dark mode", operator="and") == '"dark" AND "mode"'


def test_query_rejects_unknown_operator() -> None:
    with pytest.raises(ValueError, match="operator"):
        fts_match_query("x y", operator="NEAR")


def test_query_falls_back_to_stop_words() -> None:
    assert fts_match_query("what is it") == '"what" OR "is" OR "it"'


@pytest.mark.parametrize("text", ["", "   ", "?!", "a b c", '"', "\x00", "🎉🎉"])
def test_query_without_terms_is_none(text: str) -> None:
    assert fts_match_query(text) is None


def test_query_is_capped_and_operators_are_data() -> None:
    words = [f"w{i}" for i in range(200)]
    expr = fts_match_query(" ".join(words))
    assert expr is not None
    assert expr.count(" OR ") == MAX_QUERY_TERMS - 1
    assert expr.startswith('"w0" OR "w1"')
    assert fts_match_query("NEAR(foo bar) NOT baz") == '"near" OR "foo" OR "bar" OR "baz"'


# --- against a real FTS5 table ---------------------------------------------------------

HOSTILE = [
    '"', 'a"b', '""', "NEAR(a b)", "NEAR(dark mode, 2)", "foo*", "dark*", "-bar", "(x OR",
    "content:secret", "t:secret", "{content}: x", "AND", "OR", "NOT x", "x NOT", "^start",
    "^dark", "🎉 dark 🎉", "'; DROP TABLE t; --", "\x00", "dark\x00mode", "a" * 10_000,
    "dark " * 2_000, "x" * 10_000 + '"' + "y", "*", "+", "()", "[]", "\\", "''", "::",
    "col:val:val", "mode)", "\"dark mode", "dark -- mode", "𝔡𝔞𝔯𝔨", "ＤＡＲＫ", "\ud800 dark",
]  # fmt: skip


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("op", ["OR", "AND"])
def test_hostile_queries_never_break_match(db: sqlite3.Connection, text: str, op: str) -> None:
    expr = fts_match_query(text, operator=op)
    assert expr is None or expr.startswith('"')
    search(db, text, operator=op)  # raises sqlite3.OperationalError on bad syntax


def test_hostile_queries_still_find_their_words(db: sqlite3.Connection) -> None:
    assert search(db, "^dark") == [ROWS[0]]
    assert search(db, "NEAR(dark mode, 2)") == [ROWS[0]]  # "near" is just a word now
    assert search(db, "NEAR(dark mode, 2)", operator="AND") == []
    assert search(db, "content:secret") == [ROWS[3]]
    assert search(db, "dark\x00mode", operator="AND") == [ROWS[0]]
    assert db.execute("SELECT count(*) FROM t").fetchone() == (len(ROWS),)


def test_or_semantics_match_partial_overlap(db: sqlite3.Connection) -> None:
    assert search(db, "which colour theme does the user like in the terminal") == [ROWS[0]]
    assert search(db, "user secret") == [ROWS[0], ROWS[3]]
    assert search(db, "user secret", operator="AND") == []


def test_porter_stemming_applies_inside_quoted_terms(db: sqlite3.Connection) -> None:
    assert search(db, "running") == [ROWS[1]]  # run/runs/running -> "run"
    assert search(db, "preferences") == [ROWS[0], ROWS[2]]  # prefers, preference -> "prefer"
    assert search(db, "committing") == [ROWS[3]]
    assert search(db, "cafe") == [ROWS[4]]  # unicode61 removes diacritics


def test_no_match_when_words_absent(db: sqlite3.Connection) -> None:
    assert search(db, "kubernetes helm chart") == []


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_match_never_raises_on_arbitrary_text(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='porter unicode61')")
        conn.execute("INSERT INTO t(content) VALUES (?)", (text,))
        for op in ("OR", "AND"):
            expr = fts_match_query(text, operator=op)
            if expr is None:
                assert content_tokens(text) == [] and tokenize(text) == []
                continue
            conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expr,)).fetchall()
    finally:
        conn.close()


@given(st.text())
def test_query_terms_are_quoted_tokens(text: str) -> None:
    expr = fts_match_query(text)
    if expr is not None:
        terms = expr.split(" OR ")
        assert 1 <= len(terms) <= MAX_QUERY_TERMS
        assert all(t.startswith('"') and t.endswith('"') and '"' not in t[1:-1] for t in terms)
        expected = content_tokens(text) or list(dict.fromkeys(tokenize(text)))
        assert [t[1:-1] for t in terms] == expected[:MAX_QUERY_TERMS]


def test_remove_words_drops_names_and_possessives_keeps_the_rest():
    assert remove_words("What has Melanie painted?", {"melanie"}) == "What has painted?"
    assert remove_words("Are Melanie's kids and Mel’s dog fine?", {"melanie", "mel"}) == (
        "Are kids and dog fine?"
    )
    assert remove_words("Melanie?", {"melanie"}) == ""  # nothing left to embed
    assert remove_words("Did Melanie-Rose call", {"melanie"}) == "Did Melanie-Rose call"
    assert remove_words("no names here", set()) == "no names here"


@given(st.text(max_size=200), st.sets(st.text(min_size=1, max_size=8), max_size=4))
@settings(max_examples=200)
def test_remove_words_never_raises_and_never_adds_words(text, words):
    out = remove_words(text, {w.lower() for w in words})
    assert set(tokenize(out)) <= set(tokenize(text))


def test_phrase_query_pairs_adjacent_content_words_quoted():
    assert fts_phrase_query("When did we join the LGBTQ support group?") == (
        '"lgbtq support" OR "support group"'
    )
    assert fts_phrase_query("what is it") is None
    assert fts_phrase_query('say "hi" NEAR(x y)') == '"say hi" OR "hi near"'


def test_phrase_query_is_safe_fts(tmp_path):
    conn = sqlite3.connect(tmp_path / "f.db")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
    conn.execute("INSERT INTO t VALUES ('the support group met')")
    for q in ['support" group', "support) (group", "NOT support group*", "^support group"]:
        match = fts_phrase_query(q)
        assert match is not None
        conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (match,)).fetchone()
    hit = conn.execute("SELECT count(*) FROM t WHERE t MATCH ?",
                       (fts_phrase_query("a support group"),)).fetchone()[0]
    assert hit == 1


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=120))
@settings(max_examples=300)
def test_the_ascii_fast_path_tokenizes_like_the_general_loop(text):
    assert tokenize(text) == tokenize_any(text)
