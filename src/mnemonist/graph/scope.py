"""Which entities a read may see: the scopes' rule of the memories (store/filters.py,
`visible_scopes`, one rule for both), narrowed to the projects the read asks for.

An entity belongs to one scope (project, agent_id, user_id; '' for none, migration 15). A
caller sees the entities of the scopes whose memories it may see: global ones, its own
agent's and user's, and the ones it asks for explicitly (`agents` / `users`, `*` for all);
`project` narrows to one project, `scope` to some projects plus the project-less ones.
"""

from __future__ import annotations

from typing import Any

from mnemonist.model.requests import Caller, RecallFilters
from mnemonist.store.filters import entity_owner_clause


def entity_scope_clause(f: RecallFilters | Caller | None,
                        alias: str = "e") -> tuple[str, list[Any]]:
    """SQL over `entities` aliased `alias`: the entities `f` may see, in its projects."""
    where, args = entity_owner_clause(f, alias)
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
