"""What use and ratings teach: memory feedback, the session-end learning pass and the graph
diagnostics.

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
from mnemonist.pipeline import (
    bridges,
    communities,
    continuity_score,
    entity_health,
    sleep_replay,
)
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


class GraphFeedbackOps(PredictorOps):
    def memory_feedback(self, memory_id: str, req: FeedbackRequest) -> dict[str, Any]:
        cfg = self.config.memory.pipeline_v2.graph.feedback
        now = utcnow()
        key = prompt_key(req.query) if req.query else None
        with self.db.write_tx() as conn:
            mid = self.resolve_id(memory_id, conn, req.identity())
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
        if req.query and self.config.predictor.adapt:
            pair = self.record_pair(m, req.query, 1.0 if req.helpful else 0.0, "explicit",
                                    req.identity(), req.session_key)
        return {"memory_id": mid, "helpful": req.helpful, "prompt_key": key,
                "training_pair": pair,
                "unhelpful_for_prompt": unhelpful,
                "suppressed_for_prompt": key is not None and unhelpful >= cfg.unhelpful_limit,
                "aspects_updated": aspects, "edges_updated": edges}

    def suppressed_for_prompt(self, prompt: str) -> set[str]:
        """Memories rated unhelpful often enough for this prompt not to be injected for it."""
        limit = self.config.memory.pipeline_v2.graph.feedback.unhelpful_limit
        rows = self.db.reader().execute(
            "SELECT memory_id FROM memory_feedback WHERE prompt_key = ? AND helpful = 0"
            " GROUP BY memory_id HAVING COUNT(*) >= ?", (prompt_key(prompt), limit))
        return {r[0] for r in rows}

    def session_feedback(self, session_key: str) -> dict[str, Any] | None:
        """The session-end learning pass (once per session); None when off or done."""
        cfg = self.config.memory.pipeline_v2.graph
        if not (cfg.enabled and cfg.feedback.enabled):
            return None
        fb = cfg.feedback
        now = utcnow()
        with self.db.write_tx() as conn:
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
            if rows and continuity_score.unavailable(self.config) is None:
                scoring = jobs.enqueue(conn, continuity_score.JOB_TYPE,
                                       payload={"session_key": session_key},
                                       max_attempts=self.config.memory.pipeline_v2.worker
                                       .max_retries, check_existing=False)
        pairs = 0
        if self.config.predictor.adapt:
            pairs = self.learn_from_session(session_key, set(used))
        return {"injected": len(rows), "used": len(used), "score": score,
                "training_pairs": pairs,
                "aspects_reinforced": up[0], "edges_reinforced": up[1],
                "aspects_decayed": down[0], "continuity_job": scoring}

    def graph_diagnostics(self, recompute: bool = False,
                          project: str | None = None) -> dict[str, Any]:
        """Sizes of the graph, relations by reason, attributes by kind, and the communities
        with their modularity (computed now when never computed, or when asked) — of one
        project when `project` is given (entities belong to one project since migration 15),
        else of all."""
        cfg = self.config.memory.pipeline_v2.graph
        conn = self.db.reader()
        state = communities.last_state(conn)
        if cfg.enabled and (recompute or state is None):
            communities.recompute(self.db, resolution=cfg.communities.resolution,
                                  max_entities=cfg.communities.max_entities)
            state = communities.last_state(conn)
        scope, args = ("e.project = ?", [project]) if project is not None else ("1", [])
        at = f"JOIN entities e ON e.id = {{col}} WHERE {scope}"

        def one(sql: str) -> int:
            return int(conn.execute(sql, args).fetchone()[0])

        def grouped(sql: str) -> dict[str, int]:
            return {str(r[0]): r[1] for r in conn.execute(sql, args)}

        rel = at.format(col="r.source_entity_id")
        state = state or {}
        if project is not None:
            state = {**(state.get("projects") or {}).get(project, {}),
                     "computed_at": state.get("computed_at")}
        return {
            "project": project,
            "entities": one(f"SELECT COUNT(*) FROM entities e WHERE {scope}"),
            "linked_entities": one(f"SELECT COUNT(*) FROM entities e WHERE {scope}"
                                   " AND e.mentions > 0"),
            "relations": one(f"SELECT COUNT(*) FROM relations r {rel}"),
            "relations_by_reason": grouped(
                f"SELECT r.reason, COUNT(*) FROM relations r {rel} GROUP BY r.reason"
                " ORDER BY r.reason"),
            "relations_by_type": grouped(
                f"SELECT r.relation_type, COUNT(*) FROM relations r {rel}"
                " GROUP BY r.relation_type ORDER BY COUNT(*) DESC LIMIT 20"),
            "attributes_by_kind": grouped(
                f"SELECT a.kind, COUNT(*) FROM entity_attributes a"
                f" {at.format(col='a.entity_id')} GROUP BY a.kind ORDER BY a.kind"),
            "aspects": one(f"SELECT COUNT(*) FROM entity_aspects a"
                           f" {at.format(col='a.entity_id')}"),
            "modularity": state.get("modularity"),
            "communities_computed_at": state.get("computed_at"),
            "community_count": state.get("communities") or 0,
            "communities": [dict(r) for r in conn.execute(
                "SELECT id, label, member_count, project FROM entity_communities"
                f" WHERE {'project = ?' if project is not None else '1'}"
                " ORDER BY member_count DESC, id LIMIT 50", args)],
            # folds, junk removed, orphans, what is pending (pipeline/entity_health.py)
            "entity_health": entity_health.report(conn, project),
            # entities whose relations join communities (pipeline/bridges.py)
            "bridges": bridges.bridges(conn, cfg.communities.bridges, project),
            # idle-time pair comparison: totals, false positives (pipeline/sleep_replay.py)
            "sleep_replay": self._sleep_replay(conn),
            # proposed, confirmed and rejected principles (pipeline/principles.py)
            "principles": self._principles(conn),
            "feedback": {
                "ratings": conn.execute("SELECT COUNT(*) FROM memory_feedback").fetchone()[0],
                "sessions_scored": conn.execute(
                    "SELECT COUNT(*) FROM session_scores").fetchone()[0],
            },
        }

    def _principles(self, conn: sqlite3.Connection) -> dict[str, Any] | None:
        report = getattr(self, "principles_report", None)  # service/principles.py
        return report(conn) if report is not None else None

    def _sleep_replay(self, conn: sqlite3.Connection) -> dict[str, Any]:
        """Sleep replay's settings and totals (the whole store's), and its worker's state."""
        out = sleep_replay.report(conn, self.config.memory.consolidation)
        worker = getattr(self, "sleep_replay", None)
        out["worker"] = worker.status() if worker is not None else None
        return out
