"""Transcript lines → turns (pure): what is said is kept in order with its time and a stable
key, tool calls are one short line at most, tool output and thinking are not memory;
speakers, the significance of a turn, and reading whole lines incrementally."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from mnemonist.sessions.reader import take_lines
from mnemonist.sessions.turns import (
    SessionTurn,
    is_substantive,
    speaker_label,
    speakers,
    turns_of_lines,
)


def numbered(*lines: dict | str) -> list[tuple[int, str]]:
    return [(i, x if isinstance(x, str) else json.dumps(x)) for i, x in enumerate(lines)]


def test_turns_keep_what_was_said_in_order_with_time_and_a_stable_key():
    lines = numbered(
        {"type": "file-history-snapshot", "snapshot": {}},
        {"type": "user", "uuid": "u1", "timestamp": "2025-10-01T10:00:00Z",
         "message": {"role": "user", "content": "Add a rate limiter"}},
        {"type": "assistant", "uuid": "u2", "timestamp": "2025-10-01T10:01:00Z",
         "message": {"role": "assistant", "content": [
             {"type": "thinking", "thinking": "secret plan"},
             {"type": "text", "text": "Reading the handler."},
             {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a.py"}},
             {"type": "tool_use", "id": "t2", "name": "Edit", "input": {"file_path": "/a.py"}},
             {"type": "tool_use", "id": "t3", "name": "Bash",
              "input": {"command": "pytest  -q"}}]}},
        {"type": "user", "uuid": "u3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "def handler(): ..."},
            {"type": "tool_result", "tool_use_id": "t3", "is_error": True,
             "content": "3 failed, 12 passed in 2.1s"}]}},
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": "meta"}},
        {"type": "user", "message": {"role": "user",
                                     "content": "<command-name>/clear</command-name>"}},
        {"type": "summary", "summary": "Rate limiting"},
        "{ torn",
        {"role": "user", "content": "plain role/content lines work too"},
    )
    turns = turns_of_lines("s1", lines)
    assert [(t.role, t.text) for t in turns] == [
        ("user", "Add a rate limiter"),
        ("assistant", "Reading the handler."),
        ("tool", "edited /a.py"),  # its result is not among the lines
        ("tool", "ran `pytest -q`: 3 failed, 12 passed"),
        ("user", "plain role/content lines work too"),
    ]
    assert [t.key for t in turns] == ["turn:u1", "turn:u2", "tool:u2:3", "tool:u2:4",
                                      "turn:s1:8"]
    assert turns[0].timestamp == "2025-10-01T10:00:00Z" and turns[4].timestamp is None
    assert [t.speaker() for t in turns[:3]] == ["user", "assistant", "assistant"]


def test_a_tool_call_whose_result_is_not_read_yet_has_no_outcome():
    line = {"type": "assistant", "uuid": "u", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "Write", "input": {"path": "/b.md"}}]}}
    assert [t.text for t in turns_of_lines("s", numbered(line))] == ["edited /b.md"]


def test_speaker_labels_are_names_not_ordinary_words():
    assert speaker_label("Caroline: I went to the support group") == "Caroline"
    assert speaker_label("Jon Snow: winter is coming") == "Jon Snow"
    for text in ("Note: the build is red", "Error: no such file", "TODO: tests",
                 "Update: shipped", "Monday: standup", "Assistant: hi", "https://x.io: ok",
                 "Maria said: hi", "caroline: lower case", "Gina:no space"):
        assert speaker_label(text) is None, text
    said = [SessionTurn("k", i, role, text, None) for i, (role, text) in enumerate([
        ("user", "Melanie: I painted a lake"), ("assistant", "Caroline: so pretty!"),
        ("user", "Melanie: thanks, it took a week"),
        ("assistant", "Rotated: the key is in the vault")])]
    names = speakers(said)
    assert names == {"Melanie"}  # one label alone is more likely a word than a speaker
    assert [t.speaker(names) for t in said] == ["Melanie", "assistant", "Melanie", "assistant"]
    assert said[1].speaker(speakers(said, known={"Caroline"})) == "Caroline"


def test_greetings_and_acknowledgements_are_not_substantive():
    def said(text: str, role: str = "user") -> bool:
        return is_substantive(SessionTurn("k", 0, role, text, None))

    for text in ("hi!", "Hello! How can I help you today?", "thanks, bye", "ok", "Sure thing!",
                 "You're welcome! Goodbye.", "Good morning"):
        assert not said(text, "assistant"), text
    assert said("The staging database moved to eu-west-2")
    assert said("edited src/app.py", "tool")


@given(st.lists(st.text(alphabet="ab\n", max_size=12), max_size=8), st.booleans())
def test_reading_in_pieces_takes_every_whole_line_once(pieces, final):
    data = "".join(pieces).encode()
    taken: list[tuple[int, str]] = []
    offset, line = 0, 0
    for cut in sorted({min(len(data), len("".join(pieces[:i]).encode()))
                       for i in range(len(pieces) + 1)}):
        chunk = take_lines(data[offset:cut], offset, line, final=final and cut == len(data))
        taken += chunk.lines
        offset, line = chunk.end, chunk.next_line
    expected = [(i, x) for i, x in enumerate(data.decode().split("\n")) if x.strip()]
    if not final and not data.decode().endswith("\n"):
        expected = [(i, x) for i, x in expected if i < data.decode().count("\n")]
    assert taken == expected


def test_codex_rollout_lines_give_turns_too():
    lines = numbered(
        {"timestamp": "2025-10-01T10:00:00Z", "type": "session_meta", "payload": {"id": "x"}},
        {"timestamp": "2025-10-01T10:00:01Z", "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "Why is the build red?"}]}},
        {"timestamp": "2025-10-01T10:00:02Z", "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": "c1",
            "arguments": json.dumps({"command": ["bash", "-lc", "make test"]})}},
        {"timestamp": "2025-10-01T10:00:03Z", "type": "response_item", "payload": {
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "A missing fixture broke it."}]}},
    )
    assert [(t.role, t.text) for t in turns_of_lines("c", lines)] == [
        ("user", "Why is the build red?"), ("tool", "ran `bash -lc make test`"),
        ("assistant", "A missing fixture broke it.")]
