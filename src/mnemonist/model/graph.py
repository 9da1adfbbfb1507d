"""Requests of the knowledge-graph reads and of memory feedback. The graph reads carry the
recall filters: every memory they return or count passes them (`where_clause`)."""

from __future__ import annotations

from pydantic import Field, model_validator

from mnemonist.model.requests import Caller, RecallFilters

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
