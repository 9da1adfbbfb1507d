"""The MCP tools' JSON schemas: the input each tool accepts (precise: types, bounds, required
fields, no unknown fields) and the output its structuredContent holds (loose: the daemon may
add fields). Kept apart from the tools themselves (`mcp/tools.py`), which say what each call
does."""

from __future__ import annotations

from typing import Any

from mnemonist.model.answers import LEGACY_KEYS
from mnemonist.model.memory import MEMORY_TYPES

# -- shared schema pieces ----------------------------------------------------------------------

WHEN = (
    "ISO 8601 date (2026-03-01, meaning its midnight) or date-time (2026-03-01T09:30:00Z); "
    "no zone means UTC"
)


def _string(description: str, *, min_length: int | None = None,
            max_length: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string", "description": description}
    if min_length is not None:
        out["minLength"] = min_length
    if max_length is not None:
        out["maxLength"] = max_length
    return out


def _integer(description: str, minimum: int, maximum: int | None = None,
             default: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "minimum": minimum, "description": description}
    if maximum is not None:
        out["maximum"] = maximum
    if default is not None:
        out["default"] = default
    return out


def _boolean(description: str, default: bool | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "boolean", "description": description}
    if default is not None:
        out["default"] = default
    return out


def _fraction(description: str) -> dict[str, Any]:
    return {"type": "number", "minimum": 0.0, "maximum": 1.0, "description": description}


MEMORY_ID = _string("The memory's id (a UUID, as returned by the other memory tools).",
                    min_length=1, max_length=200)
TYPE = {
    "type": "string",
    "enum": list(MEMORY_TYPES),
    "description": "Kind of memory: fact, preference, decision, rule, learning, issue, ...",
}
TAGS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 200},
    "maxItems": 100,
    "description": "Tags (lower-cased on the way in).",
}


def _filters(verb: str) -> dict[str, dict[str, Any]]:
    """The filters recall, list and forget share; `verb` completes each description."""
    return {
        "type": {**TYPE, "description": f"{verb} memories of this type only."},
        "tags": {**TAGS, "description": f"{verb} memories carrying all of these tags."},
        "who": _string(f"{verb} memories stored by this agent or person only (e.g. claude-code).",
                       max_length=200),
        "pinned": _boolean(f"true: {verb.lower()} pinned memories only; false: unpinned only."),
        "importance_min": _fraction(f"{verb} memories with at least this importance (0–1)."),
        "since": _string(f"{verb} memories that occurred at or after this time: {WHEN}."),
        "until": _string(f"{verb} memories that occurred before this time: {WHEN}."),
        "project": _string(
            f"{verb} memories of this project only (a name or the working directory's path).",
            max_length=500,
        ),
        "source_type": _string(f"{verb} memories from this kind of source (chat, file, ...).",
                               max_length=100),
        "source_id": _string(f"{verb} memories from this source (a session or document id).",
                             max_length=500),
        "key": _string(f"{verb} memories stored under this lifecycle key only (see "
                       "memory_store).", min_length=1, max_length=500),
        "at_time": _string(
            f"{verb} what was true at this time: memories valid then, superseded ones "
            f"included: {WHEN}."),
        "include_superseded": _boolean(
            f"{verb} superseded (replaced) versions as well as current ones."),
        "community": _integer(
            f"{verb} memories naming an entity of this knowledge-graph community (see "
            "GET /api/diagnostics/graph).", 0),
    }


_SCOPE_LIST = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 200},
    "maxItems": 100,
}
#: who reads: every tool but memory_store takes them (the server's --agent / --user fill them)
READER = {
    "agent_id": _string(
        "Read as this agent: global memories plus this agent's private ones (default: the "
        "server's --agent; none: global memories only).", min_length=1, max_length=200),
    "user_id": _string(
        "Read as this user: global memories plus this user's private ones (default: the "
        "server's --user).", min_length=1, max_length=200),
    "agents": {**_SCOPE_LIST, "description": (
        "Also read these agents' private memories (an explicit cross-scope read); [\"*\"]: "
        "every agent's.")},
    "users": {**_SCOPE_LIST, "description": (
        "Also read these users' private memories; [\"*\"]: every user's.")},
}


