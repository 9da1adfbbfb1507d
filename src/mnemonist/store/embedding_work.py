"""The embedding work around `embeddings` (store/embeddings.py holds the vectors): which
memories and context texts still lack a vector of the model (the background embedder, the
`reembed` repair), what a stored vector marks on its memory (`memories.embedding_model`), and
the vectors an index is filled from once they are stored."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from mnemonist.store.memories import hash_in_use

# -- memories without a vector of the model --------------------------------------------------


def any_unembedded(conn: sqlite3.Connection, model: str) -> bool:
    """Whether a live memory lacks a vector of `model` (or was embedded with another)."""
    return conn.execute(
        "SELECT 1 FROM memories m LEFT JOIN embeddings e"
        " ON e.content_hash = m.content_hash AND e.model = ?"
        " WHERE m.is_deleted = 0 AND (e.content_hash IS NULL OR m.embedding_model IS NOT ?)"
        " LIMIT 1",
        (model, model),
    ).fetchone() is not None


def unembedded_from(conn: sqlite3.Connection, model: str, start: int, limit: int) -> list[int]:
    """Seqs from `start` on, in seq order, of the live memories `any_unembedded` looks for."""
    return [r[0] for r in conn.execute(
        "SELECT m.seq FROM memories m LEFT JOIN embeddings e"
        " ON e.content_hash = m.content_hash AND e.model = ?"
        " WHERE m.seq >= ? AND m.is_deleted = 0"
        " AND (e.content_hash IS NULL OR m.embedding_model IS NOT ?)"
        " ORDER BY m.seq LIMIT ?",
        (model, start, model, limit),
    )]


def unembedded_newest_first(conn: sqlite3.Connection, model: str, limit: int) -> list[int]:
    """Seqs of the live memories `any_unembedded` looks for, the last changed first."""
    rows = conn.execute(
        "SELECT m.seq FROM memories m LEFT JOIN embeddings e"
        " ON e.content_hash = m.content_hash AND e.model = ?"
        " WHERE m.is_deleted = 0 AND (e.content_hash IS NULL OR m.embedding_model IS NOT ?)"
        " ORDER BY m.updated_at DESC LIMIT ?",
        (model, model, limit),
    ).fetchall()
    return [r[0] for r in rows]


def embedded_seqs(conn: sqlite3.Connection, model: str) -> Iterator[int]:
    """Seqs of the live memories embedded with `model` and holding its vector, read as they
    are iterated."""
    return (r[0] for r in conn.execute(
        "SELECT m.seq FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash"
        " AND e.model = ? WHERE m.is_deleted = 0 AND m.embedding_model = ?",
        (model, model),
    ))


def deleted_seqs(conn: sqlite3.Connection) -> Iterator[int]:
    """Seqs of the deleted memories, read as they are iterated."""
    return (r[0] for r in conn.execute("SELECT seq FROM memories WHERE is_deleted = 1"))


def to_embed(conn: sqlite3.Connection, seqs: list[int]) -> list[Any]:
    """Rows (seq, content, content_hash, emodel: the model of a stored vector of that hash,
    one row per model, NULL when none) of those of `seqs` still live."""
    marks = ",".join("?" * len(seqs))
    return conn.execute(
        f"SELECT m.seq, m.content, m.content_hash, e.model AS emodel FROM memories m"
        f" LEFT JOIN embeddings e ON e.content_hash = m.content_hash"
        f" WHERE m.seq IN ({marks}) AND m.is_deleted = 0",
        seqs,
    ).fetchall()


def hash_used(conn: sqlite3.Connection, content_hash: str) -> bool:
    """Whether a memory row (live or tombstone) still has this content hash: not purged."""
    return bool(conn.execute(f"SELECT {hash_in_use('?')}",
                             (content_hash, content_hash)).fetchone()[0])


def embedded_rows(conn: sqlite3.Connection, seqs: list[int], model: str) -> list[Any]:
    """Rows (seq, project, content_hash, superseded_at, vector, dimensions) of those of `seqs`
    still live that have a vector of `model`."""
    marks = ",".join("?" * len(seqs))
    return conn.execute(
        f"SELECT m.seq, m.project, m.content_hash, m.superseded_at, e.vector,"
        f" e.dimensions FROM memories m"
        f" JOIN embeddings e ON e.content_hash = m.content_hash AND e.model = ?"
        f" WHERE m.seq IN ({marks}) AND m.is_deleted = 0",
        [model, *seqs],
    ).fetchall()


# -- the mark a stored vector leaves ---------------------------------------------------------


def mark_embedded(conn: sqlite3.Connection, seq: int, model: str) -> None:
    conn.execute("UPDATE memories SET embedding_model = ? WHERE seq = ?", (model, seq))


def mark_embedded_many(conn: sqlite3.Connection, model: str, seqs: list[int]) -> None:
    conn.executemany(
        "UPDATE memories SET embedding_model = ? WHERE seq = ?",
        [(model, seq) for seq in seqs],
    )


def mark_embedded_by_id(conn: sqlite3.Connection, memory_id: str, model: str) -> None:
    conn.execute("UPDATE memories SET embedding_model = ? WHERE id = ?", (model, memory_id))


def dimensions_of(conn: sqlite3.Connection, model: str) -> int | None:
    """The dimensions of a stored vector of `model`; None before the first."""
    row = conn.execute(
        "SELECT dimensions FROM embeddings WHERE model = ? LIMIT 1", (model,)
    ).fetchone()
    return row[0] if row else None


# -- context texts ---------------------------------------------------------------------------


def unembedded_context(conn: sqlite3.Connection, model: str,
                       limit: int) -> list[tuple[int, str, str]]:
    """(seq, text, text_hash) of live memories whose context text has no vector yet."""
    rows = conn.execute(
        "SELECT c.seq, c.text, c.text_hash FROM memory_context c"
        " JOIN memories m ON m.seq = c.seq"
        " LEFT JOIN embeddings e ON e.content_hash = c.text_hash AND e.model = ?"
        " WHERE m.is_deleted = 0 AND e.content_hash IS NULL LIMIT ?",
        (model, limit),
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def context_text_used(conn: sqlite3.Connection, text_hash: str) -> bool:
    """Whether the text is still some memory's context."""
    return conn.execute("SELECT 1 FROM memory_context WHERE text_hash = ? LIMIT 1",
                        (text_hash,)).fetchone() is not None


