"""The write gate of an explicit remember (`memory.writeGate`, docs/gates.md).

Judging needs the new text's vector, and remember embeds in the background. So with the gate
on (or in shadow), remember embeds its text first — outside the write lock, with recall's
bounded query embedding (`embedding.query_timeout_ms`; at once keyword-only while the
provider is known down: the memory is then written unjudged, never held) — and the vector is
stored with the new row in the same transaction and indexed on commit, so the background
embedder has nothing left to do for it and the next remember is judged against this one at
once. The nearest stored memories of the same project and owner come from the vector index:
live, current, curated ones only (not session turns, file or document chunks, imported chat
messages: repeating what a conversation said is how it becomes a curated memory). The verdict
is `pipeline.write_gate.judge`.

What is judged: explicit remembers (HTTP, MCP, CLI, Python) without a lifecycle `key` (a key
names the thing: a new version supersedes the old in its own way) that are not events (an
event said twice happened twice) and not written for a source the daemon keeps in step
(session summaries, imports and file chunks take other paths). In mode `on` a restatement is
not stored: the answer is the stored memory's, with `"gated": true` and `gate` (the reasons,
its cosine), and that memory is corroborated as an exact duplicate would be (another agent
joins `observed_by`). In shadow the memory is stored as usual and the answer's `gate` says
what would have happened. Each decision with a stored memory at or above the threshold is in
the log (`GET /api/gates/log`): restatements and the guards that kept an update.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemonist.model.answers import RememberAnswer
from mnemonist.model.requests import RememberRequest
from mnemonist.pipeline.write_gate import Stored, Verdict, judge
from mnemonist.service.part import Part
from mnemonist.store import (
    duplicates,
    embedding_work,
    embeddings,
    gate_log,
    memories,
    memory_reads,
)
from mnemonist.store.memories import NewMemory

#: stored memories asked of the index per neighbour wanted: others' private memories, other
#: sources and superseded rows are dropped after the search
OVERSAMPLE = 4
#: memory types the gate never judges: a repeated event is another occurrence
UNJUDGED_TYPES = frozenset({"event", "episodic", "document_chunk", "summary"})


@dataclass
class GateCheck:
    """What the write gate found before the write transaction."""

    mode: str
    verdict: Verdict | None  # None: not judged (`unjudged` says why)
    vector: np.ndarray | None = None
    unjudged: str | None = None

    def brief(self) -> dict[str, Any]:
        v = self.verdict
        if v is None:
            return {"mode": self.mode, "decision": "write", "judged": False,
                    "reasons": [self.unjudged or "not judged"]}
        decision = "write"
        if v.redundant:
            decision = "drop" if self.mode == "on" else "would_drop"
        near = v.neighbour
        return {"mode": self.mode, "decision": decision, "judged": True,
                "neighbour": near.id if near else None,
                "cosine": round(near.cosine, 4) if near else None, "reasons": v.reasons}


class WriteGateOps(Part):
    def exempt_from_write_gate(self, req: RememberRequest, new: NewMemory) -> str | None:
        """Why this remember is not judged, or None."""
        if new.key:
            return "a lifecycle key: a new version supersedes the stored one"
        if new.type in UNJUDGED_TYPES:
            return f"a {new.type}: a repeat is another occurrence"
        if new.source_type in duplicates.UNSWEPT_SOURCES:
            return f"written for a {new.source_type}"
        return None

    def write_gate_check(self, req: RememberRequest, new: NewMemory) -> GateCheck | None:
        """The gate's verdict on `new`, before the write (no transaction held); None when the
        gate is off or this remember is exempt."""
        cfg = self.core.config.memory.write_gate
        if cfg.mode == "off" or self.exempt_from_write_gate(req, new) is not None:
            return None
        if self._answered_as_usual(self.core.db.reader(), new):
            return None  # a replay or an exact duplicate: nothing to embed or judge
        if self.core.provider is None:
            return GateCheck(cfg.mode, None, unjudged="no embedding provider")
        vector = self.core.try_embed(new.content)
        if vector is None:
            return GateCheck(cfg.mode, None, unjudged="the embedding provider did not answer")
        near = self._near_stored(vector, new, cfg.neighbours)
        verdict = judge(new.content, near, cfg.threshold, type_=new.type, pinned=new.pinned,
                        tags=new.tags)
        return GateCheck(cfg.mode, verdict, vector)

    def _near_stored(self, vector: np.ndarray, new: NewMemory, k: int) -> list[Stored]:
        index = self.core.index
        if index is None or index.dimensions != vector.shape[0]:
            return []
        hits = index.search(vector, k * OVERSAMPLE, project=new.project, filter_project=True)
        if not hits:
            return []
        rows = memories.get_many_by_seq(self.core.db.reader(), [s for s, _ in hits],
                                        duplicates.sweepable_where())
        out: list[Stored] = []
        for seq, cos in hits:
            m = rows.get(seq)
            if m is None or (m.agent_id, m.user_id) != (new.agent_id, new.user_id):
                continue
            out.append(Stored(m.id, m.content, float(cos), m.type, m.pinned, tuple(m.tags)))
            if len(out) >= k:
                break
        return out

    def write_gate_answer(self, conn: sqlite3.Connection, new: NewMemory,
                          check: GateCheck | None) -> RememberAnswer | None:
        """In the write transaction, mode on: the answer for a restatement (nothing written
        but the stored memory's corroboration and the log row), or None to write as usual.
        An idempotent replay or an exact duplicate is left to the usual path."""
        if check is None or check.mode != "on" or check.verdict is None \
                or not check.verdict.redundant or check.verdict.neighbour is None:
            return None
        if self._answered_as_usual(conn, new):
            return None
        held = memories.get(conn, check.verdict.neighbour.id)
        if held is None or held.is_deleted or held.superseded_at is not None:
            return None  # forgotten or superseded since it was found: write
        if new.idempotency_key:  # a retry with this key must get this answer again
            memories.adopt_idempotency_key(conn, held.id, new.idempotency_key)
        # RememberOps' own: the gate's answers are remember's answers
        corroborated = self._corroborate(conn, held.id, new.observer,  # type: ignore[attr-defined]
                                         new.created_at)
        held = memories.get(conn, held.id) or held
        brief = check.brief()
        self._log_write_gate(conn, new, check, brief, subject=None)
        out = self._answer(held, created=False, deduplicated=False)  # type: ignore[attr-defined]
        out.update(gated=True, corroborated=corroborated, gate=brief)
        return out

    @staticmethod
    def _answered_as_usual(conn: sqlite3.Connection, new: NewMemory) -> bool:
        """An idempotent replay or an exact duplicate: remember's usual path answers it."""
        if new.idempotency_key and memories.find_by_idempotency_key(
                conn, new.idempotency_key) is not None:
            return True
        return memories.find_live_duplicate(
            conn, new.content_hash, new.project, new.source_id, agent_id=new.agent_id,
            user_id=new.user_id) is not None

    def write_gate_after(self, conn: sqlite3.Connection, new: NewMemory,
                         check: GateCheck | None, outcome: RememberAnswer) -> None:
        """After the usual write (same transaction): the vector the gate computed stored with
        the new row and indexed on commit, the decision logged, the answer told."""
        if check is None:
            return
        if not outcome.get("created"):
            return  # an exact duplicate or a replay after all: the usual path answered
        brief = check.brief()
        outcome["gate"] = brief
        if check.vector is not None and self.core.provider is not None:
            self._store_vector(conn, new, check.vector)
        if check.verdict is not None and check.verdict.compared:
            self._log_write_gate(conn, new, check, brief, subject=new.id)

    def _store_vector(self, conn: sqlite3.Connection, new: NewMemory,
                      vector: np.ndarray) -> None:
        assert self.core.provider is not None
        model = self.core.provider.model_id
        embeddings.upsert(conn, new.content_hash, model, vector)
        embedding_work.mark_embedded_by_id(conn, new.id, model)
        found = memory_reads.seq_of(conn, new.id)
        if found is None:
            return
        seq, project = found, new.project
        core = self.core
        core.db.on_commit(lambda: core.get_index(int(vector.shape[0])).add(seq, vector, project))

    def _log_write_gate(self, conn: sqlite3.Connection, new: NewMemory, check: GateCheck,
                        brief: dict[str, Any], subject: str | None) -> None:
        gate_log.record(conn, gate="write", mode=check.mode, decision=brief["decision"],
                        subject=subject, reasons=brief["reasons"], content=new.content,
                        project=new.project, agent_id=new.agent_id, user_id=new.user_id,
                        neighbour_id=brief["neighbour"], cosine=brief["cosine"],
                        at=new.created_at)
