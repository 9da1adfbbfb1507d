"""Validated inputs of the service: every face (HTTP, CLI, MCP, Python) builds these.

Keys are snake_case; camelCase spellings (`sourceId`, `ifVersion`, ...) are accepted too.
Unknown keys are rejected so that a typo is a clear 400, not a silently ignored field.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from mnemonist.model.memory import MEMORY_TYPES, format_ts
from mnemonist.text.scrub import MARKER_PREFIX, scrub_credentials

#: the times a memory may carry: four-digit years, after conversion to UTC
EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


def parse_when(value: Any) -> str:
    """ISO 8601 with or without a zone (no zone means UTC); a date alone means its midnight.
    The time must lie within 1000-01-01..9999-12-31 UTC."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day, tzinfo=UTC)
    elif isinstance(value, str):
        text = value.strip()
        try:
            if len(text) == 10:
                parsed = datetime.combine(date.fromisoformat(text), datetime.min.time())
            else:
                parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"{value!r} is not an ISO 8601 date or time") from exc
    else:
        raise ValueError("expected an ISO 8601 date or time string")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        utc = parsed.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+14:00 lies before year 1
        utc = None
    if utc is None or not EARLIEST <= utc <= LATEST:
        raise ValueError(f"{value!r} is outside 1000-01-01..9999-12-31 (UTC)")
    return format_ts(utc)


def scrubbed_lower(value: str) -> str:
    """`value` with its credentials replaced, then lower-cased (the markers kept as they are).
    Scrubbing comes first: lower case hides a secret from the scrubber (`AKIA...` is a key
    id, `akia...` no longer looks like one) without making it any less a secret."""
    lowered = scrub_credentials(value).text.lower()
    return lowered.replace(MARKER_PREFIX.lower(), MARKER_PREFIX) if "[redacted:" in lowered \
        else lowered


def normalize_key(value: str) -> str:
    """A lifecycle key as stored and matched: credentials scrubbed, trimmed, lower-cased,
    inner spaces collapsed."""
    key = " ".join(scrubbed_lower(value).split())
    if not key:
        raise ValueError("key is empty")
    return key


def _reason_not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("reason is empty")
    return value


Timestamp = Annotated[str, AfterValidator(parse_when)]
#: a mutation's reason: a whitespace-only reason is no reason
Reason = Annotated[str, Field(min_length=1, max_length=2000), AfterValidator(_reason_not_blank)]
Importance = Annotated[float, Field(ge=0.0, le=1.0)]
LifecycleKey = Annotated[str, Field(min_length=1, max_length=500), AfterValidator(normalize_key)]
MemoryType = Literal[MEMORY_TYPES]  # type: ignore[valid-type]


MAX_TAGS = 100
MAX_TAG_CHARS = 200
#: the deepest page anyone can ask for (SQLite integers end at 2**63)
MAX_OFFSET = 1_000_000_000


def _split_tags(value: Any) -> Any:
    return value.split(",") if isinstance(value, str) else value


Tag = Annotated[str, Field(max_length=MAX_TAG_CHARS)]
#: a list of tags, or one comma-separated string of them; bounded before any work is done
Tags = Annotated[
    Annotated[list[Tag], Field(max_length=MAX_TAGS)] | None, BeforeValidator(_split_tags)
]


def _clean_tags(value: list[str] | None) -> list[str] | None:
    """Credentials scrubbed, then trimmed and lower-cased; empty ones dropped, first occurrence
    kept (linear time)."""
    if value is None:
        return None
    tags = (scrubbed_lower(str(item)).strip() for item in value)
    return list(dict.fromkeys(tag for tag in tags if tag))


class Request(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, str_max_length=2_000_000
    )


#: every scope in `agents` / `users` (an explicit cross-scope read)
ANY_SCOPE = "*"
MAX_SCOPE_ID_CHARS = 200


def _scope_name(value: str, *, star: bool) -> str:
    """An agent or user id: trimmed, not empty, no control characters; `*` only where it
    means "every scope" (a list of scopes to read)."""
    text = value.strip()
    if not text:
        raise ValueError("is empty")
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text):
        raise ValueError("contains a control character")
    if text == ANY_SCOPE and not star:
        raise ValueError('"*" is not an id (it means every scope in `agents` / `users`)')
    kinds = scrub_credentials(text).kinds
    if kinds:  # an id is stored and shown as given: a secret in it would be kept raw
        raise ValueError(f"holds a credential ({', '.join(kinds)}): an agent or user id is a"
                         " name, never a secret (send a token as Authorization: Bearer)")
    return text


