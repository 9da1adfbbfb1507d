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
- With `graph.coUse` on, the same pass counts what the session used (those memories and the
  ones rated helpful in it) for the desire paths of `graph/co_use.py`.

A co-occurrence edge's confidence is recomputed from its count whenever the count changes, so
feedback on such an edge holds until the pair's next memory.
"""

from __future__ import annotations

import sqlite3

from mnemonist.graph import co_use
from mnemonist.model.answers_graph import FeedbackAnswer, SessionFeedback
from mnemonist.model.graph import FeedbackRequest
from mnemonist.model.memory import utcnow
from mnemonist.pipeline import continuity_score
from mnemonist.service.errors import NotFound
from mnemonist.service.predictor import PredictorOps, prompt_key
from mnemonist.store import graph_co_use, jobs, memories
from mnemonist.store import graph_feedback as store

MIN_EDGE_CONFIDENCE = 0.05
USED_HITS = 2


def _shift(conn: sqlite3.Connection, memory_ids: list[str], *, aspect: float, edge: float,
           lo: float, hi: float, now: str) -> tuple[int, int]:
    """Move the aspects of these memories' attributes by `aspect` and the edges between each
    memory's entities by `edge`. Returns (aspects, edges) changed."""
    aspects = edges = 0
    for memory_id in memory_ids:
        if aspect:
            # a raise confirms the aspect: time decay counts from now (graph/upkeep.py)
            aspects += store.shift_aspects(conn, memory_id, aspect, lo, hi, now)
        if edge:
            # `boost`: what feedback added on top of the evidence, the part time decay takes
            # back; stated and inferred edges have fixed confidences and are not moved
            edges += store.shift_edges(conn, memory_id, edge, MIN_EDGE_CONFIDENCE, now)
    return aspects, edges


class Feedback(PredictorOps):
    """Feedback: ratings, what sessions used, and the ranker's training pairs."""

    def memory_feedback(self, memory_id: str, req: FeedbackRequest) -> FeedbackAnswer:
        cfg = self.core.config.memory.pipeline_v2.graph.feedback
        now = utcnow()
        key = prompt_key(req.query) if req.query else None
        with self.core.db.write_tx() as conn:
            mid = self.core.resolve_id(memory_id, conn, req.identity())
            m = memories.get(conn, mid)
            if m is None or m.is_deleted:
                raise NotFound(f"no memory {memory_id}")
            store.record_rating(conn, mid, key, req.session_key, req.helpful, now)
            aspects = edges = 0
            if cfg.enabled:
                sign = 1.0 if req.helpful else -1.0
                aspects, edges = _shift(conn, [mid], aspect=sign * cfg.aspect_delta,
                                        edge=sign * cfg.edge_delta, lo=cfg.min_weight,
                                        hi=cfg.max_weight, now=now)
            unhelpful = 0
            if key is not None:
                unhelpful = store.unhelpful_count(conn, key, mid)
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
        return store.rated_unhelpful(self.core.db.reader(), prompt_key(prompt), limit)

    def session_feedback(self, session_key: str) -> SessionFeedback | None:
        """The session-end learning pass (once per session); None when off or done."""
        cfg = self.core.config.memory.pipeline_v2.graph
        if not (cfg.enabled and cfg.feedback.enabled):
            return None
        fb = cfg.feedback
        now = utcnow()
        with self.core.db.write_tx() as conn:
            if store.session_scored(conn, session_key):
                return None
            rows = store.injected_memories(conn, session_key)
            used = [r[0] for r in rows if r[1] >= USED_HITS]
            unused = [r[0] for r in rows if r[1] < USED_HITS]
            up = _shift(conn, used, aspect=fb.aspect_delta, edge=fb.edge_delta,
                        lo=fb.min_weight, hi=fb.max_weight, now=now)
            down = _shift(conn, unused, aspect=-fb.decay, edge=0.0, lo=fb.min_weight,
                          hi=fb.max_weight, now=now)
            score = len(used) / len(rows) if rows else None
            store.record_session_score(conn, session_key, score, len(rows), len(used), now)
            paths = None
            if cfg.co_use.enabled:
                helpful = graph_co_use.helpful_in_session(conn, session_key)
                paths = co_use.learn(conn, [*used, *helpful], cfg.co_use, now).as_dict()
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
                "aspects_decayed": down[0], "continuity_job": scoring, "desire_paths": paths}
