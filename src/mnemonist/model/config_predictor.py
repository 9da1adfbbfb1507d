"""`predictor.*`: the learned ranker (search/relevance.py) and what it learns from a home's
feedback (search/adaptation.py); docs/ranking.md#the-learned-ranker."""

from __future__ import annotations

from pydantic import Field

from mnemonist.model.config_fields import Range, SnakeModel


class PredictorConfig(SnakeModel):
    """Recall's best candidates reordered by the learned ranker's probability that each one
    answers the query; the home's feedback adapts it, behind a guard."""

    enabled: bool = Field(
        default=True,
        description="order recall's best candidates by the learned ranker (false: the fused"
        " score's order; relevance is still computed)",
    )
    depth: int = Range(40, 10, 200, "how many of the best fused candidates the ranker reorders")
    adapt: bool = Field(
        default=True,
        description="learn from this home's feedback: its own trees on top of the shipped"
        " ranker, used only while they beat it on held-back feedback",
    )
    min_pairs: int = Range(40, 10, 100000, "training pairs before the home's ranker is fitted")
    min_held: int = Range(30, 4, 100000, "held-back pairs the home's ranker is judged on")
    local_trees: int = Range(30, 1, 500, "trees the home's ranker adds to the shipped ones")
    min_gain: float = Range(
        0.05, 0.0, 0.5, "the home's ranker is used when its held-back log loss is at least this"
        " share below the shipped ranker's")
    min_trust: float = Range(
        0.55, 0.0, 1.0, "the home's feedback is used only when the shipped ranker agrees with"
        " it at least this often (AUC over its pairs): inverted or random ratings are not")
    retrain_every: int = Range(20, 1, 100000, "new pairs before the home's ranker is refitted")
    feedback_weight: float = Range(
        0.8, 0.0, 1.0, "how far a rating moves a memory's relevance for the same question"
        " asked again, in any words (0: off)")
    feedback_similarity: float = Range(
        0.85, 0.5, 1.0, "query cosine from which a question counts as asked before")
