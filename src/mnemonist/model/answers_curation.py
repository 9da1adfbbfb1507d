"""The shapes of the curation answers (`Curation`: the consolidation engine, the duplicate
review queue, principles). Keys are snake_case (model/answers.py)."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict


class ConsolidationRun(TypedDict):
    """One run of the consolidation engine (`Curation.consolidate`): what it read and
    settled, or why it did not run (`skipped` alone)."""

    skipped: NotRequired[str]
    examined: NotRequired[int]
    restated: NotRequired[int]
    replaced: NotRequired[int]
    flagged: NotRequired[int]
    llm_asked: NotRequired[int]
    llm_answered: NotRequired[int]
    batches: NotRequired[int]
    cursor: NotRequired[int]
    waiting_for_embedding: NotRequired[str | None]
    done: NotRequired[bool]
    seconds: NotRequired[float]
    #: each action's memory ids (the benchmark's `details` only, never a face)
    actions: NotRequired[list[dict[str, Any]]]
    #: why the configured LLM was not asked, or asked no more
    llm: NotRequired[str]


class ConsolidationStatus(TypedDict):
    """The engine's settings, cursor and counts, what is left to read, the open
    contradictions and its worker (`Curation.consolidation_status`)."""

    enabled: bool
    interval_ms: int
    cursor: int
    runs: int
    restated: int
    replaced: int
    flagged: int
    updated_at: str | None
    not_read_yet: int
    open_contradictions: int
    worker: dict[str, Any]


class DedupSweep(TypedDict):
    """One run of the near-duplicate sweep (`Curation.dedup_sweep`): it only flags; or why
    it did not run (`skipped` alone)."""

    skipped: NotRequired[str]
    examined: NotRequired[int]
    pairs_above_threshold: NotRequired[int]
    flagged: NotRequired[int]
    #: pairs above the threshold that a guard kept apart, by guard
    guarded: NotRequired[dict[str, int]]
    threshold: NotRequired[float]
    cursor: NotRequired[int]
    waiting_for_embedding: NotRequired[str | None]
    done: NotRequired[bool]


class DuplicatesState(TypedDict):
    """Open pairs waiting for review, and how far the sweep has come
    (`Curation.duplicates_state`)."""

    open: int
    swept_up_to_seq: int
    not_swept_yet: int


class PairMemory(TypedDict):
    """One memory of a candidate pair."""

    id: str
    content: str | None
    type: str | None
    created_at: str | None


class DuplicatePair(TypedDict):
    """A candidate pair for review: near-duplicates, a contradiction, or what consolidation
    settled."""

    id: str
    kind: str
    status: str
    similarity: float | None
    reason: str | None
    kept: str | None
    created_at: str
    updated_at: str | None
    a: PairMemory
    b: PairMemory


class DuplicateListAnswer(TypedDict):
    """A page of candidate pairs (`Curation.list_duplicates`)."""

    duplicates: list[DuplicatePair]
    total: int
    status: str
    kind: str | None
    limit: int
    offset: int


class DuplicateDismissed(TypedDict):
    """A pair dismissed: never flagged again (`Curation.dismiss_duplicate`)."""

    id: str
    status: str
    reason: str | None


class DuplicateResolved(TypedDict):
    """A pair resolved: one memory kept, the other superseded by it
    (`Curation.resolve_duplicate`)."""

    id: str
    status: str
    kept: str
    superseded: str


class PrincipleView(TypedDict):
    """A principle: a statement the LLM drew from a group of entities, and its review."""

    id: str
    statement: str
    status: str
    entity_id: str | None
    project: str | None
    sources: list[str]
    source_names: list[str | None]
    evidence: list[Any]
    reason: str | None
    similarity: float | None
    model: str | None
    created_at: str
    reviewed_at: str | None
    review_reason: str | None


class PrincipleListAnswer(TypedDict):
    """Principles, and how many there are by status (`Curation.list_principles`)."""

    principles: list[PrincipleView]
    counts: dict[str, int]


class PrinciplesRun(TypedDict):
    """One run of the principles pass (`Curation.run_principles`), or why it asked no LLM
    (`skipped`, with nothing proposed)."""

    skipped: str | int
    proposed: list[Any]
    groups: NotRequired[int]
    asked: NotRequired[int]
    no_pattern: NotRequired[int]
    invalid: NotRequired[int]
    llm: NotRequired[str]


class PrincipleBrief(TypedDict):
    """A proposed principle as the graph's diagnostics list it."""

    id: str
    statement: str
    project: str | None
    sources: list[str]
    source_names: list[str | None]
    evidence: list[Any]
    created_at: str


class PrinciplesReport(TypedDict):
    """Principles in `/api/diagnostics/graph` (`Curation.principles_report`): settings,
    counts by status, the latest proposed, and why a run would not ask the LLM now."""

    enabled: bool
    cooldown_ms: int
    max_groups: int
    similarity_threshold: float
    counts: dict[str, int]
    unavailable: str | None
    proposed: list[PrincipleBrief]
