"""The gates' log, the significance gate of session summaries, and the backfill of the
sessions it skipped (docs/gates.md). The write gate itself is in `service.write_gate`.

The significance gate runs in the summary worker, after the session's transcript is read and
before the LLM is asked for a summary (`significance_gate`): the turn count the reader kept,
the entities the project already knew that the session names, and the distance from its mean
turn vector to those of the project's recent sessions (its own turns are embedded first when
the background embedder has not reached them yet: a few per session). Mode `on` skips an
insignificant session's summary: the job completes with the reasons and the log holds a
`skip` row until `backfill_skipped` queues the summary after all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from mnemonist.model.answers_admin import (
    BackfillAnswer,
    GateLogAnswer,
    GatesStatus,
    SignificanceDecision,
    SignificanceVerdict,
)
from mnemonist.model.memory import utcnow
from mnemonist.model.requests import Caller
from mnemonist.pipeline import significance_gate as significance
from mnemonist.pipeline.summary_worker import summary_unavailable
from mnemonist.search.filters import visibility_clause
from mnemonist.service.errors import BadRequest, Conflict
from mnemonist.service.part import Part
from mnemonist.sessions.turns import SessionTurn, is_substantive
from mnemonist.store import embeddings, gate_log, jobs
from mnemonist.store import session_turns as turns_store
from mnemonist.store import sessions as sessions_store
from mnemonist.store import significance as significance_store
from mnemonist.text.entities import canonical_name, extract

#: the most text of a session read for the entities it names
ENTITY_SCAN_CHARS = 50_000
MAX_NAMES = 300
#: a session's own turns embedded before it is judged, at most, and within this many seconds
EMBED_OWN_TURNS = 2000
EMBED_BUDGET_S = 60.0
#: session vectors kept (key, turn count) -> vector
CACHE_SESSIONS = 512


class GateOps(Part):
    _session_vectors: OrderedDict[tuple[str, int], np.ndarray | None]
    _session_vectors_lock = threading.Lock()

    # -- the significance gate -----------------------------------------------------------
    def session_signals(self, session_key: str) -> significance.SessionSignals:
        """What the significance gate reads of one session (nothing is written but the
        vectors of its turns not embedded yet)."""
        conn = self.core.db.reader()
        row = turns_store.get(conn, session_key) or {}
        project = row.get("project")
        turns, _ = turns_store.turns(conn, session_key, limit=100_000)
        signals = significance.SessionSignals(substantive=int(row.get("substantive") or 0))
        signals.known_entities = self._known_entities(session_key, project,
                                                      [t.content for t in turns])
        if self.core.provider is None:
            return signals
        self._embed_own_turns(session_key)
        own = self._session_vector(session_key, len(turns))
        if own is None:
            return signals
        others = {k: v for k in self._earlier_sessions(session_key, project, row)
                  if (v := self._session_vector(k)) is not None and v.shape == own.shape}
        signals.compared_sessions = len(others)
        signals.nearest_session, signals.distance = significance.nearest(own, others)
        return signals

    def judge_session(self, session_key: str) -> SignificanceVerdict:
        """The significance gate's verdict on a session, whatever its mode (nothing logged)."""
        cfg = self.core.config.sessions.significance
        s = self.session_signals(session_key)
        v = significance.judge(s, cfg)
        return {"session_key": session_key, "insignificant": v.insignificant, "signs": v.signs,
                "reasons": v.reasons, "substantive": s.substantive,
                "known_entities": s.known_entities, "distance": s.distance,
                "nearest_session": s.nearest_session, "compared_sessions": s.compared_sessions}

    def significance_gate(self, session_key: str) -> SignificanceDecision | None:
        """The summary worker's question, before the LLM: None when the gate is off, else the
        decision (`extract`, `skip` in mode on, `would_skip` in shadow), logged."""
        mode = self.core.config.sessions.significance.mode
        if mode == "off":
            return None
        verdict = self.judge_session(session_key)
        decision = "extract"
        if verdict["insignificant"]:
            decision = "skip" if mode == "on" else "would_skip"
        project = significance_store.ingest_project(self.core.db.reader(), session_key)
        with self.core.db.write_tx() as conn:
            gate_log.record(conn, gate="significance", mode=mode, decision=decision,
                            subject=session_key, reasons=verdict["reasons"],
                            project=project,
                            neighbour_id=verdict["nearest_session"],
                            cosine=None if verdict["distance"] is None
                            else 1.0 - verdict["distance"])
        return {"mode": mode, "decision": decision, **verdict}

    def _known_entities(self, session_key: str, project: str | None,
                        texts: list[str]) -> list[str]:
        """Entities the session names that memories of its project other than its own turns
        name too (the graph's entities of the project's global scope)."""
        names: dict[str, str] = {}
        size = 0
        for text in texts:
            if size >= ENTITY_SCAN_CHARS or len(names) >= MAX_NAMES:
                break
            size += len(text)
            found = extract(text[:ENTITY_SCAN_CHARS])
            for e in (*found.entities, *found.tentative):
                names.setdefault(canonical_name(e.name), e.name)
        if not names:
            return []
        keys = list(names)[:MAX_NAMES]
        return significance_store.known_entity_names(self.core.db.reader(), session_key,
                                                     project, keys)

    def _embed_own_turns(self, session_key: str) -> None:
        if self.core.embedder is None:
            return
        seqs = significance_store.unembedded_turns(self.core.db.reader(), session_key,
                                                   EMBED_OWN_TURNS)
        if seqs:
            self.core.embedder.embed_now(seqs, EMBED_BUDGET_S, chunk=32)

    def _earlier_sessions(self, session_key: str, project: str | None,
                          row: dict[str, Any]) -> list[str]:
        """The project's most recent indexed sessions that started before this one."""
        limit = self.core.config.sessions.significance.recent_sessions
        return significance_store.earlier_sessions(
            self.core.db.reader(), session_key, project, row.get("created_at") or utcnow(),
            limit)

    def _session_vector(self, session_key: str, turns: int | None = None) -> np.ndarray | None:
        """The normalised mean vector of a session's embedded substantive turns (all of them
    when none is), cached per turn count."""
        assert self.core.provider is not None
        conn = self.core.db.reader()
        if turns is None:
            turns = significance_store.turn_count(conn, session_key)
        cache_key = (session_key, int(turns))
        with self._session_vectors_lock:
            if not hasattr(self, "_session_vectors"):
                self._session_vectors = OrderedDict()
            if cache_key in self._session_vectors:
                self._session_vectors.move_to_end(cache_key)
                return self._session_vectors[cache_key]
        rows = significance_store.turn_vectors(conn, session_key, self.core.provider.model_id)
        # what the session says: greetings and thanks only blur it ("ok" / "Thanks!")
        said = [r for r in rows if is_substantive(SessionTurn("", 0, "user", r[0], None))]
        vector = significance.mean_vector(
            [embeddings.from_blob(r[1], r[2]) for r in said or rows])
        if len(rows) < turns:  # not all embedded yet: not cached
            return vector
        with self._session_vectors_lock:
            self._session_vectors[cache_key] = vector
            while len(self._session_vectors) > CACHE_SESSIONS:
                self._session_vectors.popitem(last=False)
        return vector

    # -- backfill ------------------------------------------------------------------------
    def backfill_skipped(self, limit: int = 100) -> BackfillAnswer:
        """Queue the summary of sessions the significance gate skipped, past the gate."""
        if not 1 <= limit <= 10_000:
            raise BadRequest("limit must be between 1 and 10000", field="limit")
        cfg = self.core.config.memory.pipeline_v2
        why = summary_unavailable(cfg)
        if why:
            raise Conflict(f"no session summary can run: {why}", code="no_llm")
        queued: list[str] = []
        with self.core.db.write_tx() as conn:
            for row in gate_log.skipped_sessions(conn, limit):
                key = row["subject"]
                state = sessions_store.get_state(conn, key) or {}
                payload = {"session_key": key, "harness": state.get("harness"),
                           "project": row.get("project"), "reason": "backfill",
                           "force": True}
                waiting = sessions_store.pending_summary_job(conn, key)
                if waiting is not None:
                    turns_store.set_payload(conn, waiting, payload)
                else:
                    jobs.enqueue(conn, "summary", payload=payload, check_existing=False,
                                 max_attempts=cfg.worker.max_retries)
                gate_log.mark_backfilled(conn, key, utcnow())
                queued.append(key)
        return {"queued": len(queued), "sessions": queued}

    # -- the log and status --------------------------------------------------------------
    def gate_log(self, *, gate: str | None = None, decision: str | None = None,
                 limit: int = 50, offset: int = 0,
                 caller: Caller | None = None) -> GateLogAnswer:
        """What the gates decided, newest first: rows about memories `caller` may see."""
        if gate is not None and gate not in gate_log.GATES:
            raise BadRequest(f"gate must be one of {', '.join(gate_log.GATES)}", field="gate")
        if decision is not None and decision not in gate_log.DECISIONS:
            raise BadRequest(f"decision must be one of {', '.join(gate_log.DECISIONS)}",
                             field="decision")
        rows, total = gate_log.listing(self.core.db.reader(), visibility_clause(caller), gate=gate,
                                       decision=decision, limit=limit, offset=offset)
        return {"decisions": rows, "total": total, "limit": limit, "offset": offset,
                "has_more": offset + len(rows) < total}

    def gates_status(self) -> GatesStatus:
        conn = self.core.db.reader()
        counts = gate_log.counts(conn)
        write = self.core.config.memory.write_gate
        sig = self.core.config.sessions.significance
        to_backfill = gate_log.to_backfill(conn)
        return {
            "write": {"mode": write.mode, "threshold": write.threshold,
                      "logged": counts.get("write", {})},
            "significance": {"mode": sig.mode, "logged": counts.get("significance", {}),
                             "to_backfill": int(to_backfill)},
        }

