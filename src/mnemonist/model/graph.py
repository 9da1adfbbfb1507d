"""Requests of the knowledge-graph reads and of memory feedback. The graph reads carry the
recall filters: every memory they return or count passes them (`where_clause`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mnemonist.model.requests import Caller, RecallFilters, Request, ScopeId


def _canonical(name: str) -> str:
    """As `text.entities.canonical_name` (whitespace collapsed, lower case)."""
    return " ".join(name.split()).lower()

EntityRef = Field(min_length=1, max_length=500,
                  description="an entity's id or its name (case-insensitive)")


class ExpandRequest(RecallFilters):
    entity: str | None = Field(default=None, min_length=1, max_length=500)
    memory_id: str | None = Field(default=None, min_length=1, max_length=200)
    hops: int = Field(default=2, ge=1, le=10)
    max_tokens: int = Field(default=2000, ge=10, le=50_000)
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _one_start(self) -> ExpandRequest:
        if (self.entity is None) == (self.memory_id is None):
            raise ValueError("give exactly one of entity and memory_id")
        return self


class ExpandSessionRequest(RecallFilters):
    session_key: str = Field(min_length=1, max_length=500)
    max_tokens: int = Field(default=2000, ge=10, le=50_000)


class ImpactRequest(RecallFilters):
    entity: str = EntityRef
    max_depth: int = Field(default=3, ge=1, le=10)
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)


class FeedbackRequest(Caller):
    """A rating of one memory; the identity fields say who rates (a memory the caller may
    not see is a 404, as on every by-id route)."""

    helpful: bool
    query: str | None = Field(default=None, min_length=1, max_length=10_000,
                              description="the prompt or query the memory was shown for")
    session_key: str | None = Field(default=None, min_length=1, max_length=500)


class EntityListRequest(RecallFilters):
    q: str | None = Field(default=None, min_length=1, max_length=500,
                          description="part of the entity's name")
    entity_type: str | None = Field(default=None, min_length=1, max_length=100)
    community: int | None = Field(default=None, ge=0)
    limit: int = Field(default=50, ge=1, le=500)
    offset: int = Field(default=0, ge=0, le=1_000_000)


class NeighbourhoodRequest(RecallFilters):
    entity: str = EntityRef
    hops: int = Field(default=1, ge=1, le=10)
    limit: int = Field(default=50, ge=1, le=500)
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)


#: what a person or agent may state between two entities; the dependency ones are followed by
#: graph_impact from the dependent side (graph/walks.py DEPENDENCY_TYPES)
STATED_TYPES = ("depends_on", "uses", "calls", "reads_from", "writes_to", "runs_on",
                "requires", "part_of", "owned_by", "related_to")
StatedType = Literal["depends_on", "uses", "calls", "reads_from", "writes_to", "runs_on",
                     "requires", "part_of", "owned_by", "related_to"]


class RelateRequest(Request):
    """State a relation: `source` `relation_type` `target` ("ShopApi depends_on ShopDb"), in
    a project and scope. `agent_id` / `user_id` make it private to that owner, as on a
    remember (a header never does); its entities are that scope's (created when new)."""

    source: str = Field(min_length=1, max_length=200, description="the entity it starts from")
    target: str = Field(min_length=1, max_length=200, description="the entity it points to")
    relation_type: StatedType = Field(description="how source relates to target")
    reason: str = Field(min_length=1, max_length=1000,
                        description="why this is true (kept with the relation, shown on it)")
    project: str | None = Field(default=None, min_length=1, max_length=500)
    agent_id: ScopeId | None = None
    user_id: ScopeId | None = None
    retract: bool = Field(default=False,
                          description="take back the stated relation source -> target instead")

    @model_validator(mode="after")
    def _two_entities(self) -> RelateRequest:
        if not _canonical(self.source) or not _canonical(self.target):
            raise ValueError("source and target must name an entity")
        if _canonical(self.source) == _canonical(self.target):
            raise ValueError("source and target name the same entity")
        return self


class RetractRequest(Caller):
    """Who retracts: a stated relation the caller may not see is a 404."""

    reason: str | None = Field(default=None, max_length=1000)
