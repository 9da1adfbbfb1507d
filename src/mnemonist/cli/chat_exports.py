"""Conversations exported from ChatGPT and claude.ai, as import items (docs/export.md).

Each message the user or the assistant wrote becomes one item shaped like a session turn:
its text, `who` the role (`user` / `assistant`; claude.ai's `human` is `user`), `occurred_at`
the message's own time, `source_id` the conversation (`chatgpt:<id>` / `claude:<uuid>`, so a
turn's neighbours are the turns around it) and `idempotency_key` the message's own id, so a
second import of the same export creates nothing. System, tool and hidden messages, and
messages without text, are left out. Pure parsing: `mnemonist import` (cli/export_cmd.py)
reads the file and posts the items to the daemon, so this runs in the CLI's process alone.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mnemonist.model.memory import format_ts

CHATGPT = "chatgpt"
CLAUDE = "claude"
TURN_TYPE = "episodic"
TURN_IMPORTANCE = 0.5
MAX_CHARS = 100_000  # memory.max_content_chars' default; longer messages are cut
ROLES = {"user": "user", "human": "user", "assistant": "assistant"}


def detect(data: Any) -> str | None:
    """`chatgpt`, `claude` or None, from the shape of a parsed `conversations.json`."""
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return None
    first = data[0]
    if "mapping" in first:
        return CHATGPT
    if "chat_messages" in first:
        return CLAUDE
    return None


def items_of(data: Any, fmt: str, project: str | None = None) -> list[dict[str, Any]]:
    conversations = [data] if isinstance(data, dict) else data
    if not isinstance(conversations, list):
        raise ValueError("an export is a JSON list of conversations")
    parse = chatgpt_items if fmt == CHATGPT else claude_items
    out: list[dict[str, Any]] = []
    for n, conv in enumerate(conversations):
        if not isinstance(conv, dict):
            raise ValueError(f"conversation {n} is not a JSON object")
        out.extend(parse(conv, project))
    return out


def _time(value: Any) -> str | None:
    """Epoch seconds (ChatGPT) or ISO 8601 text (claude.ai) as our timestamp."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_ts(datetime.fromtimestamp(float(value), UTC))
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return format_ts(parsed.astimezone(UTC))
    return None


def _item(fmt: str, conv_id: str, msg_id: str, role: str, text: str, at: str | None,
          project: str | None) -> dict[str, Any]:
    text = text.strip()
    if len(text) > MAX_CHARS:
        text = text[: MAX_CHARS - 1] + "…"
    item = {"content": text, "who": role, "type": TURN_TYPE, "importance": TURN_IMPORTANCE,
            "source_type": fmt, "source_id": f"{fmt}:{conv_id}",
            "idempotency_key": f"{fmt}:{conv_id}:{msg_id}", "occurred_at": at,
            "project": project}
    return {k: v for k, v in item.items() if v is not None}


# -- ChatGPT --------------------------------------------------------------------------------
def _chatgpt_path(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The nodes of the conversation as shown: from the root to `current_node` (the branch
    the user last saw); without one, from the root along each node's last child."""
    path: list[dict[str, Any]] = []
    if isinstance(current, str) and current in mapping:
        seen: set[str] = set()
        node_id: Any = current
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            path.append(mapping[node_id])
            node_id = mapping[node_id].get("parent")
        return path[::-1]
    roots = [n for n in mapping.values() if isinstance(n, dict) and not n.get("parent")]
    node = roots[0] if roots else None
    seen_ids: set[int] = set()
    while isinstance(node, dict) and id(node) not in seen_ids:
        seen_ids.add(id(node))
        path.append(node)
        children = [c for c in node.get("children") or [] if c in mapping]
        node = mapping[children[-1]] if children else None
    return path


def _chatgpt_text(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    if content.get("content_type") not in ("text", "multimodal_text", None):
        return ""  # code runs, browsing results, reasoning: not what was said
    parts = content.get("parts") or []
    return "\n".join(p for p in parts if isinstance(p, str) and p.strip())


def chatgpt_items(conv: dict[str, Any], project: str | None = None) -> list[dict[str, Any]]:
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError("a ChatGPT conversation needs its `mapping`")
    conv_id = str(conv.get("conversation_id") or conv.get("id") or "")
    if not conv_id:
        raise ValueError(f"ChatGPT conversation {conv.get('title')!r} has no id")
    fallback = _time(conv.get("create_time"))
    items = []
    for node in _chatgpt_path(mapping, conv.get("current_node")):
        msg = node.get("message")
        if not isinstance(msg, dict):
            continue
        role = ROLES.get(str((msg.get("author") or {}).get("role")))
        if role is None or (msg.get("metadata") or {}).get("is_visually_hidden_from_conversation"):
            continue
        text = _chatgpt_text(msg.get("content"))
        if not text.strip():
            continue
        msg_id = str(msg.get("id") or node.get("id") or "")
        at = _time(msg.get("create_time")) or fallback
        items.append(_item(CHATGPT, conv_id, msg_id, role, text, at, project))
    return items


# -- claude.ai ------------------------------------------------------------------------------
def _claude_text(msg: dict[str, Any]) -> str:
    text = msg.get("text")
    if isinstance(text, str) and text.strip():
        return text
    blocks = msg.get("content") or []
    return "\n".join(b["text"] for b in blocks if isinstance(b, dict)
                     and b.get("type") == "text" and isinstance(b.get("text"), str))


def claude_items(conv: dict[str, Any], project: str | None = None) -> list[dict[str, Any]]:
    messages = conv.get("chat_messages")
    if not isinstance(messages, list):
        raise ValueError("a Claude conversation needs its `chat_messages`")
    conv_id = str(conv.get("uuid") or "")
    if not conv_id:
        raise ValueError(f"Claude conversation {conv.get('name')!r} has no uuid")
    fallback = _time(conv.get("created_at"))
    items = []
    for n, msg in enumerate(messages):
        if not isinstance(msg, dict):
            continue
        role = ROLES.get(str(msg.get("sender")))
        text = _claude_text(msg)
        if role is None or not text.strip():
            continue
        at = _time(msg.get("created_at")) or fallback
        items.append(_item(CLAUDE, conv_id, str(msg.get("uuid") or n), role, text, at, project))
    return items
