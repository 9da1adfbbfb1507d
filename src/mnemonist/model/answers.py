"""The shapes of the service's most-used answers (service/), and their one key style:
snake_case.

A request may spell a key either way (the request models accept camelCase too). An answer
spells every key in snake_case. The writes' answers (modify, PATCH, delete, purge, recover,
restore, forget) spelt a few keys in camelCase before; each of those is still sent beside its
snake_case twin (`LEGACY_KEYS`), so that a client reading the old spelling keeps working.
docs/api.md lists them as deprecated."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

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


def with_legacy_keys(out: dict[str, Any]) -> dict[str, Any]:
    """`out` with the deprecated camelCase twin of each of its `LEGACY_KEYS` (same value)."""
    for snake, camel in LEGACY_KEYS.items():
        if snake in out:
            out[camel] = out[snake]
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
