"""Post-fusion dampening (document 000), three independently toggled stages.

1. Gravity: a result that arrived through a semantic path (vector or hybrid) with a score
   above 0.3 but shares no query term with its own text is a "semantic hallucination":
   its score × gravityPenalty. A memory whose hints matched the query is exempt: its
   questions share the query's terms, which is the point of prospective indexing.
2. Hub: a result whose linked entities are all high-degree hubs (mention count above the
   hubPercentile of all entities) × hubPenalty — popular entities must not crowd out the
   specific ones. No-op until the pipeline has linked entities.
3. Resolution: decisions and constraints × resolutionBoost; other memories with a temporal
   anchor (an ISO date or a month name), at least 50 characters long, × half that boost.

Terms are compared by their first five letters: a cheap stem, so that "deploy" and
"deployed" overlap the way FTS5's porter tokenizer sees them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection

from mnemonist.model.config import DampeningConfig
from mnemonist.text.tokens import content_tokens

MONTH = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|"
    r"december)\b|\b\d{4}-\d{2}-\d{2}\b",
    re.IGNORECASE,
)
RESOLVED_TYPES = {"decision", "constraint"}


def _stems(text: str) -> set[str]:
    return {t[:5] for t in content_tokens(text)}


def gravity(hits: list, query: str, penalty: float, exempt: Collection[int] = ()) -> None:
    """`exempt`: seqs of memories that share the query's terms elsewhere (their hints)."""
    terms = _stems(query)
    if not terms:
        return
    for h in hits:
        if (h.source != "keyword" and h.score > 0.3
                and not (exempt and h.memory.seq in exempt)
                and not (terms & _stems(h.memory.content))):
            h.score *= penalty


def resolution(hits: list, boost: float) -> None:
    for h in hits:
        m = h.memory
        if m.type in RESOLVED_TYPES:
            h.score *= boost
        elif len(m.content) >= 50 and MONTH.search(m.content):
            h.score *= 1.0 + (boost - 1.0) * 0.5


def hub(conn: sqlite3.Connection, hits: list, percentile: float, penalty: float) -> None:
    try:
        counts = [r[0] for r in conn.execute("SELECT mentions FROM entities")]
    except sqlite3.OperationalError:
        return  # no graph tables
    if not counts or not hits:
        return
    counts.sort()
    threshold = counts[int(percentile * (len(counts) - 1))]  # the P-th percentile (lower)
    ids = [h.memory.id for h in hits]
    marks = ",".join("?" * len(ids))
    linked: dict[str, list[int]] = {}
    for memory_id, mentions in conn.execute(
        f"SELECT mm.memory_id, e.mentions FROM memory_entity_mentions mm"
        f" JOIN entities e ON e.id = mm.entity_id WHERE mm.memory_id IN ({marks})",
        ids,
    ):
        linked.setdefault(memory_id, []).append(mentions)
    for h in hits:
        mentions = linked.get(h.memory.id)
        if mentions and all(n > threshold for n in mentions):
            h.score *= penalty


def dampen(
    conn: sqlite3.Connection, hits: list, query: str, cfg: DampeningConfig,
    *, hint_matched: Collection[int] = (),
) -> None:
    """Apply the enabled stages in order; the caller re-sorts."""
    if cfg.gravity_enabled:
        gravity(hits, query, cfg.gravity_penalty, hint_matched)
    if cfg.hub_enabled:
        hub(conn, hits, cfg.hub_percentile, cfg.hub_penalty)
    if cfg.resolution_enabled:
        resolution(hits, cfg.resolution_boost)
