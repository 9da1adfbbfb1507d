"""Recall filters as the search legs use them: the SQL condition itself (`where_clause`) and
the scopes' rule (`visibility_clause`, `visible_ids`, `hidden_private`) live in the store
(store/filters.py, which both stores' keyword legs read too) and are imported from here; this
module adds what only the vector index needs to know about a set of filters."""

from __future__ import annotations

from mnemonist.model.requests import IDENTITY_FIELDS, RecallFilters
from mnemonist.store.filters import (
    PRIVATE,
    hidden_private,
    visibility_clause,
    visible_ids,
    where_clause,
)

__all__ = [
    "INDEX_MASKED",
    "PRIVATE",
    "hidden_private",
    "historical",
    "only_project",
    "visibility_clause",
    "visible_ids",
    "where_clause",
]

#: the filters the vector index applies itself (a mask over its project codes; private
#: memories the caller may not see are masked out by seq: `hidden_private`)
INDEX_MASKED = frozenset({"project", "scope", *IDENTITY_FIELDS})


def only_project(f: RecallFilters | None) -> bool:
    """True when the project and the scope (or nothing) are the only filters: the vector index
    masks them itself."""
    if f is None:
        return True
    return all(getattr(f, n) is None for n in type(f).model_fields if n not in INDEX_MASKED)


def historical(f: RecallFilters | None) -> bool:
    """True when superseded memories may pass (they are not in the live vector index)."""
    return f is not None and bool(f.include_superseded or f.at_time is not None)
