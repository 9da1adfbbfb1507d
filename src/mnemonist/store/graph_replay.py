"""The SQL of sleep replay (`graph/replay.py`): drawing random pairs of memories by seq, the
relation check between their entities, the edges it proposes and what feedback did to them."""

from __future__ import annotations

import sqlite3

from mnemonist.model.memory import Memory
from mnemonist.store import duplicates

#: the reason and type of a relation sleep replay proposes (`store.graph.REASONS`)
REASON = "replay"
RELATION_TYPE = "related_to"

_LIVE = duplicates.sweepable_where()


def max_seq(conn: sqlite3.Connection) -> int | None:
    """The highest memory seq (None when there is no memory)."""
    top = conn.execute("SELECT MAX(seq) FROM memories").fetchone()[0]
    return int(top) if top else None


def first_sweepable_from(conn: sqlite3.Connection, start: int,
                         partner: Memory | None = None) -> Memory | None:
    """The first sweepable memory with seq >= start (with `partner`: another memory of its
    project and owner), wrapping round to the lowest seq when none is at or after it. Without
    a partner the look-up walks the primary key from `start` (NOT INDEXED: an index leading
    with `is_deleted` would sort every live row); with one `memories_project` serves it."""
    where, args = (None, ()) if partner is None else (
        "m.seq != ? AND m.project IS ? AND m.agent_id IS ? AND m.user_id IS ?",
        (partner.seq, partner.project, partner.agent_id, partner.user_id))
    source = "memories m" if where else "memories m NOT INDEXED"
    for lo in (start, 0):
        row = conn.execute(
            f"SELECT * FROM {source} WHERE m.seq >= ? AND {_LIVE} AND {where or '1'}"
            " ORDER BY m.seq LIMIT 1", (lo, *args)).fetchone()
        if row is not None:
            return Memory.from_row(row)
    return None


def any_relation_between(conn: sqlite3.Connection, a: list[str], b: list[str]) -> bool:
    """Whether any relation joins an entity of `a` and one of `b`, either way."""
    ma, mb = ",".join("?" * len(a)), ",".join("?" * len(b))
    return conn.execute(
        f"SELECT 1 FROM relations WHERE (source_entity_id IN ({ma}) AND target_entity_id IN"
        f" ({mb})) OR (source_entity_id IN ({mb}) AND target_entity_id IN ({ma})) LIMIT 1",
        [*a, *b, *b, *a]).fetchone() is not None


def propose_edge(conn: sqlite3.Connection, relation_id: str, source: str, target: str,
                 confidence: float, note: str, at: str) -> bool:
    """Insert the replay edge unless a relation of its type joins the two already."""
    return conn.execute(
        "INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
        " strength, mentions, confidence, reason, note, created_at, updated_at)"
        f" VALUES (?, ?, ?, '{RELATION_TYPE}', 1.0, 1, ?, '{REASON}', ?, ?, ?)"
        " ON CONFLICT(source_entity_id, target_entity_id, relation_type) DO NOTHING",
        (relation_id, source, target, confidence, note, at, at)).rowcount > 0


def edge_feedback_counts(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """(replay edges now, those feedback lowered, those feedback raised)."""
    row = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN boost < 0 THEN 1 ELSE 0 END), 0),"
        " COALESCE(SUM(CASE WHEN boost > 0 THEN 1 ELSE 0 END), 0) FROM relations"
        " WHERE reason = ?", (REASON,)).fetchone()
    return int(row[0]), int(row[1]), int(row[2])
