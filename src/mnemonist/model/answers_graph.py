"""The shapes of the knowledge graph's answers (`Graph`: entities, neighbourhoods, walks,
impact, relations, the overview and diagnostics) and of feedback and the learned ranker
(`Feedback`). Keys are snake_case (model/answers.py)."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict

from mnemonist.model.answers_curation import PrinciplesReport


class EntityItem(TypedDict):
    """An entity of the graph, in its scope (project, and an owner when private)."""

    id: str
    name: str
    type: str
    mentions: int
    community: int | None
    project: str | None
    agent_id: str | None
    user_id: str | None


class EntityCount(EntityItem):
    """An entity with the number of memories (passing the filters) that name it."""

    memories: int


class EntityListAnswer(TypedDict):
    """Entities, most named first (`Graph.list_entities`)."""

    entities: list[EntityCount]
    total: int
    limit: int
    offset: int


class EdgeItem(TypedDict):
    """A relation between two entities; `counted_as` when a walk weighed it otherwise
    (an association counts at half)."""

    id: str
    source: str
    target: str
    type: str
    reason: str
    confidence: float
    mentions: int
    note: NotRequired[str]
    counted_as: NotRequired[float]


class GraphMemory(TypedDict):
    """A memory as the graph's answers show it (its text clipped)."""

    id: str
    content: str
    type: str
    importance: float


class EntityAttribute(TypedDict):
    """What a memory states about an entity, and its aspect."""

    memory_id: str
    kind: str
    content: str
    importance: float
    aspect: str | None
    source: str | None


class EntityRelation(EdgeItem):
    """A relation of an entity, with the entity at its other end."""

    entity: EntityItem


class EntityAnswer(TypedDict):
    """One entity (`Graph.get_entity`): the memories naming it, its aspects, what memories
    state about it, and its relations."""

    entity: EntityItem
    memories_count: int
    memories: list[GraphMemory]
    #: id, name, weight, updated_at: heaviest first
    aspects: list[dict[str, Any]]
    attributes: list[EntityAttribute]
    relations: list[EntityRelation]


class WalkLimits(TypedDict):
    """The bounds a walk of the graph ran within."""

    min_confidence: float
    max_branching: int
    max_paths: int
    max_hops: int
    timeout_ms: int


class NeighbourhoodAnswer(TypedDict):
    """Nodes and edges around an entity, for drawing (`Graph.neighbourhood`)."""

    center: str
    nodes: list[EntityItem]
    edges: list[EdgeItem]
    paths: int
    timed_out: bool
    limited_by: list[str]
    limits: WalkLimits


class ExpandNeighbour(TypedDict):
    """An entity a walk reached, how, and the memories that support its last edge."""

    entity: EntityItem | None
    hops: int
    confidence: float
    via: list[str | None]
    relation: EdgeItem
    supporting_memory_ids: list[str]
    memories: list[GraphMemory]


class ExpandAnswer(TypedDict):
    """What a walk from an entity or a memory found, within a token budget
    (`Graph.knowledge_expand`)."""

    entities: list[EntityItem]
    memory: GraphMemory | None
    memories: list[GraphMemory]
    #: the decisions standing on the start entities (constraint attributes)
    constraints: list[dict[str, Any]]
    neighbours: list[ExpandNeighbour]
    tokens: int
    max_tokens: int
    truncated: bool
    reached: int
    paths: int
    timed_out: bool
    limited_by: list[str]
    limits: WalkLimits


class SessionGraphMemory(GraphMemory):
    """A memory a session was given or hit, and how it was used."""

    injected: bool
    hits: int
    relevance_score: float | None


class SessionEntity(EntityItem):
    """An entity the session's memories name, with how many of them do."""

    session_memories: int


#: a strong neighbour of one of the session's entities; `from` (a keyword in Python, hence
#: this spelling) names the session's entity it was reached from
SessionNeighbour = TypedDict("SessionNeighbour", {
    "entity": EntityItem | None,
    "from": str,
    "relation": EdgeItem,
    "memories": list[GraphMemory],
})
SessionNeighbour.__doc__ = "A strong neighbour of one of the session's entities."