def _with_legacy_twins(properties: dict[str, Any]) -> dict[str, Any]:
    """`properties` and, for each key an older answer spelt in camelCase
    (model/answers.py `LEGACY_KEYS`), that spelling too, deprecated (still sent)."""
    out = dict(properties)
    for snake, camel in LEGACY_KEYS.items():
        if snake in properties:
            out[camel] = {**properties[snake], "deprecated": True,
                          "description": f"the earlier spelling of {snake}"}
    return out


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


# -- input schemas -----------------------------------------------------------------------------

SEARCH_INPUT = _object(
    {
        "query": _string(
            "What to look for, in natural language or keywords (e.g. 'how do we deploy the "
            "api?'). Time words ('last week', 'in March 2026') favour memories from then.",
            min_length=1, max_length=10_000,
        ),
        "limit": _integer("How many memories to return at most.", 1, 200, 10),
        **_filters("Return"),
        "min_score": _fraction(
            "Drop results scoring below this relevance (0–1); leave unset to get the best "
            "`limit` results whatever their score."
        ),
        "context": _integer(
            "Also return this many neighbouring memories from the same source on each side of "
            "every result (the surrounding conversation turns).", 0, 20, 0,
        ),
        "now": _string(f"Reference time for relative expressions like 'yesterday': {WHEN}. "
                       "Default: the current time."),
        "time_filter": _boolean(
            "true: a time named in the query restricts results to that period; false: it only "
            "ranks memories from then higher.", False,
        ),
        "expand": _boolean(
            "Attach the full stored session transcript to each result that has one (can be "
            "long).", False,
        ),
        **READER,
    },
    ["query"],
)

STORE_INPUT = _object(
    {
        "content": _string(
            "The memory: one self-contained statement that makes sense without this "
            "conversation. Prefix 'critical: ' to pin it with importance 1.0; prefix "
            "'[tag1,tag2]: ' to tag it; both combine ('critical: [auth]: never log tokens').",
            min_length=1,
        ),
        "type": {**TYPE, "description": (
            "Kind of memory. Leave unset to infer it from the wording (prefers → preference, "
            "decided → decision, never/always/must → rule, learned → learning, bug/broken → "
            "issue, else fact)."
        )},
        "importance": _fraction(
            "0–1; default memory.default_importance (0.8), 1.0 when pinned. Higher ranks "
            "higher in search."
        ),
        "tags": {**TAGS, "description": "Tags to file it under (added to any '[...]:' prefix)."},
        "who": _string("Who states it: your agent's name (e.g. claude-code) or the person's.",
                       max_length=200),
        "why": _string("Why it matters or where it came from, in a sentence.", max_length=2000),
        "pinned": _boolean(
            "Pin it: pinned memories are always surfaced at session start and never decay. "
            "Reserve for rules that must not be forgotten."
        ),
        "project": _string(
            "The project it belongs to (a name or the working directory's path); leave unset "
            "for memories that hold everywhere.", max_length=500,
        ),
        "source_type": _string("Kind of source it came from (chat, file, ticket, ...).",
                               max_length=100),
        "source_id": _string("Id of the source (session id, file path, ticket number).",
                             max_length=500),
        "idempotency_key": _string(
            "A key unique to this write (e.g. '<session>:<turn>'): a retry with the same key "
            "returns the first answer instead of storing again.", min_length=1, max_length=500,
        ),
        "occurred_at": _string(f"When it happened or was said: {WHEN}. Default: now."),
        "key": _string(
            "What it is about, as a stable key (e.g. 'acme database', 'deploy status'): a new "
            "memory with the same key, type and project replaces the current one, which is "
            "kept as history (superseded). Use it for facts, statuses and decisions that change "
            "over time; not for events. Pinned memories are never replaced automatically.",
            min_length=1, max_length=500,
        ),
        "valid_from": _string(f"Since when it is true: {WHEN}. Default: occurred_at."),
        "valid_to": _string(f"Until when it is true, if known: {WHEN}. Default: open."),
        "agent_id": _string(
            "Make it private to this agent: only reads as this agent (or explicit cross-scope "
            "reads) see it. Leave unset for a memory every agent shares.",
            min_length=1, max_length=200),
        "user_id": _string(
            "Make it private to this user. Leave unset for a memory every user shares.",
            min_length=1, max_length=200),
    },
    ["content"],
)

