"""`mnemonist import FILE`: JSON array, JSON lines, or a conversation file, with progress."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from mnemonist.service.importer import derived_key

CHUNK = 1000


def read_items(path: Path) -> list[dict[str, Any]]:
    """Items from a JSON array, JSON lines, {"items": [...]}, or a conversation file:
    {"source_id", "project"?, "messages": [{"speaker"|"role", "text"|"content", "at"}]}."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError:
        data = [json.loads(line) for line in text.splitlines() if line.strip()]
    if isinstance(data, dict) and "messages" in data:
        return conversation_items(data)
    if isinstance(data, dict) and "items" in data:
        defaults = {k: v for k, v in data.items() if k != "items"}
        return [{**defaults, **item} for item in data["items"]]
    if isinstance(data, dict):
        return [data]
    return list(data)


def conversation_items(conv: dict[str, Any]) -> list[dict[str, Any]]:
    items = []
    for msg in conv["messages"]:
        speaker = msg.get("speaker") or msg.get("role")
        body = msg.get("text") or msg.get("content") or ""
        item = {
            "content": f"{speaker}: {body}" if speaker else body,
            "who": speaker,
            "source_id": conv.get("source_id"),
            "source_type": conv.get("source_type", "conversation"),
            "project": conv.get("project"),
            "occurred_at": msg.get("at") or conv.get("at"),
        }
        items.append({k: v for k, v in item.items() if v is not None})
    return items


def with_keys(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Derive idempotency keys over the whole file, so chunked posts stay idempotent."""
    positions: dict[tuple[Any, Any], int] = {}
    out = []
    for item in items:
        if "idempotency_key" not in item and "idempotencyKey" not in item:
            source = (item.get("project"), item.get("source_id") or item.get("sourceId") or "")
            pos = positions.get(source, 0)
            positions[source] = pos + 1
            key = derived_key(source[0], source[1] or None, pos, str(item.get("content", "")),
                              item.get("occurred_at"))
            item = {**item, "idempotency_key": key}
        out.append(item)
    return out


def run_import(client, path: Path, project: str | None, show_progress: bool) -> dict[str, int]:
    items = read_items(path)
    if project:
        items = [{"project": project, **i} for i in items]
    items = with_keys(items)
    totals = {"total": 0, "created": 0, "deduplicated": 0, "replayed": 0}
    with click.progressbar(length=len(items), label="importing", file=None,
                           hidden=not show_progress) as bar:
        for start in range(0, len(items), CHUNK):
            chunk = items[start : start + CHUNK]
            out = client.request("POST", "/api/memory/import", json={"items": chunk})
            for key in totals:
                totals[key] += out[key]
            bar.update(len(chunk))
    return totals
