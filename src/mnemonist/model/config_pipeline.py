"""The `memory.pipelineV2` section of the configuration (camelCase keys, snake_case accepted):
extraction, workers, the knowledge graph, structural classification, reranking, repair,
documents, continuity, hints and dampening."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mnemonist.model.config_fields import CamelModel, Ms, Range

# --- memory.pipelineV2 -----------------------------------------------------------------------


class ExtractionConfig(CamelModel):
    # Default "none", not the documents' "claude-code": nothing leaves the machine unless the
    # user configures a provider (the claude CLI sends memories to a remote API).
    provider: Literal["ollama", "claude-code", "opencode", "openai", "anthropic", "none"] = Field(
        default="none",
        description="the LLM of extraction and decisions; none: no extraction (nothing is queued)",
    )
    model: str = "haiku"
    base_url: str = ""
    timeout: Ms = Range(45000, 5000, 300000, "LLM call timeout, ms")
    min_confidence: float = Range(0.7, 0.0, 1.0, "minimum fact confidence for a write")
    api_key: str = Field(
        default="", description="openai / anthropic key; else OPENAI_API_KEY / ANTHROPIC_API_KEY"
    )
    max_concurrency: int = Range(2, 1, 16, "LLM calls in flight at once")
    hourly_budget: int = Range(500, 1, 100000, "LLM calls per hour; past it jobs wait")


class WorkerConfig(CamelModel):
    poll_ms: Ms = Range(2000, 100, 60000)
    max_retries: int = Range(3, 1, 10, "attempts before a job is dead")
    lease_timeout_ms: Ms = Range(300000, 10000, 600000)


class TraversalConfig(CamelModel):
    """Bounds of every graph walk (knowledge_expand, graph_impact, neighbourhood)."""

    min_confidence: float = Range(0.5, 0.0, 1.0, "edges below this confidence are not followed")
    max_branching: int = Range(4, 1, 50, "edges followed out of each entity, most confident first")
    max_paths: int = Range(50, 1, 1000, "paths explored per walk")
    max_hops: int = Range(3, 1, 10, "the longest path a walk may take")
    timeout_ms: Ms = Range(200, 10, 5000, "deadline of one walk; what was found by then is kept")


class CommunitiesConfig(CamelModel):
    enabled: bool = Field(default=True, description="Louvain communities of the entity graph")
    interval_ms: Ms = Range(3600000, 60000, 86400000, "recompute at most this often")
    resolution: float = Range(1.0, 0.1, 10.0, "Louvain resolution (higher: smaller communities)")
    max_entities: int = Range(50000, 100, 1000000, "the most mentioned entities clustered")
    bridges: int = Range(20, 0, 500, "bridge entities (their relations join two or more"
                         " communities) listed by /api/diagnostics/graph; 0: none")


class FeedbackConfig(CamelModel):
    """What use and ratings teach the graph."""

    enabled: bool = Field(default=True, description="session-end and memory_feedback learning")
    aspect_delta: float = Range(0.05, 0.0, 0.5, "aspect weight added per used memory")
    edge_delta: float = Range(0.02, 0.0, 0.5, "edge confidence added per used memory")
    decay: float = Range(0.01, 0.0, 0.5, "aspect weight lost per session an injection went unused")
    min_weight: float = Range(0.1, 0.0, 1.0)
    max_weight: float = Range(1.0, 0.0, 1.0)
    decay_per_day: float = Range(
        0.005, 0.0, 0.5, "aspect weight and feedback-earned edge confidence lost per day since"
        " last confirmed (used, rated helpful, filed again); 0: no time decay")
    decay_floor: float = Range(
        0.3, 0.0, 1.0, "time decay never takes an aspect's weight below this")
    unhelpful_limit: int = Range(
        2, 1, 100, "a memory rated unhelpful this often for a prompt is not injected for it"
    )


class CoUseConfig(CamelModel):
    """Desire paths: edges learned from what sessions used together (docs/graph.md)."""

    enabled: bool = Field(
        default=False, description="learn related_to edges between entities that the memories"
                                   " sessions used name together more often than chance")
    min_sessions: int = Range(2, 1, 1000, "sessions that used both before an edge is made")
    min_npmi: float = Range(0.2, -1.0, 1.0, "least normalised PMI of the pair (0: chance)")
    max_edges: int = Range(10, 1, 1000, "co-use edges an entity holds at most (the weakest"
                                        " gives way)")
    max_entities: int = Range(12, 2, 100, "entities of one session counted per scope, the"
                                          " least mentioned first")


class InferenceConfig(CamelModel):
    """Transitive dependencies derived by the maintenance worker (docs/graph.md)."""

    enabled: bool = Field(
        default=True, description="infer A depends_on C from A -> B -> C stated dependencies")
    discount: float = Range(0.5, 0.0, 1.0, "an inferred edge's confidence: premises' product x"
                            " this, at most maxConfidence")
    max_confidence: float = Range(0.4, 0.0, 0.49, "cap of an inferred edge's confidence"
                                  " (below traversal.minConfidence: shown, not walked)")
    min_premise_confidence: float = Range(0.5, 0.0, 1.0, "premises below this are not used")
    max_per_run: int = Range(500, 1, 100000, "inferred edges written or refreshed per run")


class EntityHealthConfig(CamelModel):
    """The entity-health pass of the maintenance worker (docs/graph.md, "Entity health")."""

    enabled: bool = Field(
        default=True, description="fold plural and spelling variants of an entity into one and"
                                  " remove entities the extractor no longer finds (maintenance)")
    batch_size: int = Range(2000, 10, 100000, "entities examined per run")
    cooldown_ms: Ms = Range(600000, 10000, 86400000, "least time between two scheduled runs")
    hourly_budget: int = Range(3, 1, 100, "scheduled runs per hour at most")


class PrinciplesConfig(CamelModel):
    """The principles pass (docs/graph.md, "Principles"): patterns shared by unrelated entities,
    put to the extraction LLM and proposed for review."""

    enabled: bool = Field(
        default=True, description="propose principles (patterns shared by 3+ unrelated"
                                  " entities) with the extraction LLM, from maintenance")
    cooldown_ms: Ms = Range(86400000, 60000, 604800000,
                            "least time between two scheduled runs")
    max_groups: int = Range(3, 1, 50, "entity groups put to the LLM per run at most")
    similarity_threshold: float = Range(0.45, 0.0, 1.0, "least cosine between each two entities'"
                                        " mean memory vectors for a group")
    max_entities: int = Range(200, 3, 5000, "the most mentioned entities of a project compared")


class GraphConfig(CamelModel):
    enabled: bool = Field(
        default=True, description="knowledge graph: inline linking, pipeline graph writes, boost"
    )
    inline_linker: bool = Field(
        default=True, description="link the entities a memory names when it is written (no LLM)"
    )
    boost_weight: float = Range(
        0.15, 0.0, 1.0, "added to the score of memories linked to entities the query names (0: off)"
    )
    boost_timeout_ms: Ms = Range(500, 50, 5000, "deadline of the graph boost lookup")
    hop_weight: float = Range(
        0.5, 0.0, 1.0, "share of boostWeight for memories reached one relation away (0: no hop)"
    )
    boost_phrases: bool = Field(
        default=False,
        description="noun-phrase entities ('checkout API') seed and relay the graph boost too"
                    " (off: names and technologies only; LoCoMo measured it lower)",
    )
    decision_protection: bool = Field(
        default=True,
        description="decision language stores a decision (importance 0.85, no decay) with"
                    " constraint attributes",
    )
    traversal: TraversalConfig = Field(default_factory=TraversalConfig)
    communities: CommunitiesConfig = Field(default_factory=CommunitiesConfig)
    feedback: FeedbackConfig = Field(default_factory=FeedbackConfig)
    co_use: CoUseConfig = Field(default_factory=CoUseConfig)
    inference: InferenceConfig = Field(default_factory=InferenceConfig)
    entity_health: EntityHealthConfig = Field(default_factory=EntityHealthConfig)
    principles: PrinciplesConfig = Field(default_factory=PrinciplesConfig)
    traversal_channel: bool = Field(
        default=False,
        description="recall adds the one- and two-hop graph neighbours of its top results as"
                    " a fusion channel (measured: docs/graph.md)",
    )
    traversal_channel_weight: float = Range(
        0.5, 0.0, 2.0, "weight of the traversal channel in fusion"
    )


class StructuralConfig(CamelModel):
    """The LLM pass that files entity attributes under aspects (docs/graph.md, "Aspects")."""

    enabled: bool = Field(
        default=True, description="queue structural_classify jobs when an LLM is configured"
    )
    poll_interval_ms: Ms = Range(5000, 100, 300000, "structural worker polling interval")
    classify_batch_size: int = Range(10, 1, 50, "attributes of one entity per LLM call")


class RerankerConfig(CamelModel):
    enabled: bool = False
    model: str = Field(default="", description="model name sent to an HTTP reranker")
    base_url: str = Field(
        default="", description="a Cohere/Jina-style /rerank server; empty: embedding reranker"
    )
    api_key: str = ""
    top_n: int = Range(20, 1, 100)
    timeout_ms: Ms = Range(2000, 100, 30000)


class RepairConfig(CamelModel):
    reembed_cooldown_ms: Ms = Range(300000, 10000, 3600000)
    reembed_hourly_budget: int = Range(10, 1, 1000)
    requeue_cooldown_ms: Ms = Range(60000, 5000, 3600000)
    requeue_hourly_budget: int = Range(50, 1, 1000)
    # the near-duplicate sweep (pipeline/dedup.py): it only flags pairs for review
    dedup_cooldown_ms: Ms = Range(
        600000, 10000, 3600000, "least time between two scheduled near-duplicate sweep batches")
    dedup_hourly_budget: int = Range(3, 1, 100, "scheduled sweep batches per hour at most")
    dedup_semantic_threshold: float = Range(
        0.92, 0.0, 1.0, "cosine from which a pair of neighbours is checked and flagged")
    dedup_batch_size: int = Range(100, 10, 1000, "memories one sweep batch examines")
    # budgets of the other maintenance actions
    fts_cooldown_ms: Ms = Range(600000, 10000, 3600000, "check/rebuild of the keyword index")
    fts_hourly_budget: int = Range(3, 1, 100)
    sweep_cooldown_ms: Ms = Range(600000, 10000, 3600000, "retention sweeps run by maintenance")
    sweep_hourly_budget: int = Range(3, 1, 100)


class AutonomousConfig(CamelModel):
    enabled: bool = True
    frozen: bool = False
    allow_update_delete: bool = True
    maintenance_interval_ms: Ms = Range(1800000, 60000, 86400000)
    maintenance_mode: Literal["observe", "execute"] = "execute"


class DocumentsConfig(CamelModel):
    worker_interval_ms: Ms = Range(10000, 1000, 300000)
    chunk_size: int = Range(2000, 200, 50000)
    chunk_overlap: int = Range(200, 0, 10000)
    max_content_bytes: int = Range(10485760, 1024, 104857600)
    fetch_timeout_ms: Ms = Range(30000, 1000, 300000, "whole URL fetch, redirects included")
    allow_private_urls: bool = Field(
        default=False,
        description="let URL documents reach loopback, private and link-local addresses",
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> DocumentsConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunkOverlap ({self.chunk_overlap}) must be smaller than chunkSize"
                f" ({self.chunk_size})"
            )
        return self


class GuardrailsConfig(CamelModel):
    max_content_chars: int = Range(500, 50, 100000)
    chunk_target_chars: int = Range(300, 50, 50000)
    recall_truncate_chars: int = Range(500, 50, 100000)


class ContinuityConfig(CamelModel):
    enabled: bool = True
    prompt_interval: int = Range(10, 1, 1000)
    time_interval_ms: Ms = Range(900000, 60000, 3600000)
    max_checkpoints_per_session: int = Range(50, 1, 500)
    retention_days: int = Range(7, 1, 90)
    recovery_budget_chars: int = Range(2000, 200, 10000)


class TelemetryConfig(CamelModel):
    posthog_host: str = ""
    posthog_api_key: str = ""
    flush_interval_ms: Ms = Range(60000, 5000, 600000)
    flush_batch_size: int = Range(50, 1, 500)
    retention_days: int = Range(90, 1, 365)


class EmbeddingTrackerConfig(CamelModel):
    enabled: bool = True
    poll_ms: Ms = Range(5000, 1000, 60000)
    batch_size: int = Range(8, 1, 20)


class HintsConfig(CamelModel):
    """Prospective indexing: questions each memory answers, searched by the keyword leg."""

    enabled: bool = Field(default=False, description="generate hints and search them")
    max: int = Range(5, 1, 20, "hints per memory at most")
    timeout: Ms = Range(45000, 5000, 300000, "LLM call timeout of one hint generation, ms")
    poll: Ms = Range(5000, 1000, 60000, "hints worker polling interval, ms")
    # "local" needs no LLM (key phrases of the memory and its `who`)
    generator: Literal["llm", "local"] = Field(
        default="llm", description="llm: the extraction LLM writes questions; local: key phrases"
    )


class DampeningConfig(CamelModel):
    # off: on the final recall configuration it cost 0.003 Recall@5 and @10 on LoCoMo and
    # changed nothing on the synthetic corpus (docs/benchmarks.md)
    gravity_enabled: bool = False
    hub_enabled: bool = True
    # off: measured on LoCoMo it cost 0.003 Recall@5 (docs/benchmarks.md)
    resolution_enabled: bool = False
    hub_percentile: float = Range(0.9, 0.0, 1.0)
    hub_penalty: float = Range(0.7, 0.0, 1.0)
    gravity_penalty: float = Range(0.5, 0.0, 1.0)
    resolution_boost: float = Range(1.2, 1.0, 5.0)
    decision_language: bool = Field(
        default=True, description="resolution also boosts memories that state a decision"
    )


class PipelineV2Config(CamelModel):
    enabled: bool = True
    shadow_mode: bool = False
    mutations_frozen: bool = False
    allow_update_delete: bool = False
    autonomous_frozen: bool = False
    semantic_contradiction_enabled: bool = False
    semantic_contradiction_timeout_ms: Ms = Range(45000, 5000, 300000)
    telemetry_enabled: bool = False
    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig)
    worker: WorkerConfig = Field(default_factory=WorkerConfig)
    graph: GraphConfig = Field(default_factory=GraphConfig)
    structural: StructuralConfig = Field(default_factory=StructuralConfig)
    reranker: RerankerConfig = Field(default_factory=RerankerConfig)
    autonomous: AutonomousConfig = Field(default_factory=AutonomousConfig)
    repair: RepairConfig = Field(default_factory=RepairConfig)
    documents: DocumentsConfig = Field(default_factory=DocumentsConfig)
    guardrails: GuardrailsConfig = Field(default_factory=GuardrailsConfig)
    continuity: ContinuityConfig = Field(default_factory=ContinuityConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    embedding_tracker: EmbeddingTrackerConfig = Field(default_factory=EmbeddingTrackerConfig)
    hints: HintsConfig = Field(default_factory=HintsConfig)
    dampening: DampeningConfig = Field(default_factory=DampeningConfig)
