"""The retention sweep's statements (pipeline/retention.py): the expired tombstones and what
only they used (graph links, orphan entities, embeddings), vectors and learned-sparse rows
nothing points to any more, and the rows of the logs kept for a number of days. Each takes
the sweep's write transaction and removes at most `limit` rows a call; the counts returned are
rows removed."""

from __future__ import annotations

import sqlite3

from mnemonist.store import expiry
from mnemonist.store.memories import LIVE, hash_in_use


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone() is not None


def expired_tombstones(conn: sqlite3.Connection, cutoff: str,
                       limit: int) -> list[tuple[int, str, str]]:
    """(seq, id, content_hash) of the memories deleted before `cutoff`, oldest first; not the
    events the expiry archived (store/expiry.py: they are kept)."""
    return [
        (r[0], r[1], r[2])
        for r in conn.execute(
            "SELECT seq, id, content_hash FROM memories WHERE is_deleted = 1"
            f" AND deleted_at < ? AND NOT {expiry.ARCHIVED} ORDER BY deleted_at LIMIT ?",
            (cutoff, limit),
        )
    ]


def orphan_entities(conn: sqlite3.Connection, limit: int) -> list[str]:
    """Entities no memory mentions any more, but not one a person or agent stated a relation
    of (it stands without memories)."""
    return [r[0] for r in conn.execute(
        "SELECT id FROM entities e WHERE mentions <= 0 AND NOT EXISTS (SELECT 1"
        " FROM relations r WHERE r.reason = 'user-stated' AND e.id IN"
        " (r.source_entity_id, r.target_entity_id)) LIMIT ?", (limit,)
    )]


def delete_relations_of(conn: sqlite3.Connection, entity_id: str) -> None:
    conn.execute(
        "DELETE FROM relations WHERE source_entity_id = ?"
        " OR target_entity_id = ?", (entity_id, entity_id),
    )


def delete_entity(conn: sqlite3.Connection, entity_id: str) -> None:
    conn.execute("DELETE FROM entities WHERE id = ?", (entity_id,))


def delete_tombstone_embeddings(conn: sqlite3.Connection, content_hash: str,
                                tombstone_cutoff: str) -> int:
    """The embeddings of `content_hash` when only tombstones older than the cutoff used it: a
    live memory, or any other one still kept, may share the hash (each probe goes by its own
    index: hash_in_use)."""
    return conn.execute(
        "DELETE FROM embeddings WHERE content_hash = ? AND NOT EXISTS"
        f" (SELECT 1 FROM memories WHERE content_hash = ? AND {LIVE})"
        " AND NOT EXISTS (SELECT 1 FROM memories WHERE content_hash = ?"
        f" AND NOT ({LIVE}) AND (is_deleted = 0 OR deleted_at >= ?"
        f" OR {expiry.ARCHIVED}))",
        (content_hash, content_hash, content_hash, tombstone_cutoff),
    ).rowcount


def delete_orphan_vectors(conn: sqlite3.Connection, limit: int) -> int:
    """Vectors nothing points to any more (context texts that changed or went away)."""
    return conn.execute(
        "DELETE FROM embeddings WHERE content_hash IN (SELECT e.content_hash FROM"
        f" embeddings e WHERE NOT {hash_in_use('e.content_hash')} AND NOT EXISTS"
        " (SELECT 1 FROM memory_context c WHERE c.text_hash = e.content_hash) LIMIT ?)",
        (limit,),
    ).rowcount


def delete_orphan_sparse_terms(conn: sqlite3.Connection, limit: int) -> int:
    """Learned-sparse expansions of memories no longer there."""
    return conn.execute(
        "DELETE FROM sparse_terms WHERE seq IN (SELECT s.seq FROM sparse_terms s"
        " WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.seq = s.seq) LIMIT ?)",
        (limit,),
    ).rowcount


def delete_history_before(conn: sqlite3.Connection, cutoff: str, limit: int) -> int:
    return conn.execute(
        "DELETE FROM memory_history WHERE rowid IN (SELECT rowid FROM"
        " memory_history WHERE created_at < ? LIMIT ?)", (cutoff, limit)).rowcount


def delete_completed_jobs_before(conn: sqlite3.Connection, cutoff: str, limit: int) -> int:
    return conn.execute(
        "DELETE FROM memory_jobs WHERE id IN (SELECT id FROM memory_jobs"
        " WHERE status = 'completed' AND completed_at < ? LIMIT ?)", (cutoff, limit)).rowcount


def delete_dead_jobs_before(conn: sqlite3.Connection, cutoff: str, limit: int) -> int:
    return conn.execute(
        "DELETE FROM memory_jobs WHERE id IN (SELECT id FROM memory_jobs"
        " WHERE status = 'dead' AND failed_at < ? LIMIT ?)", (cutoff, limit)).rowcount


def delete_training_pairs_before(conn: sqlite3.Connection, cutoff: str, limit: int) -> int:
    return conn.execute(
        "DELETE FROM predictor_pairs WHERE id IN (SELECT"
        " id FROM predictor_pairs WHERE created_at < ? LIMIT ?)", (cutoff, limit)).rowcount
