"""Recall filters as one SQL condition over the `memories` table aliased `m`: recall, list,
forget and the graph boost share it."""

from __future__ import annotations

from typing import Any

from mnemonist.model.requests import RecallFilters

#: the filters the vector index applies itself (a mask over its project codes)
INDEX_MASKED = frozenset({"project", "scope"})


def where_clause(
    f: RecallFilters | None, *, include_deleted: bool = False
) -> tuple[str, list[Any]]:
    """`since` / `until` apply to event time (`occurred_at`); tags must all be present.

    Validity: by default only current memories (not superseded). `at_time` selects what was
    true then, superseded or not: valid_from ≤ at_time < valid_to (no valid_to: still true).
    `include_superseded` lets superseded memories through (with `at_time`, only those valid
    then)."""
    parts: list[str] = [] if include_deleted else ["m.is_deleted = 0"]
    args: list[Any] = []
    widen = f is not None and (f.include_superseded or f.at_time is not None)
    if not include_deleted and not widen:
        parts.append("m.superseded_at IS NULL")
    if f is not None:
        simple = {
            "type": "m.type = ?",
            "who": "m.who = ?",
            "project": "m.project = ?",
            "source_type": "m.source_type = ?",
            "source_id": "m.source_id = ?",
            "key": "m.key = ?",
            "importance_min": "m.importance >= ?",
            "since": "m.occurred_at >= ?",
            "until": "m.occurred_at <= ?",
        }
        for name, sql in simple.items():
            value = getattr(f, name)
            if value is not None:
                parts.append(sql)
                args.append(value)
        if f.at_time is not None:
            parts.append("COALESCE(m.valid_from, m.occurred_at) <= ?"
                         " AND (m.valid_to IS NULL OR m.valid_to > ?)")
            args += [f.at_time, f.at_time]
        if f.scope is not None:
            names = sorted({p.lower() for p in f.scope})
            marks = ", ".join("?" * len(names))
            parts.append(f"(m.project IS NULL OR lower(m.project) IN ({marks}))" if names
                         else "m.project IS NULL")
            args += names
        if f.pinned is not None:
            parts.append("m.pinned = ?")
            args.append(int(f.pinned))
        if f.community is not None:
            parts.append("EXISTS (SELECT 1 FROM memory_entity_mentions cm JOIN entities ce"
                         " ON ce.id = cm.entity_id WHERE cm.memory_id = m.id"
                         " AND ce.community_id = ?)")
            args.append(f.community)
        for tag in f.tags or []:
            parts.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value = ?)")
            args.append(tag)
    return (" AND ".join(parts) or "1"), args


def only_project(f: RecallFilters | None) -> bool:
    """True when the project and the scope (or nothing) are the only filters: the vector index
    masks them itself."""
    if f is None:
        return True
    return all(getattr(f, n) is None for n in type(f).model_fields if n not in INDEX_MASKED)


def historical(f: RecallFilters | None) -> bool:
    """True when superseded memories may pass (they are not in the live vector index)."""
    return f is not None and bool(f.include_superseded or f.at_time is not None)