GET_INPUT = _object({"id": MEMORY_ID, **READER}, ["id"])

LIST_INPUT = _object(
    {
        **_filters("List"),
        "limit": _integer("Page size.", 1, 1000, 50),
        "offset": _integer("How many memories to skip (next page: offset + limit).", 0,
                           1_000_000_000, default=0),
        "include_deleted": _boolean("Include soft-deleted memories.", False),
        "order": {
            "type": "string",
            "enum": ["created_at", "updated_at", "occurred_at", "importance"],
            "default": "occurred_at",
            "description": "Sort key, newest (or most important) first: occurred_at is when"
                           " it happened, created_at when it was stored.",
        },
        **READER,
    },
)

MODIFY_INPUT = _object(
    {
        "id": MEMORY_ID,
        "reason": _string("Why it changes (kept in the memory's history). Required.",
                          min_length=1, max_length=2000),
        "content": _string(
            "The corrected or updated text (replaces the old; the memory is re-embedded).",
            min_length=1,
        ),
        "type": {**TYPE, "description": "New type."},
        "importance": _fraction("New importance, 0–1."),
        "tags": {**TAGS, "description": "New tags: replaces the whole list."},
        "pinned": _boolean("Pin (true) or unpin (false)."),
        "who": _string("New author.", max_length=200),
        "project": _string("Move it to this project.", max_length=500),
        "occurred_at": _string(f"New time it happened: {WHEN}."),
        "if_version": _integer(
            "Only change it if its version is still this one (from memory_get or "
            "memory_store); otherwise fail with version_conflict.", 1,
        ),
        **READER,
    },
    ["id", "reason"],
)

FORGET_INPUT = _object(
    {
        "mode": {
            "type": "string",
            "enum": ["preview", "execute"],
            "default": "preview",
            "description": "preview: list what would be forgotten, change nothing. execute: "
                           "delete them (needs reason; and confirm_token when the preview said "
                           "requires_confirm, which it always does for a query).",
        },
        "ids": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 200},
            "maxItems": 100_000,
            "description": "Forget these memories (ids from search, list or get).",
        },
        "query": _string(
            "Forget the memories that clearly match this query: each must hold every word of "
            "it (stop words aside) and score well. The preview shows each candidate's score and "
            "matched_terms, and under `excluded` what the search found but did not select. "
            "Execute needs the preview's confirm_token.", max_length=10_000,
        ),
        **_filters("Forget"),
        "limit": _integer("At most this many candidates (for a query: the top hits).", 1,
                          100_000, 20),
        "reason": _string("Why they are forgotten (kept in their history). Required to execute.",
                          max_length=2000),
        "confirm_token": _string(
            "The confirm_token of the preview. Required to execute a query, and any selection "
            "when the preview said requires_confirm; always checked when given: it fails if the "
            "candidates or force changed since the preview, or after 10 minutes.", max_length=200,
        ),
        "force": _boolean(
            "Purge instead of the default soft delete (which can be recovered within the "
            "retention window): the text leaves the history, the indexes and the database "
            "file; soft-deleted memories named by id are purged too. Cannot be undone. Pass it "
            "to the preview as well: its token is only good for a purge.", False,
        ),
        "include_pinned": _boolean("Also forget pinned memories (skipped by default).", False),
        **READER,
    },
)

