import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonist.text.prefix import ParsedPrefix, infer_type, parse_prefix


def test_no_prefix() -> None:
    assert parse_prefix("  Use Postgres for everything  ") == ParsedPrefix(
        content="Use Postgres for everything", pinned=False, importance=None, tags=()
    )


@pytest.mark.parametrize(
    "text", ["critical: rotate keys", "CRITICAL:rotate keys", " Critical:  rotate keys"]
)
def test_critical_pins_with_full_importance(text: str) -> None:
    assert parse_prefix(text) == ParsedPrefix("rotate keys", True, 1.0, ())


def test_tags_are_stripped_lowercased_deduped_and_empty_ones_dropped() -> None:
    r = parse_prefix("[ Auth, project,,AUTH , Deploy Keys ]: keep tokens in the vault")
    tags = ("auth", "project", "deploy keys")
    assert r == ParsedPrefix("keep tokens in the vault", False, None, tags)


@pytest.mark.parametrize(
    "text",
    [
        "critical: [project,auth]: never expose tokens",
        "[project,auth]: critical: never expose tokens",
        "  [project, auth]:critical:never expose tokens",
        "CRITICAL:   [PROJECT , auth]:   never expose tokens  ",
    ],
)
def test_both_prefixes_in_either_order(text: str) -> None:
    assert parse_prefix(text) == ParsedPrefix("never expose tokens", True, 1.0, ("project", "auth"))


def test_each_prefix_is_taken_once() -> None:
    assert parse_prefix("critical: critical: x") == ParsedPrefix("critical: x", True, 1.0, ())
    assert parse_prefix("[a]: [b]: x") == ParsedPrefix("[b]: x", False, None, ("a",))


def test_prefix_must_be_at_the_start() -> None:
    assert parse_prefix("this is critical: really") == ParsedPrefix(
        "this is critical: really", False, None, ()
    )
    assert parse_prefix("note [a]: x").tags == ()


@pytest.mark.parametrize(
    "text",
    ["critical:", "critical: ", "  critical:  ", "[a,b]:", "[a]: critical:", "critical: [x]:  "],
)
def test_prefix_only_keeps_original_text_unparsed(text: str) -> None:
    assert parse_prefix(text) == ParsedPrefix(text.strip(), False, None, ())


@pytest.mark.parametrize(
    "text",
    [
        "[link](http://x): foo",
        "[]: empty tags",
        "[ , ]: empty tags",
        "[a]b: not a prefix",
        "[a] : space before colon",
        "[nested [x]]: y",
        "[multi\nline]: y",
        "critically important: x",
        "critical - x",
    ],
)
def test_things_that_look_like_prefixes_pass_through(text: str) -> None:
    assert parse_prefix(text) == ParsedPrefix(text.strip(), False, None, ())


def test_markdown_link_after_a_real_prefix() -> None:
    r = parse_prefix("[docs]: see [link](http://x): foo")
    assert r == ParsedPrefix("see [link](http://x): foo", False, None, ("docs",))


@given(st.text())
def test_parse_prefix_never_raises_and_keeps_invariants(text: str) -> None:
    r = parse_prefix(text)
    assert r.content == r.content.strip()
    assert r.content or not text.strip()
    assert r.importance == (1.0 if r.pinned else None)
    assert all(t and t == t.strip() and t == t.lower() for t in r.tags)
    assert len(set(r.tags)) == len(r.tags)
    if not r.pinned and not r.tags:
        assert r.content == text.strip()


_TAG_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-_ "


@given(
    st.text(alphabet=_TAG_CHARS, min_size=1).map(str.strip).filter(bool),
    st.text(min_size=1).filter(lambda s: s.strip() and s.strip() == s),
)
def test_prefix_roundtrip(tag: str, body: str) -> None:
    expected = ParsedPrefix(body, True, 1.0, (tag,))
    assert parse_prefix(f"critical: [{tag}]: {body}") == expected
    assert parse_prefix(f"[{tag.upper()}]:critical:{body}") == expected


# --- infer_type ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("User prefers dark mode", "preference"),
        ("I prefer tabs", "preference"),
        ("She likes short answers", "preference"),
        ("He wants weekly summaries", "preference"),
        ("We decided to use SQLite", "decision"),
        ("Team agreed on trunk-based development", "decision"),
        ("We will use FastAPI", "decision"),
        ("They chose Rust for the parser", "decision"),
        ("Going with option B", "decision"),
        ("Never push to main", "rule"),
        ("Always run the linter", "rule"),
        ("Secrets MUST stay out of git", "rule"),
        ("Learned that WAL mode helps", "learning"),
        ("Discovered a faster path", "learning"),
        ("Turns out the cache was cold", "learning"),
        ("TIL sqlite has FTS5", "learning"),
        ("Login bug on Safari", "issue"),
        ("The build is broken", "issue"),
        ("Problem with the VPN", "issue"),
        ("Error 500 on /save", "issue"),
        ("The import fails on Windows", "issue"),
        ("The office is in Berlin", "fact"),
        ("", "fact"),
    ],
)
def test_infer_type(text: str, expected: str) -> None:
    assert infer_type(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "preferences page is at /settings",  # "preferences" is not "prefer"
        "likely to rain",
        "the decision log",
        "mustard and bugle",
        "debugging session notes",
        "errors.log is rotated daily",
        "wait til monday",  # only capital TIL counts
        "the user of the tool",
        "will users see it",
        "hungry",
    ],
)
def test_infer_type_respects_word_boundaries(text: str) -> None:
    assert infer_type(text) == "fact"


def test_infer_type_first_rule_wins() -> None:
    assert infer_type("User prefers we never deploy on Friday after the bug") == "preference"
    assert infer_type("We decided we must always pin versions") == "decision"
    assert infer_type("Rule: never ignore an error") == "rule"
    assert infer_type("Learned the bug was in the cache") == "learning"


def test_infer_type_is_case_insensitive_and_spans_whitespace() -> None:
    assert infer_type("WE WILL\nUSE redis") == "decision"
    assert infer_type("it TURNS   OUT fine") == "learning"


@given(st.text())
def test_infer_type_is_total(text: str) -> None:
    assert infer_type(text) in {"preference", "decision", "rule", "learning", "issue", "fact"}