#: an owner / caller id (agent_id, user_id)
ScopeId = Annotated[str, Field(min_length=1, max_length=MAX_SCOPE_ID_CHARS),
                    AfterValidator(lambda v: _scope_name(v, star=False))]
_ScopeOrStar = Annotated[str, Field(min_length=1, max_length=MAX_SCOPE_ID_CHARS),
                         AfterValidator(lambda v: _scope_name(v, star=True))]
#: scopes a read asks to see beyond its own: ids, or "*" for all (a list or "a,b")
ScopeList = Annotated[
    Annotated[list[_ScopeOrStar], Field(max_length=100)] | None,
    BeforeValidator(lambda v: v.split(",") if isinstance(v, str) else v),
]
#: the fields that say who reads, not what to read
IDENTITY_FIELDS = ("agent_id", "user_id", "agents", "users")


class Caller(Request):
    """Who is reading. No identity: only global memories. `agent_id` / `user_id`: global
    ones and that agent's / user's own. `agents` / `users`: explicit cross-scope reads of
    these agents' / users' private memories too (`["*"]`: all of them)."""

    agent_id: ScopeId | None = None
    user_id: ScopeId | None = None
    agents: ScopeList = None
    users: ScopeList = None

    def identity(self) -> Caller:
        return Caller(**{k: getattr(self, k) for k in IDENTITY_FIELDS})

    def sees_everything(self) -> bool:
        """True when no private memory is hidden from this caller."""
        return ANY_SCOPE in (self.agents or ()) and ANY_SCOPE in (self.users or ())


class RememberRequest(Request):
    content: str = Field(min_length=1)
    type: MemoryType | None = None
    importance: Importance | None = None
    tags: Tags = None
    who: str | None = Field(default=None, max_length=200)
    why: str | None = Field(default=None, max_length=2000)
    pinned: bool | None = None
    project: str | None = Field(default=None, max_length=500)
    source_type: str | None = Field(default=None, max_length=100)
    source_id: str | None = Field(default=None, max_length=500)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=500)
    occurred_at: Timestamp | None = None
    transcript: str | None = None
    harness: str | None = Field(default=None, max_length=100)
    key: LifecycleKey | None = None
    valid_from: Timestamp | None = None
    valid_to: Timestamp | None = None
    agent_id: ScopeId | None = Field(
        default=None, description="owner: the memory is private to this agent")
    user_id: ScopeId | None = Field(
        default=None, description="owner: the memory is private to this user")

    _tags = field_validator("tags")(lambda cls, v: _clean_tags(v))

    @model_validator(mode="before")
    @classmethod
    def _subject_is_key(cls, data: Any) -> Any:
        """`subject` (a status's word for it) is another name for `key`."""
        if isinstance(data, dict) and "subject" in data:
            data = dict(data)
            subject = data.pop("subject")
            key = data.get("key")
            if key is not None and subject is not None and str(key) != str(subject):
                raise ValueError("key and subject differ: give one of them")
            if key is None:
                data["key"] = subject
        return data

    @model_validator(mode="after")
    def _lifecycle(self) -> RememberRequest:
        if self.key is not None and self.type == "event":
            raise ValueError("an event takes no key: events are never superseded")
        if self.valid_from and self.valid_to and self.valid_to <= self.valid_from:
            raise ValueError("valid_to must be later than valid_from")
        return self

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content is empty")
        return value


class RecallFilters(Caller):
    type: MemoryType | None = None
    tags: Tags = None
    who: str | None = Field(default=None, max_length=200)
    pinned: bool | None = None
    importance_min: Importance | None = None
    since: Timestamp | None = None
    until: Timestamp | None = None
    project: str | None = Field(default=None, max_length=500)
    source_type: str | None = Field(default=None, max_length=100)
    source_id: str | None = Field(default=None, max_length=500)
    key: LifecycleKey | None = None
    at_time: Timestamp | None = None
    include_superseded: bool | None = None
    scope: list[Annotated[str, Field(max_length=500)]] | None = Field(
        default=None, max_length=100,
        description="memories of any of these projects (case-insensitive) or of no project",
    )
    community: int | None = Field(
        default=None, ge=0, description="memories naming an entity of this graph community",
    )

    _tags = field_validator("tags")(lambda cls, v: _clean_tags(v))

    def is_empty(self) -> bool:
        """No filter that selects (include_superseded widens, it selects nothing; the caller's
        identity says who reads, not what)."""
        return all(getattr(self, name) is None for name in type(self).model_fields
                   if name != "include_superseded" and name not in IDENTITY_FIELDS)


