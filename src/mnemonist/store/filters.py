"""Who may read what, and the recall filters, as SQL over the `memories` table aliased `m`:
recall, list, forget, the graph boost and both stores' keyword legs share it. This is where
scopes are enforced: every read of memories passes `visibility_clause` (through
`where_clause`, or `visible_ids` by id), and every read of entities `entity_owner_clause`.

One rule decides both (`visible_scopes`): per dimension (agent, user), a caller sees the
global scope, its own id and the scopes it asks for explicitly (`*`: any). Memories and
entities only write "global" differently: NULL in `memories`, '' in `entities` (migration 15).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.model.requests import ANY_SCOPE, Caller, RecallFilters

#: a row private in some dimension (the partial index `memories_private` holds exactly these)
PRIVATE = "(m.agent_id IS NOT NULL OR m.user_id IS NOT NULL)"


def visible_scopes(caller: Caller | None) -> list[tuple[str, list[str] | None]]:
    """Per scope column (`agent_id`, `user_id`): the private scopes `caller` may read besides
    the global one, sorted (empty: the global one alone), or None for every scope (`*`).
    No caller: global only."""
    out: list[tuple[str, list[str] | None]] = []
    dims = (("agent_id", caller.agent_id if caller else None, caller.agents if caller else None),
            ("user_id", caller.user_id if caller else None, caller.users if caller else None))
    for column, own, wider in dims:
        names = set(wider or ())
        if ANY_SCOPE in names:
            out.append((column, None))
            continue
        if own:
            names.add(own)
        out.append((column, sorted(names)))
    return out


def visibility_clause(caller: Caller | None) -> tuple[str, list[Any]]:
    """The memories `caller` may see (`visible_scopes`; global is NULL)."""
    parts: list[str] = []
    args: list[Any] = []
    for column, names in visible_scopes(caller):
        if names is None:
            continue
        if names:
            marks = ", ".join("?" * len(names))
            parts.append(f"(m.{column} IS NULL OR m.{column} IN ({marks}))")
            args += names
        else:
            parts.append(f"m.{column} IS NULL")
    return (" AND ".join(parts) or "1"), args


def entity_owner_clause(caller: Caller | None, alias: str = "e") -> tuple[str, list[Any]]:
    """The entities (`entities` aliased `alias`) of the scopes `caller` may see
    (`visible_scopes`; global is '')."""
    parts: list[str] = []
    args: list[Any] = []
    for column, names in visible_scopes(caller):
        if names is None:
            continue
        named = [n for n in names if n]
        if named:
            parts.append(f"{alias}.{column} IN ('', {', '.join('?' * len(named))})")
            args += named
        else:
            parts.append(f"{alias}.{column} = ''")
    return (" AND ".join(parts) or "1"), args


def hidden_private(conn: sqlite3.Connection, caller: Caller | None) -> set[int]:
    """Seqs of live private memories `caller` may not see, for the vector index to mask out.
    Empty (one probe of an empty partial index) while nobody stores private memories."""
    if caller is not None and caller.sees_everything():
        return set()
    where, args = visibility_clause(caller)
    # only the partial index of private rows is read (a scan of nothing while there are none)
    sql = (f"SELECT m.seq FROM memories m INDEXED BY memories_private"
           f" WHERE {PRIVATE} AND m.is_deleted = 0 AND NOT ({where})")
    return {r[0] for r in conn.execute(sql, args)}


def visible_ids(conn: sqlite3.Connection, ids: list[str], caller: Caller | None) -> set[str]:
    """Which of these memory ids (live or deleted) `caller` may see."""
    where, args = visibility_clause(caller)
    out: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows = conn.execute(f"SELECT m.id FROM memories m WHERE m.id IN"
                            f" ({', '.join('?' * len(chunk))}) AND {where}", [*chunk, *args])
        out.update(r[0] for r in rows)
    return out


def where_clause(
    f: RecallFilters | None, *, include_deleted: bool = False
) -> tuple[str, list[Any]]:
    """`since` / `until` apply to event time (`occurred_at`); tags must all be present.

    Validity: by default only current memories (not superseded). `at_time` selects what was
    true then, superseded or not: valid_from ≤ at_time < valid_to (no valid_to: still true).
    `include_superseded` lets superseded memories through (with `at_time`, only those valid
    then). Always: only the memories the caller's identity may see (none: global ones)."""
    parts: list[str] = [] if include_deleted else ["m.is_deleted = 0"]
    visible, args = visibility_clause(f)
    if visible != "1":
        parts.append(visible)
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