class ExpandSessionAnswer(TypedDict):
    """What a session was given and used, the entities those memories name and their
    strongest neighbours, within the token budget (`Graph.knowledge_expand_session`)."""

    session_key: str
    memories: list[SessionGraphMemory]
    entities: list[SessionEntity]
    neighbours: list[SessionNeighbour]
    tokens: int
    max_tokens: int
    truncated: bool
    timed_out: bool


class ImpactItem(TypedDict):
    """An entity that depends on the one asked about, and through which path."""

    entity: EntityItem | None
    tier: str
    depth: int
    confidence: float
    path: list[str | None]
    edges: list[EdgeItem]
    supporting_memory_ids: list[str]


class ImpactAnswer(TypedDict):
    """Who depends on an entity, tiered by path confidence (`Graph.graph_impact`): tiers
    will_break, likely_affected, may_need_testing."""

    entity: EntityItem
    tiers: dict[str, list[ImpactItem]]
    affected: int
    paths: int
    timed_out: bool
    limited_by: list[str]
    limits: WalkLimits


class RelationView(TypedDict):
    """A relation with both its entities."""

    id: str
    source: EntityItem
    target: EntityItem
    type: str
    reason: str
    confidence: float
    note: str | None
    created_at: str
    updated_at: str


class RelationStated(TypedDict):
    """A relation stated (`Graph.relate`): new, or an inferred edge promoted."""

    relation: RelationView
    created: bool
    replaced_reason: str | None
    entities_created: int


class RelationRetracted(TypedDict):
    """A stated relation taken back (`Graph.retract_relation`, `relate` with retract)."""

    retracted: str
    restored_reason: str | None
    inferred_removed: int
    entities_removed: int


class OverviewCommunity(TypedDict):
    """A community of the overview: its size and best-known members."""

    id: int
    size: int
    members: list[str]


class GraphOverview(TypedDict):
    """The graph as the dashboard draws it (`Graph.graph_overview`)."""

    #: an entity: id, name, type, project, mentions, community
    nodes: list[dict[str, Any]]
    #: source, target, type, weight
    edges: list[dict[str, Any]]
    communities: list[OverviewCommunity]
    projects: list[str]


class GraphDiagnostics(TypedDict):
    """Sizes of the graph, communities, entity health, bridges, sleep replay, principles and
    feedback counts (`Graph.graph_diagnostics`)."""

    project: str | None
    entities: int
    linked_entities: int
    relations: int
    relations_by_reason: dict[str, int]
    relations_by_type: dict[str, int]
    attributes_by_kind: dict[str, int]
    aspects: int
    modularity: float | None
    communities_computed_at: str | None
    community_count: int
    communities: list[dict[str, Any]]
    entity_health: dict[str, Any]
    bridges: list[dict[str, Any]]
    sleep_replay: dict[str, Any]
    principles: PrinciplesReport | None
    feedback: dict[str, int]


class FeedbackAnswer(TypedDict):
    """What rating a memory answers (`Feedback.memory_feedback`)."""

    memory_id: str
    helpful: bool
    prompt_key: str | None
    training_pair: str | None
    unhelpful_for_prompt: int
    suppressed_for_prompt: bool
    aspects_updated: int
    edges_updated: int


class SessionFeedback(TypedDict):
    """What the session-end learning pass did (`Feedback.session_feedback`)."""

    injected: int
    used: int
    score: float | None
    training_pairs: int
    aspects_reinforced: int
    edges_reinforced: int
    aspects_decayed: int
    continuity_job: str | None
    #: what the co-use pass learned (entities, pairs, edges created, refreshed, displaced);
    #: None when it is off
    desire_paths: dict[str, int] | None


class PredictorStatus(TypedDict):
    """The learned ranker in use and its training pairs (`Feedback.predictor_status`)."""

    ranker: str
    pairs: dict[str, int]
    new_pairs: int
    #: the guard's judgement of the home's trees
    check: dict[str, Any] | None
    trained_at: str | None
    feature_set: str


class PredictorTrained(TypedDict):
    """A refit of the home's trees (`search.HomeRanker.train`)."""

    trained: bool
    reason: NotRequired[str]
    check: NotRequired[dict[str, Any]]
    trained_at: NotRequired[str]


class PredictorTrainAnswer(PredictorTrained):
    """A refit and the ranker's status after it (`Feedback.predictor_train`)."""

    status: PredictorStatus
