"""ChatGPT and claude.ai exports become turn memories: parsed along the branch the user saw,
imported through the CLI into a real daemon, found by recall, never imported twice."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mnemonist.cli.chat_exports import chatgpt_items, claude_items, detect
from mnemonist.cli.main import cli

TOPICS = ["sourdough starter", "marathon training", "tax deadlines", "garden soil", "bike gears",
          "python packaging", "guitar chords", "moving flats", "coffee grinders", "tent repair"]


def chatgpt_conversation(n: int, turns: list[tuple[str, str]]) -> dict[str, Any]:
    """The shape of ChatGPT's conversations.json: a tree of nodes, with a system root, an
    abandoned branch (an edited prompt) and `current_node` at the end of the shown branch."""
    cid = f"conv-{n:03d}"
    base = 1_700_000_000 + n * 86_400
    mapping: dict[str, Any] = {
        "root": {"id": "root", "message": None, "parent": None, "children": ["sys"]},
        "sys": {"id": "sys", "parent": "root", "children": [], "message": {
            "id": "sys", "author": {"role": "system"}, "create_time": None,
            "content": {"content_type": "text", "parts": ["You are ChatGPT"]}}},
    }
    parent = "sys"
    for i, (role, text) in enumerate(turns):
        node = f"{cid}-m{i}"
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": role}, "create_time": base + i * 60,
            "content": {"content_type": "text", "parts": [text]}, "metadata": {}}}
        mapping[parent]["children"].append(node)
        if i == 0:  # an edited first prompt: the old branch is not what the user kept
            old = f"{cid}-old"
            mapping[old] = {"id": old, "parent": parent, "children": [], "message": {
                "id": old, "author": {"role": "user"}, "create_time": base - 60,
                "content": {"content_type": "text", "parts": ["an abandoned draft prompt"]}}}
            mapping[parent]["children"].insert(0, old)
        parent = node
    return {"id": cid, "conversation_id": cid, "title": f"Chat {n}", "create_time": base,
            "update_time": base + 600, "mapping": mapping, "current_node": parent}


def chatgpt_export(count: int = 50) -> list[dict[str, Any]]:
    rng = random.Random(7)
    convs = []
    for n in range(count):
        topic = TOPICS[n % len(TOPICS)]
        turns = [("user", f"I have a question about {topic}, conversation {n}."),
                 ("assistant", f"Happy to help with {topic}. What would you like to know?"),
                 ("user", f"Give me one tip about {topic} number {rng.randint(1, 999)}."),
                 ("assistant", f"A common tip about {topic}: start small and keep notes.")]
        if n == 23:
            turns.insert(2, ("user", "By the way, my landlord said the boiler in flat 4B gets"
                                     " replaced on the 14th of March."))
        convs.append(chatgpt_conversation(n, turns))
    return convs


def run(live, *args: str) -> dict[str, Any]:
    out = CliRunner().invoke(cli, ["--url", live.url, "import", "--json", *args])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_chatgpt_turns_follow_the_shown_branch_with_times_and_keys():
    conv = chatgpt_conversation(1, [("user", "hello there"), ("assistant", "hi, how can I help")])
    items = chatgpt_items(conv, "home")
    assert [(i["who"], i["content"]) for i in items] == [
        ("user", "hello there"), ("assistant", "hi, how can I help")]
    assert items[0]["source_type"] == "chatgpt" and items[0]["source_id"] == "chatgpt:conv-001"
    assert items[0]["idempotency_key"] == "chatgpt:conv-001:conv-001-m0"
    assert items[0]["occurred_at"] == "2023-11-15T22:13:20.000Z" and items[0]["project"] == "home"
    assert detect([conv]) == "chatgpt" and detect([{"x": 1}]) is None
    # without current_node: from the root along the newest child
    del conv["current_node"]
    assert [i["content"] for i in chatgpt_items(conv)] == ["hello there", "hi, how can I help"]


def test_claude_export_messages_become_turns():
    conv = {"uuid": "c-1", "name": "Trip", "created_at": "2024-05-01T09:00:00Z",
            "chat_messages": [
                {"uuid": "x1", "sender": "human", "text": "Book the train to Lyon",
                 "created_at": "2024-05-01T09:00:05.123456+00:00"},
                {"uuid": "x2", "sender": "assistant", "text": "",
                 "content": [{"type": "text", "text": "The 8:14 train is booked."}],
                 "created_at": "2024-05-01T09:00:09Z"},
                {"uuid": "x3", "sender": "assistant", "text": "   "}]}
    items = claude_items(conv)
    assert [(i["who"], i["content"]) for i in items] == [
        ("user", "Book the train to Lyon"), ("assistant", "The 8:14 train is booked.")]
    assert items[0]["occurred_at"] == "2024-05-01T09:00:05.123Z"
    assert items[1]["source_id"] == "claude:c-1" and items[1]["idempotency_key"] == "claude:c-1:x2"
    assert detect([conv]) == "claude"


def test_a_chatgpt_export_is_recalled_and_never_imported_twice(live, tmp_path: Path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export(50)))
    first = run(live, str(path))
    assert first["format"] == "chatgpt" and first["created"] == 50 * 4 + 1
    live.flush()
    found = live.recall("when is the boiler in my flat being replaced?")["results"]
    top = [r["content"] for r in found[:5]]
    assert any("boiler in flat 4B" in c for c in top), top
    row = live.service.core.db.reader().execute(
        "SELECT who, source_type, source_id, occurred_at FROM memories WHERE content LIKE"
        " '%boiler in flat 4B%'").fetchone()
    assert tuple(row) == ("user", "chatgpt", "chatgpt:conv-023", "2023-12-07T22:15:20.000Z")
    assert not live.service.core.db.reader().execute(
        "SELECT 1 FROM memories WHERE content LIKE '%abandoned draft%' OR who = 'system'"
    ).fetchone()
    again = run(live, "--format", "chatgpt", str(path))
    assert again["created"] == 0 and again["replayed"] == 50 * 4 + 1


def test_a_claude_export_imports_through_the_cli(live, tmp_path: Path):
    convs = [{"uuid": f"cl-{n}", "name": f"n{n}", "created_at": "2024-06-01T10:00:00Z",
              "chat_messages": [
                  {"uuid": f"cl-{n}-a", "sender": "human", "text": f"Claude question {n} about"
                   " the greenhouse watering schedule", "created_at": "2024-06-01T10:00:00Z"},
                  {"uuid": f"cl-{n}-b", "sender": "assistant", "text": "Water at dawn, twice a"
                   " week in spring.", "created_at": "2024-06-01T10:00:30Z"}]}
             for n in range(3)]
    path = tmp_path / "claude.json"
    path.write_text(json.dumps(convs))
    assert run(live, str(path))["created"] == 6
    assert run(live, "--format", "claude", str(path))["created"] == 0
    bad = CliRunner().invoke(cli, ["--url", live.url, "import", "--format", "claude",
                                   str(tmp_path / "claude.json.missing")])
    assert bad.exit_code == 2
