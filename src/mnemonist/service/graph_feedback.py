"""What use and ratings teach: memory feedback, the session-end learning pass and the
learned ranker's training pairs (service/predictor.py).

- `memory_feedback` (HTTP and the MCP tool): an agent marks a memory helpful or not, for a
  prompt. A memory rated unhelpful `unhelpfulLimit` times (default 2) for the same prompt
  (whitespace and case aside) is not injected for that prompt again. Helpful raises the
  confidence of the edges between the memory's entities (and of the sleep-replay edges
  proposed from it: their note names it) and the weight of its aspects; unhelpful lowers
  them by the same steps.
- At session end, the memories the session was given (`session_memories.was_injected`) are
  split by use: a memory the session's later prompts surfaced again (`fts_hit_count` of 2 or
  more: its injection counted one) was used, and reinforces its edges and aspects; one never
  surfaced again lets its aspects decay by `decay`. Weights stay in [minWeight, maxWeight],
  edge confidence in [0.05, 1]. A `session_scores` row records injected, used and their ratio
  (`scored_by: hits`); a session is learned from once. With an LLM configured, a
  `continuity_score` job then rates each injected memory's relevance to the session's prompts
  (`pipeline/continuity_score.py`).

A co-occurrence edge's confidence is recomputed from its count whenever the count changes, so
feedback on such an edge holds until the pair's next memory.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.model.graph import FeedbackRequest
from mnemonist.model.memory import utcnow
from mnemonist.pipeline import continuity_score
from mnemonist.service.errors import NotFound
from mnemonist.service.predictor import PredictorOps, prompt_key
from mnemonist.store import jobs, memories

MIN_EDGE_CONFIDENCE = 0.05
USED_HITS = 2


def _shift(conn: sqlite3.Connection, memory_ids: list[str], *, aspect: float, edge: float,
           lo: float, hi: float, now: str) -> tuple[int, int]:
    """Move the aspects of these memories' attributes by `aspect` and the edges between each
    memory's entities by `edge`. Returns (aspects, edges) changed."""
    aspects = edges = 0
    for memory_id in memory_ids:
        if aspect:
            # a raise confirms the aspect: time decay counts from now (graph_upkeep)
            aspects += conn.execute(
                "UPDATE entity_aspects SET weight = MIN(?, MAX(?, weight + ?)), updated_at = ?,"
                " confirmed_at = CASE WHEN ? > 0 THEN ? ELSE confirmed_at END"
                " WHERE id IN (SELECT aspect_id FROM entity_attributes WHERE memory_id = ?"
                " AND aspect_id IS NOT NULL)",
                (hi, lo, aspect, now, aspect, now, memory_id)).rowcount
        if edge:
            # `boost`: what feedback added on top of the evidence, the part time decay takes
            # back; stated and inferred edges have fixed confidences and are not moved
            edges += conn.execute(
                "UPDATE relations SET boost = boost + MIN(1.0, MAX(:lo, confidence + :d))"
                " - confidence, confidence = MIN(1.0, MAX(:lo, confidence + :d)),"
                " updated_at = :now, confirmed_at = CASE WHEN :d > 0 THEN :now"
                " ELSE confirmed_at END WHERE reason NOT IN ('user-stated', 'inferred')"
                " AND ((source_entity_id IN (SELECT entity_id FROM"
                " memory_entity_mentions WHERE memory_id = :m) AND target_entity_id IN"
                " (SELECT entity_id FROM memory_entity_mentions WHERE memory_id = :m))"
                # a replay edge: its note names the two memories it was proposed from
                " OR (reason = 'replay' AND instr(note, :m) > 0))",
                {"lo": MIN_EDGE_CONFIDENCE, "d": edge, "now": now, "m": memory_id}).rowcount
    return aspects, edges