HISTORY_INPUT = _object({"id": MEMORY_ID, **READER}, ["id"])

# -- output schemas (what structuredContent holds; loose: the daemon may add fields) -------------

_MEMORY_PROPS = {
    "id": {"type": "string"},
    "content": {"type": "string"},
    "type": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "pinned": {"type": "boolean"},
    "importance": {"type": "number"},
    "version": {"type": "integer"},
    "occurred_at": {"type": "string"},
    "created_at": {"type": "string"},
}
MEMORY_OUTPUT = {"type": "object", "properties": _MEMORY_PROPS, "required": ["id", "content"]}
SEARCH_OUTPUT = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "method": {"type": "string", "description": "hybrid, or keyword when vectors are off"},
        "count": {"type": "integer"},
        "results": {
            "type": "array",
            "items": {"type": "object", "properties": {
                **{k: v for k, v in _MEMORY_PROPS.items() if k != "version"},
                "score": {"type": "number", "description": "relevance, 0–1"},
            }},
        },
    },
    "required": ["count", "results"],
}
STORE_OUTPUT = {
    "type": "object",
    "properties": {
        **_MEMORY_PROPS,
        "created": {"type": "boolean"},
        "deduplicated": {"type": "boolean", "description": "the content was already stored"},
        "idempotent_replay": {"type": "boolean"},
        "gated": {"type": "boolean", "description": "the write gate found a stored memory that"
                                                    " says the same: the answer is that memory"},
        "key": {"type": ["string", "null"]},
        "superseded": {"type": ["string", "null"],
                       "description": "the memory this one replaced (same key)"},
        "kept_pinned": {"type": ["string", "null"],
                        "description": "a pinned memory with the same key, left current"},
    },
    "required": ["id", "created"],
}
LIST_OUTPUT = {
    "type": "object",
    "properties": {
        "memories": {"type": "array", "items": {"type": "object", "properties": _MEMORY_PROPS}},
        "total": {"type": "integer"},
        "limit": {"type": "integer"},
        "offset": {"type": "integer"},
        "has_more": {"type": "boolean"},
    },
    "required": ["memories", "total"],
}
MODIFY_OUTPUT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "status": {"type": "string", "description": "updated, or unchanged"},
        **_with_legacy_twins({
            "current_version": {"type": "integer"},
            "new_version": {"type": "integer"},
            "content_changed": {"type": "boolean"},
        }),
    },
    "required": ["id", "status"],
}
FORGET_OUTPUT = {
    "type": "object",
    "properties": {
        "mode": {"type": "string", "enum": ["preview", "execute"]},
        "count": {"type": "integer", "description": "preview: how many would be forgotten"},
        "candidates": {"type": "array", "items": {"type": "object"}, "description":
                       "id, content, type, pinned, created_at; for a query also score and "
                       "matched_terms"},
        "excluded": {"type": "array", "items": {"type": "object"},
                     "description": "query: found by the search but not selected, and why"},
        "query_terms": {"type": "array", "items": {"type": "string"}},
        **_with_legacy_twins({
            "requires_confirm": {"type": "boolean"},
            "confirm_token": {"type": "string"},
        }),
        "deleted": {"type": "integer", "description": "execute: how many were forgotten"},
        "ids": {"type": "array", "items": {"type": "string"}},
        "hard": {"type": "boolean"},
    },
    "required": ["mode"],
}
HISTORY_OUTPUT = {
    "type": "object",
    "properties": {
        "memory_id": {"type": "string"},
        "events": {"type": "array", "items": {"type": "object", "properties": {
            "event": {"type": "string",
                      "description": "created, modified, deleted, recovered, ..."},
            "created_at": {"type": "string"},
        }}},
    },
    "required": ["events"],
}
