"""JSON schemas of the knowledge-graph tools (knowledge_expand, knowledge_expand_session,
graph_impact, memory_feedback, knowledge_relate): what each accepts and answers. The memory
tools' schemas and the shared pieces are in `mcp/schemas.py`."""

from __future__ import annotations

from mnemonist.mcp.schemas import (
    MEMORY_ID,
    READER,
    _boolean,
    _fraction,
    _integer,
    _object,
    _string,
)

# -- input schemas -----------------------------------------------------------------------------

ENTITY = _string(
    "An entity: its id (from a previous answer) or its name as written in memories, any case "
    "(e.g. 'PostgreSQL', 'ShopApi', 'Caroline').", min_length=1, max_length=500)
PROJECT_SCOPE = _string(
    "Only memories of this project count (a name or the working directory's path); edges "
    "only other projects' memories support are not followed.", max_length=500)
MIN_CONFIDENCE = _fraction(
    "Follow only relations at least this confident (0–1; default graph.traversal."
    "minConfidence, 0.5). A relation's confidence comes from how it is known: stated by a "
    "user 1.0, a dependency stated in two memories 0.9, in one 0.8, extracted by an LLM "
    "about 0.7, named together 0.4 + 0.1 per memory up to 0.7.")
MAX_TOKENS = _integer(
    "Token budget of the memories returned (about 4 characters a token); neighbours that "
    "do not fit are left out and `truncated` is true.", 10, 50_000, 2000)

EXPAND_INPUT = {
    **_object(
        {
            "entity": ENTITY,
            "memory_id": _string("Start from the entities this memory names instead (its id).",
                                 min_length=1, max_length=200),
            "hops": _integer("How many relations away to go (capped by graph.traversal."
                             "maxHops, 3).", 1, 10, 2),
            "max_tokens": MAX_TOKENS,
            "min_confidence": MIN_CONFIDENCE,
            "project": PROJECT_SCOPE,
            **READER,
        },
    ),
    "oneOf": [{"required": ["entity"]}, {"required": ["memory_id"]}],
}
EXPAND_SESSION_INPUT = _object(
    {
        "session_key": _string("The session's key (its id in the harness, as the hooks "
                               "send it).", min_length=1, max_length=500),
        "max_tokens": MAX_TOKENS,
        "project": PROJECT_SCOPE,
        **READER,
    },
    ["session_key"],
)
IMPACT_INPUT = _object(
    {
        "entity": ENTITY,
        "max_depth": _integer("The longest dependency chain to follow (capped by graph."
                              "traversal.maxHops, 3).", 1, 10, 3),
        "min_confidence": MIN_CONFIDENCE,
        "project": PROJECT_SCOPE,
        **READER,
    },
    ["entity"],
)
FEEDBACK_INPUT = _object(
    {
        "id": MEMORY_ID,
        "helpful": _boolean("true: the memory helped with the prompt; false: it did not."),
        "query": _string(
            "The prompt or query the memory was shown for. A memory rated unhelpful twice for "
            "the same prompt is not injected for it again.", min_length=1, max_length=10_000),
        "session_key": _string("The session it was shown in, if known.", min_length=1,
                               max_length=500),
        **READER,
    },
    ["id", "helpful"],
)

RELATE_INPUT = _object(
    {
        "source": _string("The entity the relation starts from, by name (e.g. 'ShopApi'); "
                          "created in the project and scope when no memory names it yet.",
                          min_length=1, max_length=200),
        "target": _string("The entity it points to, by name (e.g. 'ShopDb').",
                          min_length=1, max_length=200),
        "relation_type": {
            "type": "string",
            "enum": ["depends_on", "uses", "calls", "reads_from", "writes_to", "runs_on",
                     "requires", "part_of", "owned_by", "related_to"],
            "description": (
                "How source relates to target. depends_on, uses, calls, reads_from, "
                "writes_to, runs_on and requires are dependencies: graph_impact of the target "
                "lists the source as WILL BREAK. part_of, owned_by and related_to are "
                "associations (half weight, either way)."),
        },
        "reason": _string("Why it is true (or why you retract it), in a sentence; shown "
                          "with the relation.", min_length=1, max_length=1000),
        "project": _string("The project it holds in (a name or the working directory's "
                           "path); leave unset for one that holds everywhere.",
                           min_length=1, max_length=500),
        "agent_id": _string(
            "Make it private to this agent (only reads as this agent see it). Leave unset "
            "for a relation every agent shares.", min_length=1, max_length=200),
        "user_id": _string("Make it private to this user.", min_length=1, max_length=200),
        "retract": _boolean("true: take back the relation you (or someone) stated between "
                            "source and target in this project and scope.", False),
    },
    ["source", "target", "relation_type", "reason"],
)

# -- output schemas (what structuredContent holds; loose: the daemon may add fields) -------------