def current_context_vectors(conn: sqlite3.Connection, seqs: list[int],
                            model: str) -> list[Any]:
    """Rows (seq, project, vector, dimensions) of the current context vectors of those of
    `seqs` live and not superseded: the text read now, whatever it was when embedded."""
    marks = ",".join("?" * len(seqs))
    return conn.execute(
        f"SELECT c.seq, m.project, e.vector, e.dimensions FROM memory_context c"
        f" JOIN memories m ON m.seq = c.seq"
        f" JOIN embeddings e ON e.content_hash = c.text_hash AND e.model = ?"
        f" WHERE c.seq IN ({marks}) AND m.is_deleted = 0 AND m.superseded_at IS NULL",
        [model, *seqs],
    ).fetchall()


def visible_page(conn: sqlite3.Connection, model: str, visible: str, args: list[Any],
                 limit: int, offset: int) -> tuple[int, list[Any]]:
    """(how many live memories `visible` allows have a vector of `model`, one page of them in
    seq order: rows of id, content, content_hash, model, dimensions, vector)."""
    base = (" FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash"
            f" WHERE m.is_deleted = 0 AND e.model = ? AND {visible}")
    total = conn.execute("SELECT COUNT(*)" + base, (model, *args)).fetchone()[0]
    rows = conn.execute(
        "SELECT m.id, m.content, m.content_hash, e.model, e.dimensions, e.vector" + base
        + " ORDER BY m.seq LIMIT ? OFFSET ?",
        (model, *args, limit, offset),
    ).fetchall()
    return total, rows
