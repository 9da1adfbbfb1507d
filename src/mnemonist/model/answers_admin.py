"""The shapes of the operator's answers: health and status (`Health`), the background
pipeline and the gates (`Pipeline`), and what moves in and out (`Carry`: backups, bundle
import). Keys are snake_case (model/answers.py), but for the pipeline's flags and settings,
which keep the spelling of their configuration keys (`shadowMode`, `maxRetries`, ...)."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict

from mnemonist.model.answers_files import FilesStatus
from mnemonist.model.answers_sessions import SessionsStatus


class PipelineFlags(TypedDict):
    """The pipeline's switches, spelt as their configuration keys
    (`Pipeline.pipeline_flags`)."""

    enabled: bool
    shadowMode: bool
    mutationsFrozen: bool
    allowUpdateDelete: bool
    autonomousFrozen: bool
    semanticContradictionEnabled: bool
    graphEnabled: bool


class HintsStatus(TypedDict):
    """Hints: configuration, counts (memories with hints, jobs by state) and the worker
    (`Pipeline.hints_status`); brief (in /api/status) the worker in words, and nothing but
    the configuration while hints are off."""

    enabled: bool
    generator: str
    hints: NotRequired[int]
    live_hints: NotRequired[int]
    memories_with_hints: NotRequired[int]
    pending_jobs: NotRequired[int]
    leased_jobs: NotRequired[int]
    dead_jobs: NotRequired[int]
    completed_jobs: NotRequired[int]
    #: brief: "running" or "not running"; else the worker's state
    worker: NotRequired[str | dict[str, Any]]
    waiting_reason: NotRequired[str | None]
    #: from the hints runtime, when one runs
    max: NotRequired[int]
    timeoutMs: NotRequired[int]


class PipelineBrief(PipelineFlags):
    """The `pipeline` part of /api/status (`Pipeline.pipeline_brief`); the worker's counts
    only when the extraction runtime runs."""

    mode: str
    provider: str
    hints: HintsStatus
    extraction_worker: str
    model: NotRequired[str]
    llm_available: NotRequired[bool]
    waiting_reason: NotRequired[str | None]
    processed: NotRequired[int]
    failed: NotRequired[int]
    deferred: NotRequired[int]


class PipelineQueue(TypedDict):
    """Background jobs by state, and by type then state."""

    by_state: dict[str, int]
    by_type: dict[str, dict[str, int]]


class PipelineSettings(TypedDict):
    """The extraction's settings, spelt as their configuration keys."""

    minConfidence: float
    timeoutMs: int
    pollMs: int
    maxRetries: int
    leaseTimeoutMs: int
    maxConcurrency: int
    hourlyBudget: int


class PipelineStatus(TypedDict):
    """GET /api/pipeline/status (`Pipeline.pipeline_status`): mode, flags, workers, queue,
    provider, counters, errors."""

    mode: str
    flags: PipelineFlags
    waiting_reason: str | None
    #: each worker's state (running, waiting_reason, counts), by job type
    workers: dict[str, dict[str, Any]]
    queue: PipelineQueue
    #: the LLM provider: name, model, available, calls, failures, ...
    provider: dict[str, Any]
    counters: dict[str, int]
    #: the LLM's last error and the jobs' last errors
    last_errors: dict[str, Any]
    graph: dict[str, int]
    superseded: int
    hints: dict[str, Any]
    config: PipelineSettings


class ArchivedVersions(TypedDict):
    """The versions a memory's content had before (`Pipeline.archived_versions`)."""

    memory_id: str
    versions: list[dict[str, Any]]


class SignificanceVerdict(TypedDict):
    """The significance gate's verdict on a session (`Pipeline.judge_session`): each check
    (`signs`), the reasons, and what it read."""

    session_key: str
    insignificant: bool
    signs: dict[str, bool]
    reasons: list[str]
    substantive: int
    known_entities: list[str]
    distance: float | None
    nearest_session: str | None
    compared_sessions: int


class SignificanceDecision(SignificanceVerdict):
    """The gate's decision before a summary (`Pipeline.significance_gate`): extract, skip
    (mode on) or would_skip (shadow)."""

    mode: str
    decision: str


class BackfillAnswer(TypedDict):
    """Summaries queued for the sessions the significance gate skipped
    (`Pipeline.backfill_skipped`)."""

    queued: int
    sessions: list[str]


class GateLogAnswer(TypedDict):
    """What the gates decided, newest first (`Pipeline.gate_log`)."""

    decisions: list[dict[str, Any]]
    total: int
    limit: int
    offset: int
    has_more: bool


class WriteGateState(TypedDict):
    """The write gate's mode and threshold, and its decisions logged by kind."""

    mode: str
    threshold: float
    logged: dict[str, int]


class SignificanceGateState(TypedDict):
    """The significance gate's mode, its decisions logged, and the sessions to backfill."""

    mode: str
    logged: dict[str, int]
    to_backfill: int


class GatesStatus(TypedDict):
    """The `gates` part of /api/status (`Pipeline.gates_status`)."""

    write: WriteGateState
    significance: SignificanceGateState


class BackupAnswer(TypedDict):
    """A backup written (`Carry.backup`)."""

    path: str
    name: str
    size: int
    pages: int
    memories: int
    took_ms: float


class BundleImportAnswer(TypedDict):
    """What a bundle's import wrote (`Carry.import_bundle`): counts by kind of record."""

    schema: int
    records: int
    scrubbed: int
    #: kind -> created, skipped, unresolved
    kinds: dict[str, dict[str, int]]
    created: int
    skipped: int


class HealthAnswer(TypedDict):
    """GET /health (`Health.health`): ok or degraded, and why in words."""

    status: str
    version: str
    database: str
    uptime_s: float
    degraded: list[str]
    problems: list[str]
    #: the background loops retrying after a failure: since when, how many attempts
    retrying: dict[str, dict[str, Any]]


class VectorIndexState(TypedDict):
    """The vector index's size and dimensions."""

    size: int
    dimensions: int | None


class StatusAnswer(TypedDict):
    """GET /api/status (`Health.status`): the core's state, the gates, sessions with the
    daemon's state in words, and memory files. Without the database (`storage`:
    unavailable) only what can be said without it."""

    version: str
    database: str
    memories: NotRequired[dict[str, Any]]
    embeddings: NotRequired[dict[str, Any]]
    embedding_provider: NotRequired[dict[str, Any]]
    vector_index: NotRequired[VectorIndexState]
    jobs: NotRequired[dict[str, dict[str, int]]]
    queue_depth: NotRequired[int]
    pipeline: NotRequired[PipelineBrief]
    sparse: NotRequired[dict[str, Any]]
    keyword_mirror: NotRequired[dict[str, Any]]
    storage: NotRequired[str]
    degraded: list[str]
    problems: list[str]
    uptime_s: float
    retrying: dict[str, dict[str, Any]]
    gates: GatesStatus
    sessions: SessionsStatus
    explanation: list[str]
    files: NotRequired[FilesStatus]
