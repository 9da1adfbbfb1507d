"""The shapes of the answers about sessions (`Sessions`: their state, turns, checkpoints) and
of the harness hooks (`Hooks`). Keys are snake_case (model/answers.py)."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict

from mnemonist.model.answers_graph import SessionFeedback
from mnemonist.model.answers_reads import MemoryRow


class SessionState(TypedDict):
    """A session's state row, created on the first event it sends (`Sessions.ensure_session`)."""

    session_key: str
    harness: str | None
    project: str | None
    project_normalized: str | None
    cwd: str | None
    transcript_path: str | None
    started_at: str
    updated_at: str
    ended_at: str | None
    prompt_count: int
    checkpoint_prompt_count: int
    last_checkpoint_at: str | None
    context_reset_at: str | None
    compaction_pending: int
    compactions: int
    recent_prompts: list[str]
    memory_queries: list[str]


class Checkpoint(TypedDict):
    """A session checkpoint: its digest of the working state."""

    id: str
    session_key: str
    harness: str | None
    project: str | None
    project_normalized: str | None
    trigger: str
    digest: str
    prompt_count: int
    memory_queries: list[str]
    recent_remembers: list[str]
    created_at: str


class LatestCheckpoint(Checkpoint):
    """The latest checkpoint with its recovery digest (`Sessions.latest_checkpoint`)."""

    recovery: str


class CheckpointCreated(TypedDict):
    """What an explicit or agent checkpoint answers (`Sessions.create_checkpoint`): queued
    (an agent's: its session and trigger), or written now (the checkpoint)."""

    queued: bool
    session_key: NotRequired[str]
    trigger: NotRequired[str]
    id: NotRequired[str]
    harness: NotRequired[str | None]
    project: NotRequired[str | None]
    project_normalized: NotRequired[str | None]
    digest: NotRequired[str]
    prompt_count: NotRequired[int]
    memory_queries: NotRequired[list[str]]
    recent_remembers: NotRequired[list[str]]
    created_at: NotRequired[str]


class CheckpointListAnswer(TypedDict):
    """A page of checkpoints, newest first (`Sessions.list_checkpoints`)."""

    checkpoints: list[Checkpoint]
    total: int
    limit: int
    offset: int
    has_more: bool


class CheckpointQueueState(TypedDict):
    """The checkpoint flush queue."""

    pending: int
    written: int
    merged: int
    pruned: int
    last_error: str | None


class CheckpointStatus(TypedDict):
    """Sessions tracked, checkpoints and transcripts kept, and the checkpoint queue
    (`Sessions.checkpoint_status`)."""

    tracked: int
    checkpoints: int
    transcripts: int
    checkpoint_queue: CheckpointQueueState


class SessionsStatus(CheckpointStatus):
    """The `sessions` part of /api/status (`Sessions.sessions_status`): with the sessions
    indexed as turns (by status) and how many are being read."""

    indexed: int
    pending: int
    skipped: int
    turns: int
    reading: int


class SessionListAnswer(TypedDict):
    """A page of sessions read as turns (`Sessions.list_sessions`)."""

    #: a session's read state (status, reason, turns, first and last turn, ...)
    sessions: list[dict[str, Any]]
    total: int
    limit: int
    offset: int
    has_more: bool


class SessionMemory(TypedDict):
    """A memory a session was given or whose words its prompts hit."""

    session_key: str
    memory_id: str
    rank: int
    was_injected: int
    injected_at: str | None
    fts_hit_count: int
    relevance_score: float | None


class SessionAnswer(TypedDict):
    """A session (`Sessions.get_session`): its state, what was read of it, its turns in
    order, checkpoints, what it was given, and when asked its lossless transcript."""

    session_key: str
    state: SessionState | None
    #: its read state (status, reason, read position, turns, ...), None before a read
    ingest: dict[str, Any] | None
    turns: list[MemoryRow]
    turns_total: int
    turns_offset: int
    checkpoints: list[Checkpoint]
    injected: list[SessionMemory]
    transcript: NotRequired[str | None]


class IngestQueued(TypedDict):
    """A read of a session's transcript queued, or why none was
    (`Sessions.queue_session_ingest`)."""

    queued: bool
    reason: NotRequired[str]
    job_id: NotRequired[str | None]
    trigger: NotRequired[str]


class SessionReadAnswer(TypedDict):
    """What one read of a session's transcript did (`Sessions.ingest_session`): indexed
    (lines, turns, written), below the significance gate (pending or skipped, with the
    reason), or a transcript that may not be read (`skipped` alone, the reason)."""

    session_key: NotRequired[str]
    status: NotRequired[str]
    reason: NotRequired[str]
    written: NotRequired[int]
    lines: NotRequired[int]
    turns: NotRequired[int]
    deduplicated: NotRequired[int]
    took_ms: NotRequired[float]
    skipped: NotRequired[str]


class SessionStartAnswer(TypedDict):
    """What the session-start hook answers (`Hooks.hook_session_start`): the context given
    and the memories in it."""

    session_key: str
    project: str | None
    source: str
    context: str
    memories: list[str]
    recovered: bool
    checkpoint_id: str | None
    chars: int


class PromptAnswer(TypedDict):
    """What the prompt-submit hook answers (`Hooks.hook_user_prompt_submit`)."""

    session_key: str
    context: str
    memories: list[str]
    prompt_count: int
    recovered: bool
    #: "queued" when the periodic checkpoint fired
    checkpoint: str | None
    ingest: IngestQueued | None
    candidates: int


class PreCompactionAnswer(TypedDict):
    """What the pre-compaction hook answers (`Hooks.hook_pre_compaction`)."""

    session_key: str
    checkpoint_id: str | None
    trigger: str | None
    ingest: IngestQueued
    instructions: str


class CompactionCompleteAnswer(TypedDict):
    """What the compaction-complete hook answers: the next start or prompt recovers."""

    session_key: str
    recovery_pending: bool


class SummaryQueued(TypedDict):
    """A session summary job queued, or why none was (`Hooks.queue_summary`)."""

    queued: bool
    reason: NotRequired[str]
    job_id: NotRequired[str | None]


class SessionEndAnswer(TypedDict):
    """What the session-end hook answers (`Hooks.hook_session_end`)."""

    session_key: str
    checkpoint_id: str | None
    summary_job: str | None
    summary: SummaryQueued
    transcript: IngestQueued
    feedback: SessionFeedback | None