class RecallRequest(RecallFilters):
    query: str = Field(min_length=1, max_length=10_000)
    limit: int = Field(default=10, ge=1, le=200)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    min_relevance: float | None = Field(
        default=None, ge=0.0, le=1.0,
        description="drop results less likely than this to answer the query (calibrated"
        " relevance); unset: search.min_relevance, and nothing is returned when nothing in"
        " scope is likely to answer the query (search.min_answerable)",
    )
    expand: bool = False
    context: int = Field(default=0, ge=0, le=20, description="neighbours per side per result")
    now: Timestamp | None = Field(default=None, description="reference for relative times")
    time_filter: bool = Field(
        default=False, description="a time named in the query filters instead of preferring"
    )

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query is empty")
        return value

    def filters(self) -> RecallFilters:
        return RecallFilters(**{k: getattr(self, k) for k in RecallFilters.model_fields})


class MemoryPatch(Request):
    """Fields of one memory that modify may change; `reason` is required per patch or batch."""

    id: str | None = Field(default=None, max_length=200)
    content: str | None = Field(default=None, min_length=1)
    type: MemoryType | None = None
    importance: Importance | None = None
    tags: Tags = None
    pinned: bool | None = None
    who: str | None = Field(default=None, max_length=200)
    project: str | None = Field(default=None, max_length=500)
    occurred_at: Timestamp | None = None
    reason: Reason | None = None
    if_version: int | None = Field(default=None, ge=1)
    #: who makes the change, kept in the history (PATCH; a batch has its own): default "api"
    changed_by: str | None = Field(default=None, max_length=200)

    _tags = field_validator("tags")(lambda cls, v: _clean_tags(v))

    def changes(self) -> dict[str, Any]:
        fields = ("content", "type", "importance", "tags", "pinned", "who", "project")
        names = (*fields, "occurred_at")
        return {f: getattr(self, f) for f in names if getattr(self, f) is not None}


class ModifyRequest(Caller):
    patches: list[MemoryPatch] = Field(min_length=1, max_length=10_000)
    reason: Reason | None = None
    changed_by: str | None = Field(default=None, max_length=200)


class DeleteRequest(Caller):
    reason: Reason
    if_version: int | None = Field(default=None, ge=1)
    force: bool = False
    purge: bool = False  # remove the text everywhere, a soft-deleted memory's too
    changed_by: str | None = Field(default=None, max_length=200)


class RecoverRequest(Caller):
    reason: Reason
    if_version: int | None = Field(default=None, ge=1)
    changed_by: str | None = Field(default=None, max_length=200)


class ForgetRequest(RecallFilters):
    mode: Literal["preview", "execute"] = "preview"
    query: str | None = Field(default=None, max_length=10_000)
    ids: list[Annotated[str, Field(max_length=200)]] | None = Field(
        default=None, max_length=100_000)
    limit: int = Field(default=20, ge=1, le=100_000)
    reason: str | None = Field(default=None, max_length=2000)
    confirm_token: str | None = Field(default=None, max_length=200)
    force: bool = False
    include_pinned: bool = False
    changed_by: str | None = Field(default=None, max_length=200)

    def has_selector(self) -> bool:
        selectors = (self.query and self.query.strip(), self.ids)
        return any(selectors) or not self.filters().is_empty()

    def filters(self) -> RecallFilters:
        return RecallFilters(**{k: getattr(self, k) for k in RecallFilters.model_fields})


class ListRequest(RecallFilters):
    limit: int = Field(default=50, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    include_deleted: bool = False
    #: newest first by when it happened (event time); created_at: by when it was stored
    order: Literal["created_at", "updated_at", "occurred_at", "importance"] = "occurred_at"


class ImportRequest(Request):
    """Bulk import: remember's fields per item; the top-level fields are defaults for items."""

    items: list[RememberRequest] = Field(min_length=1, max_length=100_000)
    project: str | None = Field(default=None, max_length=500)
    source_id: str | None = Field(default=None, max_length=500)
    source_type: str | None = Field(default=None, max_length=100)
    who: str | None = Field(default=None, max_length=200)


class DismissDuplicateRequest(Request):
    """POST /api/repair/duplicates/{id}/dismiss: the pair is not a duplicate."""

    reason: str | None = Field(default=None, max_length=2000)


class ResolveDuplicateRequest(Request):
    """POST /api/repair/duplicates/{id}/resolve: keep one memory, supersede the other."""

    keep: str = Field(min_length=1, max_length=200,
                      description="'a', 'b', or the id of the memory to keep")
    reason: Reason
    changed_by: str | None = Field(default=None, max_length=200)
