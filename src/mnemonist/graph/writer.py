"""Graph persistence (the knowledge graph): after the main transaction commits,
in a transaction of its own, so a failure here never reverts the facts.

Every triple's source and target become entities (matched by canonical name in the
memory's scope: its project and owners), the triple a
relation, and both entities are linked to the memory the triple came from.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Protocol

from mnemonist.store import graph
from mnemonist.store.db import Database

log = logging.getLogger(__name__)


class Triple(Protocol):
    """A (source, relationship, target) triple the extraction LLM read, with its confidence
    (`pipeline.extraction.ExtractedEntity`)."""

    @property
    def source(self) -> str: ...
    @property
    def relationship(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def confidence(self) -> float: ...


def persist_entities(
    db: Database, memory_id: str, entities: Sequence[Triple]
) -> tuple[dict[str, Any], str | None]:
    """(stats, None) or (partial stats, warning); never raises."""
    stats = graph.GraphWriteStats()
    if not entities:
        return asdict(stats), None
    try:
        with db.write_tx() as conn:
            scope = graph.memory_scope(conn, memory_id)  # the memory's project and owners
            for e in entities:
                source = graph.upsert_entity(conn, e.source, stats, scope=scope)
                target = graph.upsert_entity(conn, e.target, stats, scope=scope)
                reason = "extracted" if e.confidence >= 0.5 else "llm-uncertain"
                graph.upsert_relation(conn, source, target, e.relationship.lower(),
                                      e.confidence, stats, reason)
                graph.link_mention(conn, memory_id, source, e.source, e.confidence, stats)
                graph.link_mention(conn, memory_id, target, e.target, e.confidence, stats)
    except Exception as exc:  # non-fatal by design: the facts are already committed
        log.warning("graph persistence failed for memory %s: %s", memory_id, exc)
        return asdict(graph.GraphWriteStats()), f"graph persistence failed: {exc}"
    return asdict(stats), None
