"""Fast-path entity extraction and the decision-language battery: examples and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonist.text.entities import (
    DECISION_PATTERNS,
    Entity,
    canonical_name,
    extract,
    extract_entities,
    is_decision_content,
)
from mnemonist.text.normalize import collapse_whitespace


def names(text: str) -> list[str]:
    return [e.name for e in extract_entities(text)]


# --- examples ------------------------------------------------------------------------------


def test_technology_names_take_their_canonical_form():
    assert extract_entities("We migrated from postgres to sqlite3; the UI is nextjs") == [
        Entity("PostgreSQL", "technology"), Entity("SQLite", "technology"),
        Entity("Next.js", "technology"),
    ]  # fmt: skip


def test_multi_word_technology_names_win_over_their_parts():
    assert names("Claude Code and vs code both run on GitHub Actions") == [
        "Claude Code", "VS Code", "GitHub Actions",
    ]  # fmt: skip


def test_a_technology_name_that_is_also_a_word_needs_its_capital():
    assert names("how did she react when the slack line broke") == []
    assert names("the frontend is written in React and we chat on Slack") == ["React", "Slack"]


def test_a_capitalised_alias_maps_to_the_technology():
    assert extract_entities("Ask Postgres experts") == [Entity("PostgreSQL", "technology")]


def test_domains_but_not_email_addresses_or_file_names():
    found = extract_entities(
        "Docs at https://www.Example.com/guide, mail bob@corp.io, run install.sh or main.py"
    )
    assert found == [Entity("example.com", "domain")]


def test_capitalised_phrases_and_connectors():
    assert names("I met John Smith at Bank of America near Lake Tahoe") == [
        "John Smith", "Bank of America", "Lake Tahoe",
    ]  # fmt: skip


def test_possessives_are_dropped_and_names_keep_inner_apostrophes_and_hyphens():
    assert names("we went to Caroline's place with Jean-Luc and Mary O'Brien") == [
        "Caroline", "Jean-Luc", "Mary O'Brien",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "Fixed Login Bug",  # action verb, then a generic tail
        "Added Feature",
        "The System works. This Feature rocks.",  # determiners, generic words
        "see you on Monday Meeting day",  # time words
        "the January Update is out",
        "set the Background Color and the Border Radius",  # CSS-like, generic tails
        "Thank You So Much",  # prose fragment
        "call getUserName or read snake_case_name",  # code identifiers
        "edit src/Foo/Bar.py and <Widget /> and {Config}",  # paths and code
        "Hey! Thanks so much. Honestly, Yesterday was fun",  # greetings, adverbs, time
    ],
)
def test_junk_is_not_an_entity(text):
    assert extract_entities(text) == []


def test_leading_noise_is_stripped_not_the_whole_phrase():
    assert names("Using Kubernetes at Acme Corp") == ["Kubernetes", "Acme Corp"]
    assert names("Congrats Caroline! Hey Mel") == ["Caroline", "Mel"]


def test_a_lone_word_at_a_sentence_start_needs_evidence():
    # "Alice" opens the sentence: capitalisation proves nothing, so it is only tentative
    assert extract("Alice prefers tabs.") == ([], [Entity("Alice", "name")])
    # ... a name when it also appears mid-sentence, or labels a line
    assert names("Alice prefers tabs. Everyone asks Alice.") == ["Alice"]
    assert names("Caroline: I went to the support group") == ["Caroline"]
    assert extract("  Alice prefers tabs.").entities == []  # leading spaces change nothing
    # frequent words at a sentence start are not even tentative
    assert extract("Nothing works. Awesome!") == ([], [])


def test_quoted_names_are_filtered_like_phrases():
    assert extract_entities('we named it "Project Phoenix"; she said "cool"') == [
        Entity("Project Phoenix", "name"),
    ]  # capitalised: found as a phrase first, the better reading
    assert extract_entities("the 'sable comet' rollout") == [Entity("sable comet", "quoted")]
    assert extract_entities('it printed "it is what it is" and `ls -la` and `a/b`') == []
    assert extract_entities("quoted “ab” is too short") == []


def test_single_letter_and_stop_words_are_never_names():
    assert extract_entities("I think A is fine. The end.") == []


# --- properties ----------------------------------------------------------------------------

texts = st.text(max_size=400)
prose = st.lists(
    st.sampled_from([
        "Alice", "met", "Bob", "at", "Bank", "of", "America", ".", "the", "postgres", "React",
        "github.com", '"Project X"', "Monday", "Fixed", "Bug", ",", "\n", "Caroline:", "'s",
        "src/Foo.py", "Hey", "NASA", "nextjs", "Lake", "Tahoe", "vs", "code", "—", "é",
    ]),
    max_size=60,
).map(" ".join)


@settings(max_examples=300)
@given(st.one_of(texts, prose))
def test_extraction_is_deterministic_and_never_raises(text):
    first = extract(text)
    assert extract(text) == first
    assert is_decision_content(text) == is_decision_content(text)


@settings(max_examples=300)
@given(st.one_of(texts, prose))
def test_names_are_unique_clean_canonical_keys(text):
    found = extract(text)
    keys = [canonical_name(e.name) for e in [*found.entities, *found.tentative]]
    assert len(keys) == len(set(keys))  # deduplicated by canonical name
    for e in [*found.entities, *found.tentative]:
        assert 0 < len(e.name) <= 60 and "\n" not in e.name
        assert collapse_whitespace(e.name) == e.name  # canonical_name() is its lowercase
        assert e.entity_type in {"technology", "domain", "name", "quoted"}
    for e in found.tentative:
        assert e.entity_type in {"name", "technology"} and " " not in e.name


@settings(max_examples=300)
@given(st.one_of(texts, prose))
def test_repeating_the_text_finds_nothing_new(text):
    """Idempotent: the same content twice names the same entities (a re-link adds nothing)."""
    once = {canonical_name(e.name) for e in extract_entities(text)}
    twice = {canonical_name(e.name) for e in extract_entities(text + "\n" + text)}
    assert twice == once


# --- decision language -----------------------------------------------------------------------


def test_the_battery_has_the_fourteen_patterns_of_document_000():
    assert len(DECISION_PATTERNS) == 14


@pytest.mark.parametrize(
    "text",
    [
        "We chose to use SQLite over Postgres for the daemon",
        "She chose Vue over React for the dashboard",
        "The team decided against microservices",
        "we decided on weekly releases",
        "We switched from npm to pnpm",
        "billing migrated away from the monolith",
        "picked Redis over Memcached for sessions",
        "In the end we went with FastAPI",
        "We're sticking with Python 3.11 for now",
        "We committed to shipping on Fridays only",
        "settled on tabs",
        "We will go with the blue theme",
        "The user prefers dark mode over light mode",
        "The team adopted trunk-based development",
        "Architecture decision: one writer connection",
        "Design decision: the daemon owns all writes",
    ],
)
def test_decision_language_is_detected(text):
    assert is_decision_content(text)


@pytest.mark.parametrize(
    "text",
    [
        "The deploy failed on Friday",
        "Caroline went to the support group",
        "I prefer coffee",  # a preference with no alternative
        "She picked up the kids",
        "Choose wisely. Over and out.",  # no decision verb form, and across sentences
        "We finally adopted a beagle from the shelter",  # a pet is no decision
        "They adopted two kids last year",
        "we decided",  # no object
    ],
)
def test_ordinary_text_is_not_decision_language(text):
    assert not is_decision_content(text)
