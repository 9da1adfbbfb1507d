"""Plain records: a memory row, a history event, a job. No I/O."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

#: Types a memory may have. Explicit saves infer one of the first six from keywords.
MEMORY_TYPES = (
    "fact",
    "preference",
    "decision",
    "rule",
    "learning",
    "issue",
    "procedural",
    "semantic",
    "episodic",
    "constraint",
    "event",
    "status",
    "summary",
    "document_chunk",
)

HISTORY_EVENTS = (
    "created", "modified", "deleted", "recovered", "none", "purged", "superseded",
    "corroborated",
)

#: the most distinct agents `observed_by` lists (observation_count keeps counting past it)
MAX_OBSERVERS = 20


def utcnow() -> str:
    """An ISO 8601 UTC timestamp with milliseconds; sorts lexicographically."""
    return format_ts(datetime.now(UTC))


def format_ts(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    # always four-digit years ("%Y" writes 999 for 999 on glibc): text order is time order
    return (f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:"
            f"{value.minute:02d}:{value.second:02d}.{value.microsecond // 1000:03d}Z")


def parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _json_list(text: str | None) -> list[Any]:
    """A JSON array column: most are empty, which needs no parser."""
    return json.loads(text) if text and text != "[]" else []


#: the columns of `Memory.for_ranking`, in its order
RANKING_COLUMNS = ("seq", "id", "content", "type", "importance", "pinned", "who", "project",
                   "source_type", "source_id", "is_deleted", "last_accessed", "occurred_at",
                   "created_at", "observation_count", "recall_count")


@dataclass
class Memory:
    seq: int
    id: str
    content: str
    normalized_content: str
    content_hash: str
    type: str
    importance: float
    tags: list[str]
    pinned: bool
    who: str | None
    why: str | None
    project: str | None
    source_type: str | None
    source_id: str | None
    idempotency_key: str | None
    version: int
    is_deleted: bool
    deleted_at: str | None
    delete_reason: str | None
    last_accessed: str | None
    access_count: int
    embedding_model: str | None
    occurred_at: str
    created_at: str
    updated_at: str
    updated_by: str | None = None
    superseded_by: str | None = None
    superseded_at: str | None = None
    key: str | None = None
    supersedes: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    agent_id: str | None = None
    user_id: str | None = None
    observed_by: list[str] = field(default_factory=list)
    observation_count: int = 1
    recall_count: int = 0  # explicit recalls only (access_count also counts injections)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Memory:
        """Recall builds one per candidate (~150 a query): keep it cheap (a set of column
        names, JSON parsed only for non-empty lists)."""
        keys = set(row.keys())
        return cls(
            seq=row["seq"],
            id=row["id"],
            content=row["content"],
            normalized_content=row["normalized_content"],
            content_hash=row["content_hash"],
            type=row["type"],
            importance=row["importance"],
            tags=_json_list(row["tags"]),
            pinned=bool(row["pinned"]),
            who=row["who"],
            why=row["why"],
            project=row["project"],
            source_type=row["source_type"],
            source_id=row["source_id"],
            idempotency_key=row["idempotency_key"],
            version=row["version"],
            is_deleted=bool(row["is_deleted"]),
            deleted_at=row["deleted_at"],
            delete_reason=row["delete_reason"],
            last_accessed=row["last_accessed"],
            access_count=row["access_count"],
            embedding_model=row["embedding_model"],
            occurred_at=row["occurred_at"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            updated_by=row["updated_by"] if "updated_by" in keys else None,
            superseded_by=row["superseded_by"] if "superseded_by" in keys else None,
            superseded_at=row["superseded_at"] if "superseded_at" in keys else None,
            key=row["key"] if "key" in keys else None,
            supersedes=row["supersedes"] if "supersedes" in keys else None,
            valid_from=row["valid_from"] if "valid_from" in keys else None,
            valid_to=row["valid_to"] if "valid_to" in keys else None,
            agent_id=row["agent_id"] if "agent_id" in keys else None,
            user_id=row["user_id"] if "user_id" in keys else None,
            observed_by=_json_list(row["observed_by"]) if "observed_by" in keys else [],
            observation_count=row["observation_count"] if "observation_count" in keys else 1,
            recall_count=row["recall_count"] if "recall_count" in keys else 0,
        )

    @classmethod
    def for_ranking(cls, row: sqlite3.Row | tuple[Any, ...]) -> Memory:
        """A candidate of recall from `RANKING_COLUMNS` only (store.memories.ranking_rows):
        what ranking reads, the rest left empty. Recall ranks ~200 candidates a query and
        returns ~10; the hits it returns are read again in full (`get_many_by_seq`). Built
        without `__init__` (half the time: it is every candidate of every recall)."""
        (seq, memory_id, content, kind, importance, pinned, who, project, source_type,
         source_id, is_deleted, last_accessed, occurred_at, created_at, observation_count,
         recall_count) = row
        m = _new(cls)
        m.__dict__ = {
            **_RANKING_BLANK, "seq": seq, "id": memory_id, "content": content, "type": kind,
            "importance": importance, "tags": [], "pinned": bool(pinned), "who": who,
            "project": project, "source_type": source_type, "source_id": source_id,
            "is_deleted": bool(is_deleted), "last_accessed": last_accessed,
            "occurred_at": occurred_at, "created_at": created_at,
            "observation_count": observation_count, "recall_count": recall_count,
            "observed_by": [], "extra": {"partial": True},
        }
        return m

    def to_public(self) -> dict[str, Any]:
        """The shape every face returns (no internal row number)."""
        out = asdict(self)
        out.pop("seq")
        out.pop("extra")
        return out


_new = object.__new__
#: what `Memory.for_ranking` leaves empty (every field, in declaration order; the ones it
#: reads are overwritten)
_RANKING_BLANK: dict[str, Any] = {
    "seq": 0, "id": "", "content": "", "normalized_content": "", "content_hash": "", "type": "",
    "importance": 0.0, "tags": None, "pinned": False, "who": None, "why": None, "project": None,
    "source_type": None, "source_id": None, "idempotency_key": None, "version": 0,
    "is_deleted": False, "deleted_at": None, "delete_reason": None, "last_accessed": None,
    "access_count": 0, "embedding_model": None, "occurred_at": "", "created_at": "",
    "updated_at": "", "updated_by": None, "superseded_by": None, "superseded_at": None,
    "key": None, "supersedes": None, "valid_from": None, "valid_to": None, "agent_id": None,
    "user_id": None, "observed_by": None, "observation_count": 1, "recall_count": 0,
    "extra": None,
}


@dataclass
class HistoryEvent:
    id: str
    memory_id: str
    event: str
    old_content: str | None
    new_content: str | None
    changed_by: str | None
    reason: str | None
    metadata: dict[str, Any]
    created_at: str

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> HistoryEvent:
        return cls(
            id=row["id"],
            memory_id=row["memory_id"],
            event=row["event"],
            old_content=row["old_content"],
            new_content=row["new_content"],
            changed_by=row["changed_by"],
            reason=row["reason"],
            metadata=json.loads(row["metadata"] or "{}"),
            created_at=row["created_at"],
        )