_ENTITY_PROPS = {
    "id": {"type": "string"}, "name": {"type": "string"}, "type": {"type": "string"},
    "mentions": {"type": "integer"}, "community": {"type": ["integer", "null"]},
    "project": {"type": ["string", "null"], "description": "the project the entity belongs to"},
    "agent_id": {"type": ["string", "null"], "description": "its owner when private"},
    "user_id": {"type": ["string", "null"]},
}
_EDGE_PROPS = {
    "id": {"type": "string"}, "source": {"type": "string"}, "target": {"type": "string"},
    "type": {"type": "string", "description": "co_occurrence, depends_on, or an LLM's verb"},
    "reason": {"type": "string", "enum": ["user-stated", "multi-memory", "pattern-matched",
                                          "extracted", "co-use", "co-occurrence",
                                          "inferred", "replay", "llm-uncertain",
                                          "principle"]},
    "confidence": {"type": "number"}, "mentions": {"type": "integer"},
    "note": {"type": "string", "description": "why it was stated (user-stated edges), or the"
             " two memories a replay edge was proposed from"},
}
_SHOWN = {"type": "array", "items": {"type": "object", "properties": {
    "id": {"type": "string"}, "content": {"type": "string"}, "type": {"type": "string"}}}}
EXPAND_OUTPUT = {
    "type": "object",
    "properties": {
        "entities": {"type": "array", "items": {"type": "object", "properties": _ENTITY_PROPS},
                     "description": "where the walk started"},
        "memories": {**_SHOWN, "description": "memories naming the entity, most important first"},
        "constraints": {"type": "array", "items": {"type": "object"},
                        "description": "decisions standing on the start entities"},
        "neighbours": {"type": "array", "items": {"type": "object", "properties": {
            "entity": {"type": "object", "properties": _ENTITY_PROPS},
            "hops": {"type": "integer"},
            "confidence": {"type": "number", "description": "product along the path"},
            "via": {"type": "array", "items": {"type": "string"}},
            "relation": {"type": "object", "properties": _EDGE_PROPS},
            "supporting_memory_ids": {"type": "array", "items": {"type": "string"}},
            "memories": {**_SHOWN, "description": "supporting memories not shown before"},
        }}},
        "tokens": {"type": "integer"}, "max_tokens": {"type": "integer"},
        "truncated": {"type": "boolean"}, "timed_out": {"type": "boolean"},
    },
    "required": ["entities", "neighbours", "tokens", "truncated"],
}
EXPAND_SESSION_OUTPUT = {
    "type": "object",
    "properties": {
        "session_key": {"type": "string"},
        "memories": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "content": {"type": "string"},
            "injected": {"type": "boolean"}, "hits": {"type": "integer"}}}},
        "entities": {"type": "array", "items": {"type": "object"}},
        "neighbours": {"type": "array", "items": {"type": "object"}},
        "tokens": {"type": "integer"}, "truncated": {"type": "boolean"},
    },
    "required": ["session_key", "memories", "entities", "tokens"],
}
_IMPACTED = {"type": "array", "items": {"type": "object", "properties": {
    "entity": {"type": "object", "properties": _ENTITY_PROPS},
    "tier": {"type": "string", "enum": ["WILL BREAK", "LIKELY AFFECTED", "MAY NEED TESTING"]},
    "depth": {"type": "integer"},
    "confidence": {"type": "number", "description": "product of the path's edge confidences"},
    "path": {"type": "array", "items": {"type": "string"}},
    "edges": {"type": "array", "items": {"type": "object", "properties": _EDGE_PROPS}},
    "supporting_memory_ids": {"type": "array", "items": {"type": "string"}},
}}}
IMPACT_OUTPUT = {
    "type": "object",
    "properties": {
        "entity": {"type": "object", "properties": _ENTITY_PROPS},
        "tiers": {"type": "object", "properties": {
            "will_break": {**_IMPACTED, "description": "path confidence ≥ 0.7"},
            "likely_affected": {**_IMPACTED, "description": "path confidence ≥ 0.45"},
            "may_need_testing": {**_IMPACTED, "description": "below 0.45"},
        }, "required": ["will_break", "likely_affected", "may_need_testing"]},
        "affected": {"type": "integer"},
        "timed_out": {"type": "boolean"},
    },
    "required": ["entity", "tiers"],
}
FEEDBACK_OUTPUT = {
    "type": "object",
    "properties": {
        "memory_id": {"type": "string"},
        "helpful": {"type": "boolean"},
        "unhelpful_for_prompt": {"type": "integer"},
        "suppressed_for_prompt": {"type": "boolean",
                                  "description": "no longer injected for this prompt"},
    },
    "required": ["memory_id", "helpful"],
}
RELATE_OUTPUT = {
    "type": "object",
    "properties": {
        "relation": {"type": "object", "properties": {
            "id": {"type": "string"},
            "source": {"type": "object", "properties": _ENTITY_PROPS},
            "target": {"type": "object", "properties": _ENTITY_PROPS},
            "type": {"type": "string"}, "reason": {"type": "string"},
            "confidence": {"type": "number"}, "note": {"type": ["string", "null"]}}},
        "created": {"type": "boolean"},
        "replaced_reason": {"type": ["string", "null"],
                            "description": "how the edge was known before it was stated"},
        "retracted": {"type": "string", "description": "the id of the relation taken back"},
        "restored_reason": {"type": ["string", "null"]},
        "inferred_removed": {"type": "integer"},
    },
}