class Feedback(PredictorOps):
    """Feedback: ratings, what sessions used, and the ranker's training pairs."""

    def memory_feedback(self, memory_id: str, req: FeedbackRequest) -> dict[str, Any]:
        cfg = self.core.config.memory.pipeline_v2.graph.feedback
        now = utcnow()
        key = prompt_key(req.query) if req.query else None
        with self.core.db.write_tx() as conn:
            mid = self.core.resolve_id(memory_id, conn, req.identity())
            m = memories.get(conn, mid)
            if m is None or m.is_deleted:
                raise NotFound(f"no memory {memory_id}")
            conn.execute(
                "INSERT INTO memory_feedback (memory_id, prompt_key, session_key, helpful,"
                " created_at) VALUES (?, ?, ?, ?, ?)",
                (mid, key, req.session_key, int(req.helpful), now))
            aspects = edges = 0
            if cfg.enabled:
                sign = 1.0 if req.helpful else -1.0
                aspects, edges = _shift(conn, [mid], aspect=sign * cfg.aspect_delta,
                                        edge=sign * cfg.edge_delta, lo=cfg.min_weight,
                                        hi=cfg.max_weight, now=now)
            unhelpful = 0
            if key is not None:
                unhelpful = conn.execute(
                    "SELECT COUNT(*) FROM memory_feedback WHERE prompt_key = ? AND memory_id = ?"
                    " AND helpful = 0", (key, mid)).fetchone()[0]
        pair = None
        if req.query and self.core.config.predictor.adapt:
            pair = self.record_pair(m, req.query, 1.0 if req.helpful else 0.0, "explicit",
                                    req.identity(), req.session_key)
        return {"memory_id": mid, "helpful": req.helpful, "prompt_key": key,
                "training_pair": pair,
                "unhelpful_for_prompt": unhelpful,
                "suppressed_for_prompt": key is not None and unhelpful >= cfg.unhelpful_limit,
                "aspects_updated": aspects, "edges_updated": edges}

    def suppressed_for_prompt(self, prompt: str) -> set[str]:
        """Memories rated unhelpful often enough for this prompt not to be injected for it."""
        limit = self.core.config.memory.pipeline_v2.graph.feedback.unhelpful_limit
        rows = self.core.db.reader().execute(
            "SELECT memory_id FROM memory_feedback WHERE prompt_key = ? AND helpful = 0"
            " GROUP BY memory_id HAVING COUNT(*) >= ?", (prompt_key(prompt), limit))
        return {r[0] for r in rows}

    def session_feedback(self, session_key: str) -> dict[str, Any] | None:
        """The session-end learning pass (once per session); None when off or done."""
        cfg = self.core.config.memory.pipeline_v2.graph
        if not (cfg.enabled and cfg.feedback.enabled):
            return None
        fb = cfg.feedback
        now = utcnow()
        with self.core.db.write_tx() as conn:
            if conn.execute("SELECT 1 FROM session_scores WHERE session_key = ?",
                            (session_key,)).fetchone():
                return None
            rows = conn.execute(
                "SELECT memory_id, fts_hit_count FROM session_memories WHERE session_key = ?"
                " AND was_injected = 1", (session_key,)).fetchall()
            used = [r[0] for r in rows if r[1] >= USED_HITS]
            unused = [r[0] for r in rows if r[1] < USED_HITS]
            up = _shift(conn, used, aspect=fb.aspect_delta, edge=fb.edge_delta,
                        lo=fb.min_weight, hi=fb.max_weight, now=now)
            down = _shift(conn, unused, aspect=-fb.decay, edge=0.0, lo=fb.min_weight,
                          hi=fb.max_weight, now=now)
            score = len(used) / len(rows) if rows else None
            conn.execute(
                "INSERT INTO session_scores (session_key, score, injected, used, scored_by,"
                " created_at) VALUES (?, ?, ?, ?, 'hits', ?)",
                (session_key, score, len(rows), len(used), now))
            scoring = None
            if rows and continuity_score.unavailable(self.core.config) is None:
                scoring = jobs.enqueue(conn, continuity_score.JOB_TYPE,
                                       payload={"session_key": session_key},
                                       max_attempts=self.core.config.memory.pipeline_v2.worker
                                       .max_retries, check_existing=False)
        pairs = 0
        if self.core.config.predictor.adapt:
            pairs = self.learn_from_session(session_key, set(used))
        return {"injected": len(rows), "used": len(used), "score": score,
                "training_pairs": pairs,
                "aspects_reinforced": up[0], "edges_reinforced": up[1],
                "aspects_decayed": down[0], "continuity_job": scoring}
