"""Settings of the consolidation engine (`memory.consolidation`, docs/consolidation.md)."""

from __future__ import annotations

from pydantic import Field

from mnemonist.model.config_fields import CamelModel, Ms, Range


class ReplayConfig(CamelModel):
    """Sleep replay (docs/graph.md): once the daemon has been idle a while, a few random pairs
    of memories of one project and owner are compared; alike pairs whose entities share no
    relation get a proposed `replay` edge (0.4), near-identical ones are listed for review."""

    enabled: bool = Field(default=True, description="run one replay cycle per idle period (while"
                          " memory.consolidation.enabled is on too)")
    idle_timeout_ms: Ms = Range(
        300000, 1000, 86400000, "time without API requests before a cycle runs (one per idle"
        " period: requests, then idle again, for the next)")
    pairs_per_cycle: int = Range(20, 1, 1000, "random memory pairs one cycle compares")
    similarity_threshold: float = Range(
        0.7, 0.0, 1.0, "the least cosine of a pair for an edge between its entities")


class ConsolidationConfig(CamelModel):
    """The engine tidies memory in the background: a fact said again is merged into its newer
    statement, an older value of a fact the newer statement says changed is superseded, and
    two statements that disagree with nothing to settle them are listed for review."""

    enabled: bool = Field(default=True, description="run the consolidation engine")
    interval_ms: Ms = Range(
        30000, 1000, 86400000, "how often the engine looks for memories it has not read yet")
    batch_size: int = Range(200, 10, 5000, "memories one batch reads (one short write each)")
    max_batches: int = Range(
        10, 1, 1000, "batches one run may take before it waits for the next interval")
    min_similarity: float = Range(
        0.35, 0.0, 1.0, "the least cosine between two memories for them to be compared")
    neighbours: int = Range(10, 2, 100, "nearest memories of the same project each is compared"
                                        " with")
    llm: bool = Field(
        default=True, description="ask the extraction LLM (memory.pipelineV2.extraction, when"
        " one is configured and the pipeline applies its writes) about the pairs the rules"
        " leave unsettled")
    llm_min_similarity: float = Range(
        0.55, 0.0, 1.0, "the least cosine of a pair the LLM is asked about")
    llm_max_pairs: int = Range(20, 0, 10000, "pairs the LLM is asked about per run at most;"
                                             " each call counts against extraction.hourlyBudget")
    replay: ReplayConfig = Field(default_factory=ReplayConfig)
