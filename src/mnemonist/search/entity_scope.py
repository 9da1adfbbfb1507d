"""Which entities a read may see: the entity-level twin of `filters.visibility_clause`.

An entity belongs to one scope (project, agent_id, user_id; '' for none, migration 15). A
caller sees the entities of the scopes whose memories it may see: global ones, its own
agent's and user's, and the ones it asks for explicitly (`agents` / `users`, `*` for all);
`project` narrows to one project, `scope` to some projects plus the project-less ones.
"""

from __future__ import annotations

from typing import Any

from mnemonist.model.requests import ANY_SCOPE, Caller, RecallFilters


def owner_clause(caller: Caller | None, alias: str = "e") -> tuple[str, list[Any]]:
    parts: list[str] = []
    args: list[Any] = []
    dims = (("agent_id", caller.agent_id if caller else None, caller.agents if caller else None),
            ("user_id", caller.user_id if caller else None, caller.users if caller else None))
    for column, own, wider in dims:
        names = set(wider or ())
        if ANY_SCOPE in names:
            continue
        if own:
            names.add(own)
        names.discard("")
        ordered = sorted(names)
        if ordered:
            parts.append(f"{alias}.{column} IN ('', {', '.join('?' * len(ordered))})")
            args += ordered
        else:
            parts.append(f"{alias}.{column} = ''")
    return (" AND ".join(parts) or "1"), args


def entity_scope_clause(f: RecallFilters | Caller | None,
                        alias: str = "e") -> tuple[str, list[Any]]:
    """SQL over `entities` aliased `alias`: the entities `f` may see, in its projects."""
    where, args = owner_clause(f, alias)
    parts = [where]
    project = getattr(f, "project", None)
    if project is not None:
        parts.append(f"{alias}.project = ?")
        args.append(project)
    scope = getattr(f, "scope", None)
    if scope is not None:
        names = sorted({p.lower() for p in scope})
        if names:
            parts.append(f"({alias}.project = '' OR lower({alias}.project) IN"
                         f" ({', '.join('?' * len(names))}))")
            args += names
        else:
            parts.append(f"{alias}.project = ''")
    return " AND ".join(parts), args
