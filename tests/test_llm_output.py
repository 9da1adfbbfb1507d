"""Reading JSON out of LLM answers: think blocks, fences, tolerant parsing; never raises."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonist.text.llm_output import (
    parse_llm_json,
    remove_trailing_commas,
    single_to_double_quotes,
    strip_fences,
    strip_think,
)

FACTS = {"facts": [{"content": "Alice prefers tabs", "type": "preference", "confidence": 0.8}],
         "entities": []}


@pytest.mark.parametrize("text", [
    json.dumps(FACTS),
    "<think>The user talks about tabs. {maybe}</think>\n" + json.dumps(FACTS),
    "<THINK>\nreasoning\n</THINK>" + json.dumps(FACTS),
    "```json\n" + json.dumps(FACTS, indent=2) + "\n```",
    "Here you go:\n```\n" + json.dumps(FACTS) + "\n```\nAnything else?",
    "<think>hm</think>\n```json\n" + json.dumps(FACTS) + "\n```",
    "Sure! " + json.dumps(FACTS) + " Hope that helps {really}.",
    "reasoning the template opened</think>" + json.dumps(FACTS),
    "<think>first {\"facts\": []} is wrong, so the answer is " + json.dumps(FACTS),
    "```json\n" + json.dumps(FACTS),  # unterminated fence
])
def test_wrapped_answers_parse(text):
    value, _ = parse_llm_json(text)
    assert value == FACTS


def test_repairs_are_reported():
    value, warnings = parse_llm_json('{"facts": [{"content": "x y z w v u",},],}')
    assert value == {"facts": [{"content": "x y z w v u"}]}
    assert any("trailing commas" in w for w in warnings)
    value, warnings = parse_llm_json("{'action': 'none', 'reason': \"it's covered\", 'ok': True}")
    assert value == {"action": "none", "reason": "it's covered", "ok": True}
    assert any("single quotes" in w for w in warnings)


@pytest.mark.parametrize("text", [
    "", "   ", "no json here", "{not: json", "<think>only thinking</think>", "[1, 2",
    "```\n```", "{'unterminated: 1}", '"a string"', "42", "null", "[" * 10000, "{" * 10000,
])
def test_unreadable_answers_give_none_and_a_warning(text):
    value, warnings = parse_llm_json(text)
    assert value is None and warnings


def test_non_text_input():
    assert parse_llm_json(None) == (None, ["output is not text"])
    assert parse_llm_json(b"{}")[0] is None


def test_json_inside_a_string_is_left_alone():
    data = {"content": "<think>not a thought</think> ```fence``` {x}"}
    assert parse_llm_json(json.dumps(data)) == (data, [])


def test_helpers():
    assert strip_think("<think>a</think>b") == ("b", [])
    assert strip_think("<think>never closed {") == ("never closed {", ["unclosed <think> block"])
    assert strip_fences("```json\n{}\n```") == ("{}", [])
    assert remove_trailing_commas('{"a": [1, 2, ], "s": ",]"}') == '{"a": [1, 2 ], "s": ",]"}'
    assert single_to_double_quotes("{'a': 'say \"hi\"'}") == '{"a": "say \\"hi\\""}'


# -- properties -------------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers(-10**9, 10**9) | st.floats(
    allow_nan=False, allow_infinity=False) | st.text(max_size=30)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12,
)
containers = st.lists(json_values, max_size=4) | st.dictionaries(
    st.text(max_size=8), json_values, max_size=4)
#: prose that cannot itself look like JSON, a fence or a think tag
prose = st.text(alphabet=st.characters(blacklist_characters="{}[]\"'`<>\\",
                                       blacklist_categories=("Cs",)), max_size=40)
safe_text = st.text(alphabet=st.characters(blacklist_characters="`<>",
                                           blacklist_categories=("Cs",)), max_size=20)
safe_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | safe_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(safe_text, inner, max_size=3),
    max_leaves=10,
)
safe_containers = st.lists(safe_values, max_size=3) | st.dictionaries(
    safe_text, safe_values, max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_never_raises_on_any_text(text):
    value, warnings = parse_llm_json(text)
    assert value is None or isinstance(value, dict | list)
    assert isinstance(warnings, list)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='{}[]",:\' \n<>/thinkTF`0123456789abc\\', max_size=200))
def test_never_raises_on_json_like_noise(text):
    value, _ = parse_llm_json(text)
    assert value is None or isinstance(value, dict | list)


@settings(max_examples=200, deadline=None)
@given(containers)
def test_plain_json_round_trips(value):
    assert parse_llm_json(json.dumps(value)) == (value, [])


@settings(max_examples=200, deadline=None)
@given(safe_containers, prose, prose, prose, st.booleans(), st.booleans())
def test_wrapped_json_round_trips(value, before, after, thought, think, fence):
    body = json.dumps(value, indent=1)
    if fence:
        body = f"```json\n{body}\n```"
    text = f"{before}\n{body}\n{after}"
    if think:
        text = f"<think>{thought}</think>\n{text}"
    parsed, _ = parse_llm_json(text)
    assert parsed == value


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(alphabet="abcxyz", min_size=1, max_size=5),
                       st.lists(st.integers(0, 9), max_size=3), min_size=1, max_size=4))
def test_trailing_commas_are_tolerated(value):
    text = json.dumps(value).replace("]", ",]").replace("}", ",}")
    assert parse_llm_json(text)[0] == value
