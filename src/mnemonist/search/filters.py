"""Recall filters as one SQL condition over the `memories` table aliased `m`."""

from __future__ import annotations

from typing import Any

from mnemonist.model.requests import RecallFilters


def where_clause(
    f: RecallFilters | None, *, include_deleted: bool = False
) -> tuple[str, list[Any]]:
    """`since` / `until` apply to event time (`occurred_at`); tags must all be present."""
    parts: list[str] = [] if include_deleted else ["m.is_deleted = 0", "m.superseded_at IS NULL"]
    args: list[Any] = []
    if f is not None:
        simple = {
            "type": "m.type = ?",
            "who": "m.who = ?",
            "project": "m.project = ?",
            "source_type": "m.source_type = ?",
            "source_id": "m.source_id = ?",
            "importance_min": "m.importance >= ?",
            "since": "m.occurred_at >= ?",
            "until": "m.occurred_at <= ?",
        }
        for name, sql in simple.items():
            value = getattr(f, name)
            if value is not None:
                parts.append(sql)
                args.append(value)
        if f.pinned is not None:
            parts.append("m.pinned = ?")
            args.append(int(f.pinned))
        for tag in f.tags or []:
            parts.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value = ?)")
            args.append(tag)
    return (" AND ".join(parts) or "1"), args


def only_project(f: RecallFilters | None) -> bool:
    """True when the project (or nothing) is the only filter: the vector index masks it itself."""
    if f is None:
        return True
    return all(getattr(f, n) is None for n in type(f).model_fields if n != "project")
