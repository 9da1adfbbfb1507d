"""remember: the raw-first write. The row, its history event and its extraction and hints jobs
commit in one transaction before the call returns; embedding follows in the background."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.model.answers import RememberAnswer
from mnemonist.model.memory import MAX_OBSERVERS, Memory, utcnow
from mnemonist.model.requests import RememberRequest
from mnemonist.pipeline import structural
from mnemonist.providers.embedding.request_gate import holds_gate
from mnemonist.service.errors import BadRequest
from mnemonist.service.lifecycle import supersede_keyed
from mnemonist.service.write_gate import WriteGateOps
from mnemonist.store import history, jobs, memories, memory_reads, session_turns
from mnemonist.store.memories import NewMemory
from mnemonist.store.row_ids import memory_id
from mnemonist.store.write_batch import WriteBatch
from mnemonist.text.entities import is_decision_content
from mnemonist.text.normalize import normalize_and_hash
from mnemonist.text.prefix import infer_type, parse_prefix
from mnemonist.text.scrub import scrub_all, scrub_credentials, scrub_optional

#: the importance decision auto-protection gives a decision (default memories: 0.8)
DECISION_IMPORTANCE = 0.85


class RememberOps(WriteGateOps):
    @holds_gate
    def remember(self, req: RememberRequest, *, changed_by: str | None = None
                 ) -> RememberAnswer:
        new, actor, scrubbed = self.prepare(req, changed_by)
        check = self.write_gate_check(req, new)  # the write gate (off: None); may embed first
        with self.core.db.write_tx() as conn:
            outcome = self.write_gate_answer(conn, new, check)
            if outcome is None:
                outcome = self.insert_or_existing(conn, new, actor, scrubbed)
                self.write_gate_after(conn, new, check, outcome)
        if req.transcript and req.source_id:
            self.save_transcript(req.source_id, req.transcript, req.harness, req.project)
        return outcome

    def prepare(
        self, req: RememberRequest, changed_by: str | None = None, now: str | None = None
    ) -> tuple[NewMemory, str, list[str]]:
        """Prefixes, scrubbing, normalisation and defaults: the row to write (no I/O)."""
        mcfg = self.core.config.memory
        parsed = parse_prefix(req.content)
        scrubbed = scrub_credentials(parsed.content)
        norm = normalize_and_hash(scrubbed.text)
        if not norm.storage:
            raise BadRequest("content is empty after normalisation", field="content")
        if len(norm.storage) > mcfg.max_content_chars:
            raise BadRequest(
                f"content has {len(norm.storage)} characters; the limit is "
                f"{mcfg.max_content_chars} (memory.max_content_chars)",
                field="content",
            )
        pinned = req.pinned if req.pinned is not None else parsed.pinned
        if req.importance is not None:
            importance = req.importance
        elif parsed.importance is not None or pinned:
            importance = 1.0
        else:
            importance = mcfg.default_importance
        memory_type = req.type or ("fact" if req.key else infer_type(norm.storage))
        if req.type is None and self._decision_protected(norm.storage, memory_type):
            memory_type = "decision"
            if req.importance is None and not pinned:
                importance = max(importance, DECISION_IMPORTANCE)
        now = now or utcnow()
        occurred_at = req.occurred_at or now
        if req.valid_to is not None and req.valid_to <= (req.valid_from or occurred_at):
            raise BadRequest("valid_to must be later than valid_from (default: occurred_at)",
                             field="valid_to")
        new = NewMemory(
            id=memory_id(),
            content=norm.storage,
            normalized_content=norm.normalized,
            content_hash=norm.content_hash,
            type=memory_type,
            importance=importance,
            tags=list(dict.fromkeys(scrub_all([*(req.tags or []), *parsed.tags]) or [])),
            pinned=pinned,
            who=scrub_optional(req.who or req.harness),
            why=scrub_optional(req.why),
            project=req.project,
            source_type=req.source_type,
            source_id=req.source_id,
            idempotency_key=req.idempotency_key,
            occurred_at=occurred_at,
            created_at=now,
            key=req.key,
            valid_from=req.valid_from or occurred_at,
            valid_to=req.valid_to,
            agent_id=req.agent_id,
            user_id=req.user_id,
        )
        new.observer = observer_of(new)
        actor = scrub_optional(changed_by or req.who or req.harness) or "api"
        return new, actor, list(scrubbed.kinds)

    def _decision_protected(self, content: str, inferred: str) -> bool:
        """Decision auto-protection: decision language ("we went with SQLite") is stored as a
        decision, unless it reads as the user's preference ("prefers tabs over spaces"), which
        stays a preference (a taste changes; a decision is superseded)."""
        graph = self.core.config.memory.pipeline_v2.graph
        return (graph.enabled and graph.decision_protection and inferred != "preference"
                and is_decision_content(content))

    def insert_or_existing(
        self, conn: sqlite3.Connection, new: NewMemory, actor: str, scrubbed: list[str],
        *, derive: bool = True, raced: bool = False, batch: WriteBatch | None = None,
        unseen: bool = False,
    ) -> RememberAnswer:
        """Insert `new` unless its idempotency key or content (same project and source) is
        already there. `derive` queues its extraction and hints jobs (not for memories that
        are lines of a source the daemon indexes itself: session turns). With a `batch`
        (bulk import), its context rows, entity links (unless `batch.links` is None: the
        structural job reads what the linker wrote), history event and extraction job are
        left to the caller's `batch.flush`. `unseen`: the caller knows that neither its key
        nor its content is stored (`memories.present`, in this transaction): no look-ups."""
        if new.idempotency_key and not unseen:
            first = memories.find_by_idempotency_key(conn, new.idempotency_key)
            if first is not None:
                return self._answer(first, created=False, deduplicated=False, replay=True)
        dup = None if unseen else memories.find_live_duplicate(
            conn, new.content_hash, new.project, new.source_id, agent_id=new.agent_id,
            user_id=new.user_id)
        if dup is not None:
            if new.idempotency_key:  # a retry with this key must replay this answer
                memories.adopt_idempotency_key(conn, dup, new.idempotency_key)
            corroborated = self._corroborate(conn, dup, new.observer, new.created_at, batch)
            existing = memories.get(conn, dup)
            assert existing is not None
            out = self._answer(existing, created=False, deduplicated=True)
            out["corroborated"] = corroborated
            return out
        try:
            seq = memories.insert(conn, new, batch)
        except sqlite3.IntegrityError:
            # another daemon on the same PostgreSQL committed this key or content since the
            # look-ups above (its unique index decided): answer with its memory
            if raced:
                raise
            return self.insert_or_existing(conn, new, actor, scrubbed, derive=derive,
                                            raced=True, batch=batch)
        if new.key and batch is not None:  # its events follow those collected so far
            batch.flush_history(conn)
        lifecycle = supersede_keyed(conn, new, actor, at=new.created_at,
                                    unindex=lambda s: self.core.db.on_commit(
                                        lambda: self.core.unindex(s)))
        supersedes = lifecycle.superseded[0] if lifecycle.superseded else None
        keyed = {"key": new.key, "supersedes": supersedes,
                 "superseded_all": lifecycle.superseded, "kept_pinned": lifecycle.kept_pinned,
                 "valid_from": new.valid_from} if new.key else {}
        created: dict[str, Any] = {
            "new_content": new.content, "changed_by": actor, "reason": "remember",
            "metadata": {"type": new.type, "tags": new.tags, "pinned": new.pinned,
                         "scrubbed": scrubbed, "source_type": new.source_type, **keyed},
            "at": new.created_at,
        }
        pipeline = self.core.config.memory.pipeline_v2
        # a new memory has no job yet: no look-up. Without an LLM nothing could run the job:
        # none is queued (the queue would only grow; `status` says the pipeline is idle)
        extract = derive and pipeline.enabled and pipeline.extraction.provider != "none"
        if batch is None:
            history.append(conn, new.id, "created", **created)
            if extract:
                jobs.enqueue(conn, "extract", memory_id=new.id,
                             max_attempts=pipeline.worker.max_retries, check_existing=False)
        else:
            batch.history.append(history.event_row(new.id, "created", **created))
            if extract:
                batch.jobs.append(jobs.pending_row("extract", memory_id=new.id,
                                                   max_attempts=pipeline.worker.max_retries))
        if derive:
            self.core.enqueue_hints(conn, new.id, new.why, fresh=True)
            links_deferred = batch is not None and batch.links is not None
            if not links_deferred and structural.should_queue(self.core.config) and \
                    memory_reads.has_entity_attributes(conn, new.id):  # an LLM files them
                jobs.enqueue(conn, structural.JOB_TYPE, memory_id=new.id,
                             max_attempts=pipeline.worker.max_retries, check_existing=False)
        if self.core.embedder is not None:
            embedder = self.core.embedder
            self.core.db.on_commit(lambda: embedder.notify(seq))
        out = self._answer(_as_memory(new, seq, supersedes), created=True, deduplicated=False)
        out["scrubbed"] = scrubbed
        out["superseded"] = supersedes
        out["kept_pinned"] = lifecycle.kept_pinned[0] if lifecycle.kept_pinned else None
        return out

    @staticmethod
    def _corroborate(conn: sqlite3.Connection, memory_id: str, observer: str | None,
                     at: str, batch: WriteBatch | None = None) -> bool:
        """Another agent stored the same content in the same scope: it joins `observed_by`
        and the count grows, with its history event, in this write transaction. The same
        agent again (or no agent named) is plain deduplication."""
        if not observer or not memories.corroborate(conn, memory_id, observer, MAX_OBSERVERS):
            return False
        event: dict[str, Any] = {"changed_by": observer,
                                 "reason": "stored again by another agent",
                                 "metadata": {"observer": observer}, "at": at}
        if batch is None:
            history.append(conn, memory_id, "corroborated", **event)
        else:  # after its memory's own "created", which may still be in the batch
            batch.history.append(history.event_row(memory_id, "corroborated", **event))
        return True

    @staticmethod
    def _answer(m: Memory, *, created: bool, deduplicated: bool, replay: bool = False
                ) -> RememberAnswer:
        return {
            "id": m.id,
            "created": created,
            "deduplicated": deduplicated,
            "idempotent_replay": replay,
            "content": m.content,
            "type": m.type,
            "tags": m.tags,
            "pinned": m.pinned,
            "importance": m.importance,
            "project": m.project,
            "version": m.version,
            "occurred_at": m.occurred_at,
            "created_at": m.created_at,
            "key": m.key,
            "supersedes": m.supersedes,
            "valid_from": m.valid_from or m.occurred_at,
            "valid_to": m.valid_to,
            "superseded_by": m.superseded_by,
            "superseded": None,
            "kept_pinned": None,
            "agent_id": m.agent_id,
            "user_id": m.user_id,
            "observed_by": m.observed_by,
            "observation_count": m.observation_count,
            "corroborated": False,
            "gated": False,
        }

    def save_transcript(
        self, session_key: str, content: str, harness: str | None, project: str | None
    ) -> None:
        """Lossless transcript, scrubbed, in its own transaction (first write wins)."""
        text = scrub_credentials(content).text
        with self.core.db.write_tx() as conn:
            session_turns.keep_first_transcript(conn, session_key, text, harness, project)


def _as_memory(new: NewMemory, seq: int, supersedes: str | None = None) -> Memory:
    """The row just inserted, without reading it back."""
    return Memory(
        seq=seq, id=new.id, content=new.content, normalized_content=new.normalized_content,
        content_hash=new.content_hash, type=new.type, importance=new.importance,
        tags=new.tags, pinned=new.pinned, who=new.who, why=new.why, project=new.project,
        source_type=new.source_type, source_id=new.source_id,
        idempotency_key=new.idempotency_key, version=1, is_deleted=False, deleted_at=None,
        delete_reason=None, last_accessed=None, access_count=0, embedding_model=None,
        occurred_at=new.occurred_at, created_at=new.created_at, updated_at=new.created_at,
        updated_by=new.who, key=new.key, supersedes=supersedes,
        valid_from=new.valid_from or new.occurred_at, valid_to=new.valid_to,
        agent_id=new.agent_id, user_id=new.user_id,
        observed_by=[new.observer] if new.observer else [],
    )


def observer_of(new: NewMemory) -> str | None:
    """Who corroborates by storing this: the owning agent, else who wrote it."""
    return new.agent_id or new.who
