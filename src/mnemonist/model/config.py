"""The configuration schema: the `memory:`, `search:`, `embedding:`, `server:`, `hooks:` and
`files:` sections of `agent.yaml`, with their defaults and ranges (docs/configuration.md).

`memory.pipelineV2` and its sub-objects use camelCase keys, as its users' files do (snake_case
is accepted too); `memory.decay_rate` and `search.*` are snake_case. Loading
the file, legacy flat keys and error formatting live in `mnemonist.settings`. The
`memory.pipelineV2` sections are in `config_pipeline`, the ranged-field helpers in
`config_fields`; both are importable from here as before.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from mnemonist.model.config_consolidation import ConsolidationConfig as ConsolidationConfig
from mnemonist.model.config_fields import CamelModel as CamelModel
from mnemonist.model.config_fields import Ms, Range, SnakeModel
from mnemonist.model.config_fields import bounds as bounds
from mnemonist.model.config_gates import SignificanceGateConfig as SignificanceGateConfig
from mnemonist.model.config_gates import WriteGateConfig as WriteGateConfig
from mnemonist.model.config_pipeline import ContinuityConfig as ContinuityConfig
from mnemonist.model.config_pipeline import DampeningConfig as DampeningConfig
from mnemonist.model.config_pipeline import ExtractionConfig as ExtractionConfig
from mnemonist.model.config_pipeline import GraphConfig as GraphConfig
from mnemonist.model.config_pipeline import HintsConfig as HintsConfig
from mnemonist.model.config_pipeline import PipelineV2Config as PipelineV2Config
from mnemonist.model.config_pipeline import RepairConfig as RepairConfig
from mnemonist.model.config_pipeline import RerankerConfig as RerankerConfig
from mnemonist.model.config_predictor import PredictorConfig as PredictorConfig
from mnemonist.model.memory import MEMORY_TYPES
from mnemonist.text.scrub import scrub_credentials

# --- memory ---------------------------------------------------------------------------------


class RetentionConfig(CamelModel):
    """Windows of the retention worker."""

    tombstone_days: int = Range(30, 1, 3650, "soft-deleted memories kept for recovery")
    history_days: int = Range(180, 1, 3650)
    completed_job_days: int = Range(14, 1, 3650)
    dead_job_days: int = Range(30, 1, 3650)
    batch_limit: int = Range(500, 1, 100000, "rows per step per sweep")
    interval_ms: Ms = Range(21600000, 60000, 604800000, "time between sweeps (6 h)")
    event_ttl_days: int = Range(
        30, 0, 3650, "unpinned events no recall or hook returned and nobody changed for this"
        " many days go to the archive (recoverable; 0: never)")
    event_ttl_max_importance: float = Range(
        0.6, 0.0, 1.0, "only events of this importance or less expire: medium and low"
        " (an explicit save is 0.8, high)")
    training_pair_days: int = Range(
        365, 1, 36500, "the learned ranker's training pairs (a query and whether a memory"
        " helped) are kept this many days")


#: types whose confidence fades when nobody uses them (docs/ranking.md): a status goes stale
#: within days. Facts could too, but decaying them cost LoCoMo recall in every measured
#: setting (docs/benchmarks.md); decisions, rules and events stay as they were recorded, and a
#: pinned memory never decays.
DECAYING_TYPES = ("status",)


class MemoryConfig(SnakeModel):
    decay_rate: float = Range(0.95, 0.5, 1.0, "importance × decay_rate^days_since_access")
    decay_by_type: bool = Field(
        default=True,
        description="only the decay_types decay (false: every unpinned memory but decisions)",
    )
    decay_types: list[str] = Field(
        default_factory=lambda: list(DECAYING_TYPES),
        description="memory types whose importance decays with days since last access",
    )
    access_boost_weight: float = Range(
        0.0, 0.0, 2.0, "score × (1 + w·log2(1 + explicit recalls)) up to the cap (0: off)"
    )
    access_boost_cap: float = Range(1.2, 1.0, 5.0, "the largest access boost multiplier")
    default_importance: float = Range(0.8, 0.0, 1.0, "importance of an explicit save")
    durability: Literal["full", "normal"] = Field(
        default="full",
        description="SQLite synchronous mode: full survives power loss, normal only crashes",
    )
    modify_batch_limit: int = Range(100, 1, 1000, "patches per /api/memory/modify call")
    forget_batch_limit: int = Range(1000, 1, 100000, "memories per /api/memory/forget call")
    forget_confirm_threshold: int = Range(
        25, 0, 100000, "above this, execute needs the token (a query always needs it)")
    forget_min_score: float = Range(
        0.25, 0.0, 1.0, "forget by query: the least recall score a memory needs to be selected")
    forget_min_coverage: float = Range(
        1.0, 0.0, 1.0, "forget by query: the share of the query's words a memory must hold")
    max_content_chars: int = Range(100000, 100, 10000000, "longest memory accepted")
    access_flush_ms: Ms = Range(1000, 50, 60000, "how often recall access counts are written")
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    consolidation: ConsolidationConfig = Field(default_factory=ConsolidationConfig)
    write_gate: WriteGateConfig = Field(default_factory=WriteGateConfig, alias="writeGate")
    pipeline_v2: PipelineV2Config = Field(default_factory=PipelineV2Config, alias="pipelineV2")

    model_config = ConfigDict(extra="ignore", populate_by_name=True, validate_assignment=True)

    @field_validator("decay_types")
    @classmethod
    def _known_types(cls, value: list[str]) -> list[str]:
        unknown = [t for t in value if t not in MEMORY_TYPES]
        if unknown:
            raise ValueError(f"unknown memory type(s) {', '.join(unknown)}; known: "
                             f"{', '.join(MEMORY_TYPES)}")
        return value


# --- search -----------------------------------------------------------------------------


class SearchConfig(SnakeModel):
    alpha: float = Range(0.7, 0.0, 1.0, "vector weight; 1 - alpha goes to the keyword leg")
    min_score: float = Range(0.1, 0.0, 1.0, "results below this fused score are dropped")
    min_relevance: float = Range(
        0.0, 0.0, 1.0, "recall drops results whose calibrated relevance (the probability that"
        " the memory answers the query) is below this"
    )
    min_answerable: float = Range(
        0.05, 0.0, 1.0, "recall returns nothing when the probability that anything in scope"
        " answers the query is below this (a string stored nowhere, a question from another"
        " domain)"
    )
    newest_first_share: float = Range(
        0.4, 0.0, 1.0, "among the best hits, statements about the query's subject that match"
        " it at least this share as well as the best hit (fused score) are ordered newest"
        " first (0: off; a question about the past keeps its order)"
    )
    top_k: int = Range(100, 1, 2000, "candidates each leg contributes before fusion")
    keyword_norm: Literal["minmax", "max"] = Field(
        default="minmax", description="per-query normalisation of BM25 scores"
    )
    importance_weight: float = Range(
        0.1, 0.0, 1.0, "share of the score that follows decayed importance"
    )
    reranking: bool = False
    context_window: int = Range(
        2, 0, 10, "the keyword leg also indexes each memory with ±N neighbours of its source"
    )
    vector_precision: Literal["auto", "int8", "float32"] = Field(
        default="auto",
        description="the in-memory vector index: int8 codes (1 byte a dimension) rescored"
        " exactly from the stored vectors, float32 vectors (4 bytes a dimension), or auto:"
        " float32 below 25,000 vectors, int8 from there",
    )
    postgres_vectors: Literal["memory", "database"] = Field(
        default="memory",
        description="on PostgreSQL, where the vector leg searches: memory (each daemon keeps"
        " the vectors in its own index, in step with every daemon's commits through"
        " PostgreSQL notifications; the database answers until it is built) or database"
        " (pgvector: nothing held in memory, an exact scan below 20,000 vectors, HNSW above)",
    )
    context_vector_weight: float = Range(
        0.0, 0.0, 1.0, "share of the context text's cosine in a memory's vector score (0: off)"
    )
    who_weight: float = Range(
        0.4, 0.0, 5.0, "lift (×(1+w)) for memories by a person the query names (0: off)"
    )
    who_strip: bool = Field(
        default=True,
        description="the vector leg embeds the query without the names of the authors it names",
    )
    phrase_weight: float = Range(
        0.2, 0.0, 1.0, "keyword bonus for holding two adjacent query words as a phrase (0: off)"
    )
    time_candidates: float = Range(
        0.5, 0.0, 1.0,
        "memories from a time the query names join the candidates at this share of their score",
    )
    source_boost: float = Range(
        0.0, 0.0, 5.0, "lift for memories whose source holds other strong matches (0: off)"
    )
    keyword_fields: Literal["content", "context", "both"] = Field(
        default="context", description="which keyword index(es) the keyword leg reads"
    )
    keyword_mirror: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="rank the context keyword index from an in-memory copy of it (same rows,"
        " same scores, without FTS5's walk over every match): auto from 150,000 memories"
        " on SQLite, from 5,000 on PostgreSQL (where it replaces a round trip that scores"
        " every matching row)",
    )
    time_aware: bool = Field(
        default=True, description="recognise time expressions in queries (no LLM)"
    )
    time_weight: float = Range(
        1.0, 0.0, 5.0, "score boost (×(1+w)) for memories whose event time is in the window"
    )
    corroboration_weight: float = Range(
        0.1, 0.0, 2.0,
        "lift ×(1+w·log2(observation_count)) for memories several agents stored (0: off)",
    )
    sparse_weight: float = Range(
        0.0, 0.0, 1.0,
        "share of the keyword leg given to the learned sparse (SPLADE) leg; 1 replaces the "
        "FTS5 scores (0: off; needs sparse.enabled)",
    )
    sparse_fields: Literal["content", "context", "both"] = Field(
        default="context",
        description="which SPLADE expansion the sparse leg reads (both: their sum)",
    )
    sparse_blend: Literal["share", "add"] = Field(
        default="share",
        description="share: SPLADE takes sparse_weight of the keyword leg's place; add: it is "
                    "added on top as a third leg",
    )
    session_weight: float = Range(
        0.5, 0.0, 5.0,
        "lift ×(1+w·relevance) for candidates whose session (source) ranks high as a whole"
        " (0: off)",
    )
    session_top: int = Range(0, 0, 20, "sessions whose other turns join the candidates")
    session_pool: Literal["top3", "mean", "max"] = Field(
        default="max",
        description="a session's relevance: the mean of its 3 best turns, of all its turns, or"
                    " its best turn",
    )
    session_signal: Literal["fused", "splade", "both"] = Field(
        default="fused",
        description="what ranks a session as a whole: its turns' fused scores, the SPLADE"
                    " expansion of the whole session against the query's, or both"
                    " (splade and both need sparse.enabled)",
    )
    session_splade_share: float = Range(
        0.5, 0.0, 1.0, "with session_signal both: the SPLADE share of a session's relevance"
    )
    session_splade_pool: Literal["sum", "max"] = Field(
        default="max",
        description="a session's SPLADE vector: the term-wise max or the normalised sum of its"
                    " turns' expansions",
    )
    session_find: int = Range(
        0, 0, 20,
        "with session_signal splade or both: sessions found by their SPLADE vector whose"
        " turns join the candidates, even when no first-round candidate came from them",
    )
    session_cap: int = Range(
        0, 0, 10, "at most this many memories of one source among the first 10 results (0: off)"
    )
    feedback_weight: float = Range(
        0.0, 0.0, 2.0,
        "dense pseudo-relevance feedback: the vector leg re-ranks with the query vector plus"
        " this × the mean vector of the first round's best candidates (0: off)",
    )
    feedback_depth: int = Range(3, 1, 20, "first-round candidates feedback reads")
    expansion_terms: int = Range(
        0, 0, 20,
        "keyword pseudo-relevance feedback: words of the first round's best candidates added"
        " to a second keyword query (0: off)",
    )
    expansion_weight: float = Range(
        0.3, 0.0, 1.0, "share of the keyword leg given to the expanded query"
    )


# --- embedding and server -------------------------------------------------------------------


class EmbeddingConfig(SnakeModel):
    provider: Literal["local", "ollama", "openai", "none"] = "local"
    model: str = Field(default="", description="empty: the provider's default model")
    base_url: str = ""
    api_key: str = ""
    api_key_env: str = Field(default="OPENAI_API_KEY", description="read when api_key is empty")
    dimensions: int | None = Field(default=None, ge=1, le=8192)
    timeout_ms: Ms = Range(30000, 1000, 300000, "HTTP providers: one embedding request")
    query_timeout_ms: Ms = Range(
        5000, 100, 60000, "HTTP providers: the longest a recall waits for its query's vector,"
        " then it answers keyword-only"
    )
    query_retry_ms: Ms = Range(
        30000, 1000, 600000, "once a query embedding fails or the provider stops answering,"
        " recall skips it this long, keyword-only (doubling while it stays down, at most 10x)"
    )
    batch_size: int = Range(32, 1, 256, "texts per embedding call")
    threads: int = Range(
        0, 0, 64, "texts the local model embeds at once, one per thread (0: every core); the"
        " threads beyond the caller's run at low priority and, for background embedding, only"
        " while no request is in flight"
    )
    products: Literal[
        "int8", "int8_outlier_float", "int8_first_ffn_float", "int8_ffn_float", "float"
    ] = Field(
        default="int8_outlier_float",
        description="the local model's matrix products: int8 (all integer, fastest),"
        " int8_outlier_float (all integer but the feed-forward outputs' few outlier input"
        " channels, in float32: as fast),"
        " int8_first_ffn_float (the first layer's feed-forward output in float32),"
        " int8_ffn_float (every feed-forward output in float32), float (as shipped: every"
        " weight dequantized, the slowest)",
    )


class ServerConfig(SnakeModel):
    host: str = "127.0.0.1"
    port: int = Range(3850, 1, 65535)
    token: str = Field(
        default="", description="required on every request when set; 16+ characters, no spaces"
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="extra Host names the daemon answers to (name or name:port), e.g. a proxy's",
    )
    max_body_bytes: int = Range(
        16777216, 65536, 1073741824, "largest request body; larger is a 413 before it is read"
    )
    name: str = Field(
        default="", max_length=64,
        description="this daemon's name in history (`token:NAME via THIS`, with named"
                    " tokens); empty: the machine's host name",
    )

    @field_validator("name")
    @classmethod
    def _daemon_name(cls, value: str) -> str:
        value = value.strip()
        if any(c.isspace() or ord(c) < 32 for c in value):
            raise ValueError("may not contain whitespace or control characters")
        if scrub_credentials(f"token:x via {value}").kinds:  # history would hide it
            raise ValueError("looks like a credential: choose a plain name")
        return value

    def daemon_name(self) -> str:
        """`name`, else the host name (its first 64 characters)."""
        if self.name:
            return self.name
        import socket

        host = "".join(c for c in socket.gethostname() if not c.isspace())
        return host[:64] or "mnemonist"


class StorageConfig(SnakeModel):
    url: str = Field(
        default="",
        description="empty: the SQLite file in the home; postgresql://user@host:port/db: a team's"
                    " shared PostgreSQL with pgvector (docs/postgres.md)",
    )
    pool_size: int = Range(16, 2, 256, "PostgreSQL: most pooled connections this daemon opens")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be empty (SQLite in the home) or a postgresql:// URL")
        return value


class HooksConfig(CamelModel):
    """Harness hooks (`mnemonist hook <event>`, `/api/hooks/*`): deadlines and injection budgets."""

    enabled: bool = Field(default=True, description="false: hook commands print nothing")
    timeout_ms: Ms = Range(5000, 100, 60000, "hard deadline of a hook command, connect + read")
    prompt_min_score: float = Range(
        0.0, 0.0, 1.0, "prompt submit injects only memories whose fused score is at least this"
        " (relevance decides; this is an extra floor)"
    )
    prompt_min_relevance: float = Range(
        0.2, 0.0, 1.0, "prompt submit injects nothing unless its best memory's relevance (the"
        " probability that it answers the prompt) reaches this; session start uses it for the"
        " project's memories"
    )
    prompt_marginal_relevance: float = Range(
        0.05, 0.0, 1.0, "after the best, a memory is injected only while the chance that it"
        " is the first useful one (its relevance × the chance that none before it was) is at"
        " least this: a confident first memory leaves no room for weak ones"
    )
    prompt_max_memories: int = Range(5, 0, 50, "memories injected per prompt at most")
    prompt_budget_chars: int = Range(2000, 0, 50000, "characters injected per prompt at most")
    session_start_budget_chars: int = Range(
        6000, 200, 100000, "characters of the session-start context block at most"
    )
    session_start_max_memories: int = Range(25, 0, 200, "memories in the session-start block")
    memory_chars: int = Range(400, 50, 10000, "one injected memory is cut to this length")
    transcript_roots: list[str] = Field(
        default_factory=list,
        description="more folders the daemon may read transcript files from (beside the"
        " harnesses' own, e.g. ~/.claude/projects); absolute paths",
    )


class SessionsConfig(SnakeModel):
    """Session transcripts indexed as turn memories (no LLM needed)."""

    enabled: bool = Field(
        default=True, description="index what the user and the assistant said in each session"
    )
    min_substantive_turns: int = Range(
        2, 0, 1000,
        "a session with fewer turns that say something (not greetings) is not indexed",
    )
    importance: float = Range(0.5, 0.0, 1.0, "importance of a session turn memory")
    messages_per_memory: int = Range(
        1, 1, 50, "consecutive messages joined into one memory (1: one memory per message)"
    )
    recall_weight: float = Range(
        1.0, 0.0, 2.0, "score multiplier of session turns in recall beside curated memories"
    )
    delta_prompts: int = Range(
        10, 1, 10000, "prompt submit reads the transcript's new lines every N prompts"
    )
    delta_bytes: int = Range(
        65536, 1024, 104857600, "... or as soon as the transcript grew by this many bytes"
    )
    significance: SignificanceGateConfig = Field(default_factory=SignificanceGateConfig)


# --- files: workspace memory files -----------------------------------------------------------


class FilesConfig(SnakeModel):
    """MEMORY.md, memory.md and memory/**/*.md under each known project root, indexed as
    line-ranged chunk memories and kept in step with the files (docs/files.md)."""

    enabled: bool = Field(default=True, description="index memory files of known project roots")
    roots: list[str] = Field(
        default_factory=list,
        description="extra project folders to index, besides the working folders hooks report",
    )
    chunk_tokens: int = Range(400, 50, 4000, "most tokens in a chunk (a token: 4 characters)")
    chunk_overlap: int = Range(
        80, 0, 3999, "tokens of whole lines a chunk repeats from the one before"
    )
    watch: bool = Field(default=True, description="re-sync a file when it changes on disk")
    watch_debounce_ms: Ms = Range(
        1500, 50, 60000, "a burst of changes is synced at most this long after it began"
    )
    interval_minutes: float = Range(5, 0, 1440, "full sync every N minutes (0: off)")
    sync_on_search: bool = Field(
        default=True, description="recall first syncs files known to have changed"
    )
    sync_on_session_start: bool = Field(
        default=True, description="a session start syncs its project's files first"
    )
    max_file_bytes: int = Range(2097152, 1024, 104857600, "larger files are skipped")

    @field_validator("roots")
    @classmethod
    def _absolute_roots(cls, value: list[str]) -> list[str]:
        for root in value:
            if "\x00" in root or not os.path.isabs(os.path.expanduser(root)):
                raise ValueError(f"{root!r} is not an absolute path (~ is allowed)")
        return value

    @field_validator("chunk_overlap")
    @classmethod
    def _overlap_below_size(cls, value: int, info: ValidationInfo) -> int:
        tokens = info.data.get("chunk_tokens")
        if tokens is not None and value >= tokens:
            raise ValueError(f"must be smaller than chunk_tokens ({tokens})")
        return value


class SparseConfig(SnakeModel):
    """Learned sparse (SPLADE-tiny) expansion of memories, computed in the background."""

    enabled: bool = Field(
        default=False,
        description="expand memories with SPLADE in the background and load the sparse index",
    )
    model_dir: str = Field(
        default="", description="folder of the SPLADE model files (empty: the venv's share/)"
    )
    fields: Literal["content", "context", "both"] = Field(
        default="both", description="which texts are expanded: the memory, its context text"
    )
    batch_size: int = Range(4, 1, 256, "texts per encoder call (peak memory grows with it)")
    max_tokens: int = Range(256, 16, 512, "texts are cut to this many word pieces")
    cache_dir: str = Field(
        default="",
        description="reuse expansions across stores, keyed by text (benchmarks; empty: off)",
    )


class Config(SnakeModel):
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    files: FilesConfig = Field(default_factory=FilesConfig)
    sparse: SparseConfig = Field(default_factory=SparseConfig)
    predictor: PredictorConfig = Field(default_factory=PredictorConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)

