"""The SQL of what use and ratings teach (`service/graph_feedback.py`): the ratings
(`memory_feedback`), the session-end scores (`session_scores`), and the aspect weights and edge
confidences they move."""

from __future__ import annotations

import sqlite3


def shift_aspects(conn: sqlite3.Connection, memory_id: str, delta: float, lo: float, hi: float,
                  now: str) -> int:
    """Move the aspects the memory's attributes are filed under by `delta`, within [lo, hi];
    a raise confirms them (time decay counts from now). Returns how many moved."""
    return conn.execute(
        "UPDATE entity_aspects SET weight = MIN(?, MAX(?, weight + ?)), updated_at = ?,"
        " confirmed_at = CASE WHEN ? > 0 THEN ? ELSE confirmed_at END"
        " WHERE id IN (SELECT aspect_id FROM entity_attributes WHERE memory_id = ?"
        " AND aspect_id IS NOT NULL)",
        (hi, lo, delta, now, delta, now, memory_id)).rowcount


def shift_edges(conn: sqlite3.Connection, memory_id: str, delta: float, lo: float,
                now: str) -> int:
    """Move the confidence of the edges between the memory's entities (and of the replay
    edges proposed from it) by `delta`, within [lo, 1], keeping what feedback added in
    `boost`; stated and inferred edges are not moved. Returns how many moved."""
    return conn.execute(
        "UPDATE relations SET boost = boost + MIN(1.0, MAX(:lo, confidence + :d))"
        " - confidence, confidence = MIN(1.0, MAX(:lo, confidence + :d)),"
        " updated_at = :now, confirmed_at = CASE WHEN :d > 0 THEN :now"
        " ELSE confirmed_at END WHERE reason NOT IN ('user-stated', 'inferred')"
        " AND ((source_entity_id IN (SELECT entity_id FROM"
        " memory_entity_mentions WHERE memory_id = :m) AND target_entity_id IN"
        " (SELECT entity_id FROM memory_entity_mentions WHERE memory_id = :m))"
        # a replay edge: its note names the two memories it was proposed from
        " OR (reason = 'replay' AND instr(note, :m) > 0))",
        {"lo": lo, "d": delta, "now": now, "m": memory_id}).rowcount


def record_rating(conn: sqlite3.Connection, memory_id: str, prompt_key: str | None,
                  session_key: str | None, helpful: bool, now: str) -> None:
    conn.execute(
        "INSERT INTO memory_feedback (memory_id, prompt_key, session_key, helpful,"
        " created_at) VALUES (?, ?, ?, ?, ?)",
        (memory_id, prompt_key, session_key, int(helpful), now))


def unhelpful_count(conn: sqlite3.Connection, prompt_key: str, memory_id: str) -> int:
    """How often the memory was rated unhelpful for this prompt."""
    return int(conn.execute(
        "SELECT COUNT(*) FROM memory_feedback WHERE prompt_key = ? AND memory_id = ?"
        " AND helpful = 0", (prompt_key, memory_id)).fetchone()[0])


def rated_unhelpful(conn: sqlite3.Connection, prompt_key: str, limit: int) -> set[str]:
    """Memories rated unhelpful `limit` times or more for this prompt."""
    rows = conn.execute(
        "SELECT memory_id FROM memory_feedback WHERE prompt_key = ? AND helpful = 0"
        " GROUP BY memory_id HAVING COUNT(*) >= ?", (prompt_key, limit))
    return {r[0] for r in rows}


def session_scored(conn: sqlite3.Connection, session_key: str) -> bool:
    return conn.execute("SELECT 1 FROM session_scores WHERE session_key = ?",
                        (session_key,)).fetchone() is not None


def injected_memories(conn: sqlite3.Connection,
                      session_key: str) -> list[tuple[str, int]]:
    """(memory id, later hits) of each memory the session was given."""
    return [(r[0], r[1]) for r in conn.execute(
        "SELECT memory_id, fts_hit_count FROM session_memories WHERE session_key = ?"
        " AND was_injected = 1", (session_key,)).fetchall()]


def record_session_score(conn: sqlite3.Connection, session_key: str, score: float | None,
                         injected: int, used: int, now: str) -> None:
    conn.execute(
        "INSERT INTO session_scores (session_key, score, injected, used, scored_by,"
        " created_at) VALUES (?, ?, ?, ?, 'hits', ?)",
        (session_key, score, injected, used, now))
