"""The shapes of the service's most-used answers (service/), and their one key style:
snake_case.

A request may spell a key either way (the request models accept camelCase too). An answer
spells every key in snake_case. The writes' answers (modify, PATCH, delete, purge, recover,
restore, forget) spelt a few keys in camelCase before; each of those is still sent beside its
snake_case twin (`LEGACY_KEYS`), so that a client reading the old spelling keeps working.
docs/api.md lists them as deprecated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, TypeVar, cast

# pydantic reads these shapes for the OpenAPI document (api/openapi.py): on Python 3.11 it
# needs typing_extensions' TypedDict
from typing_extensions import TypedDict

_Answer = TypeVar("_Answer", bound=Mapping[str, Any])

#: snake_case key -> the camelCase spelling an older answer used, still sent beside it
LEGACY_KEYS = {
    "current_version": "currentVersion",
    "new_version": "newVersion",
    "content_changed": "contentChanged",
    "duplicate_memory_id": "duplicateMemoryId",
    "was_deleted": "wasDeleted",
    "wal_truncated": "walTruncated",
    "requires_confirm": "requiresConfirm",
    "confirm_token": "confirmToken",
    "superseded_by": "supersededBy",
}


def with_legacy_keys(out: _Answer) -> _Answer:
    """`out` with the deprecated camelCase twin of each of its `LEGACY_KEYS` (same value)."""
    keys = cast(dict[str, Any], out)  # the twins are declared on each answer (NotRequired)
    for snake, camel in LEGACY_KEYS.items():
        if snake in keys:
            keys[camel] = keys[snake]
    return out


class RememberAnswer(TypedDict):
    """What remember answers (`Memories.remember`; one item of an import is built the same
    way): the memory written, or the one that already held this content or key."""

    id: str
    created: bool
    deduplicated: bool
    idempotent_replay: bool
    content: str
    type: str
    tags: list[str]
    pinned: bool
    importance: float
    project: str | None
    version: int
    occurred_at: str
    created_at: str
    key: str | None
    supersedes: str | None
    valid_from: str
    valid_to: str | None
    superseded_by: str | None
    #: the memory this one superseded (a lifecycle key), and a pinned one it left in place
    superseded: str | None
    kept_pinned: str | None
    agent_id: str | None
    user_id: str | None
    observed_by: list[str]
    observation_count: int
    corroborated: bool
    #: the write gate found it a restatement and wrote nothing (mode on)
    gated: bool
    #: what the credential scrubber replaced (a new memory only)
    scrubbed: NotRequired[list[str]]
    #: the write gate's verdict, when it judged this remember
    gate: NotRequired[dict[str, Any]]


class RecallAnswer(TypedDict):
    """What recall answers (`Reads.recall`)."""

    query: str
    method: str
    count: int
    results: list[dict[str, Any]]
    time_window: dict[str, Any] | None
    answerable: float | None
    #: memories in scope still without a vector (None: no embedding provider)
    pending_embeddings: int | None
    degraded: list[str]
    took_ms: float


class PatchResult(TypedDict):
    """One patch's outcome (`Memories.patch`, each item of `Memories.modify`): `status` is
    updated, unchanged, or why it was not applied (invalid, not_found, deleted,
    version_conflict, duplicate_content, file_managed, immutable) with a `message`."""

    id: str
    status: str
    current_version: int | None
    new_version: int | None
    content_changed: bool
    embedded: bool
    duplicate_memory_id: str | None
    message: NotRequired[str]
    #: a chunk of a memory file (status file_managed): where it is
    path: NotRequired[str]
    start_line: NotRequired[int]
    end_line: NotRequired[int]
    currentVersion: NotRequired[int | None]  # deprecated twin
    newVersion: NotRequired[int | None]  # deprecated twin
    contentChanged: NotRequired[bool]  # deprecated twin
    duplicateMemoryId: NotRequired[str | None]  # deprecated twin


class ModifyAnswer(TypedDict):
    """What a batch modify answers (`Memories.modify`): each patch's outcome."""

    results: list[PatchResult]
    updated: int
    total: int


class PurgeCounts(TypedDict):
    """What a purge removed or rewrote (`store.purge.PurgeReport`)."""

    found: bool
    was_deleted: bool
    history_rows: int
    archive_rows: int
    embeddings: int
    entities: int
    jobs: int
    links: int
    copies: int


class DeleteAnswer(TypedDict):
    """What a delete answers (`Memories.delete`): a soft delete (status deleted), or with
    `purge` the text removed for good (status purged, with what was removed)."""

    id: str
    status: str
    current_version: int | None
    new_version: int | None
    was_deleted: NotRequired[bool]
    purged: NotRequired[PurgeCounts]
    wal_truncated: NotRequired[bool]
    currentVersion: NotRequired[int | None]  # deprecated twin
    newVersion: NotRequired[int | None]  # deprecated twin
    wasDeleted: NotRequired[bool]  # deprecated twin
    walTruncated: NotRequired[bool]  # deprecated twin


class RecoverAnswer(TypedDict):
    """What recover answers (`Memories.recover`): the memory is live again."""

    id: str
    status: str
    current_version: int
    new_version: int
    currentVersion: NotRequired[int]  # deprecated twin
    newVersion: NotRequired[int]  # deprecated twin


class RestoreAnswer(RecoverAnswer):
    """What restoring a superseded memory answers (`Pipeline.restore_superseded`)."""

    superseded_by: str | None
    supersededBy: NotRequired[str | None]  # deprecated twin


class ForgetCandidate(TypedDict):
    """A memory a forget preview would remove."""

    id: str
    content: str
    type: str
    pinned: bool
    created_at: str
    #: by query: its recall score and the query's words its text holds
    score: NotRequired[float]
    matched_terms: NotRequired[list[str]]


class ForgetSelection(TypedDict):
    """The bars a memory passed to be selected by a forget query."""

    min_score: float
    min_coverage: float


class ForgetAnswer(TypedDict):
    """What forget answers (`Memories.forget`): with mode preview the candidates and the
    confirmation token; with mode execute what was removed."""

    mode: str
    # -- preview
    count: NotRequired[int]
    candidates: NotRequired[list[ForgetCandidate]]
    requires_confirm: NotRequired[bool]
    confirm_token: NotRequired[str]
    purge: NotRequired[bool]
    #: a preview by query: its words, the bars, and what the search found but left out
    query_terms: NotRequired[list[str]]
    selection: NotRequired[ForgetSelection]
    excluded: NotRequired[list[dict[str, Any]]]
    # -- execute
    deleted: NotRequired[int]
    ids: NotRequired[list[str]]
    hard: NotRequired[bool]
    wal_truncated: NotRequired[bool]
    requiresConfirm: NotRequired[bool]  # deprecated twin
    confirmToken: NotRequired[str]  # deprecated twin
    walTruncated: NotRequired[bool]  # deprecated twin


class ImportItem(TypedDict):
    """One item of a bulk import: created, deduplicated or replayed."""

    index: int
    id: str
    status: str


class ImportAnswer(TypedDict):
    """What a bulk import answers (`Carry.import_memories`)."""

    total: int
    created: int
    deduplicated: int
    replayed: int
    items: list[ImportItem]
