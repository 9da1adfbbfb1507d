"""JSON schemas of the review tools (review_list, review_decide, memory_restore): the pairs of
memories the consolidation engine could not settle (contradictions), the near-duplicates the
sweep found, what the engine settled on its own, and the one call that undoes a supersession.
The memory tools' schemas and the shared pieces are in `mcp/schemas.py`."""

from __future__ import annotations

from mnemonist.mcp.schemas import (
    MEMORY_ID,
    READER,
    _integer,
    _object,
    _string,
    _with_legacy_twins,
)
from mnemonist.model.requests import MAX_OFFSET

#: the kinds of pairs in the review queue (`store.consolidation.KINDS`)
KINDS = ["duplicate", "contradiction", "restated", "replaced"]
STATUSES = ["open", "dismissed", "resolved"]
ACTIONS = ["dismiss", "keep_a", "keep_b"]

PAIR_ID = _string("The pair's id (or a unique prefix of it, at least 4 characters), from "
                  "review_list.", min_length=1, max_length=200)
REASON = _string("Why (kept in the history of the memory that changes). Required.",
                 min_length=1, max_length=2000)

# -- input schemas -----------------------------------------------------------------------------

REVIEW_LIST_INPUT = _object(
    {
        "kind": {
            "type": "string",
            "enum": KINDS,
            "description": (
                "Only pairs of this kind: contradiction (two statements of one thing that "
                "disagree, nothing saying which is current), duplicate (near-duplicates), "
                "restated / replaced (what consolidation settled on its own: status resolved). "
                "Default: every kind."),
        },
        "status": {
            "type": "string",
            "enum": STATUSES,
            "default": "open",
            "description": "open: waiting for a decision; resolved: one side kept (by a "
                           "person or by consolidation); dismissed: left as they are.",
        },
        "limit": _integer("How many pairs to return at most, newest first.", 1, 500, 50),
        "offset": _integer("How many pairs to skip (next page: offset + limit).", 0,
                           MAX_OFFSET, 0),
        **READER,
    },
)

REVIEW_DECIDE_INPUT = _object(
    {
        "id": PAIR_ID,
        "action": {
            "type": "string",
            "enum": ACTIONS,
            "description": (
                "dismiss: both stay as they are and the pair is never listed again; keep_a / "
                "keep_b: that memory stays current and the other is superseded by it (out of "
                "search, history kept; memory_restore undoes it)."),
        },
        "reason": REASON,
        **READER,
    },
    ["id", "action", "reason"],
)

RESTORE_INPUT = _object(
    {
        "id": {**MEMORY_ID, "description": (
            "The superseded memory to make current again: for a pair from review_list, the "
            "side that is not `kept`.")},
        "reason": _string("Why it comes back (kept in its history). Required.",
                          min_length=1, max_length=2000),
        "if_version": _integer(
            "Only restore it if its version is still this one; otherwise fail with "
            "version_conflict.", 1),
        **READER,
    },
    ["id", "reason"],
)

# -- output schemas (what structuredContent holds; loose: the daemon may add fields) -------------

_SIDE = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "content": {"type": ["string", "null"]},
        "type": {"type": ["string", "null"]}, "created_at": {"type": ["string", "null"]},
    },
}
REVIEW_LIST_OUTPUT = {
    "type": "object",
    "properties": {
        "duplicates": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string", "description": "the pair's id (review_decide's id)"},
            "kind": {"type": "string", "enum": KINDS},
            "status": {"type": "string", "enum": STATUSES},
            "similarity": {"type": "number", "description": "cosine of the two, 0–1"},
            "reason": {"type": ["string", "null"],
                       "description": "why the pair was listed or settled"},
            "kept": {"type": ["string", "null"],
                     "description": "resolved: the id of the memory that stayed current"},
            "a": {**_SIDE, "description": "the memory written first"},
            "b": {**_SIDE, "description": "the memory written later"},
        }}},
        "total": {"type": "integer"},
        "status": {"type": "string"},
        "kind": {"type": ["string", "null"]},
        "limit": {"type": "integer"},
        "offset": {"type": "integer"},
    },
    "required": ["duplicates", "total"],
}
REVIEW_DECIDE_OUTPUT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "status": {"type": "string", "enum": ["dismissed", "resolved"]},
        "kept": {"type": "string", "description": "keep_a / keep_b: the memory kept"},
        "superseded": {"type": "string",
                       "description": "keep_a / keep_b: the memory superseded by it"},
    },
    "required": ["id", "status"],
}
RESTORE_OUTPUT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "status": {"type": "string", "description": "restored"},
        **_with_legacy_twins({
            "superseded_by": {"type": ["string", "null"],
                              "description": "the memory that had superseded it (stays"
                                             " current)"},
            "current_version": {"type": "integer"},
            "new_version": {"type": "integer"},
        }),
    },
    "required": ["id", "status"],
}
