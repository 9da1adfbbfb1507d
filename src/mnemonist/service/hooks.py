"""Harness hooks: session start, prompt submit, pre-compaction, compaction complete and
session end (`/api/hooks/*`, `mnemonist hook <event>`).

- session start: pinned memories, recent decisions and rules, the project's best memories
  (current statements only), and after a compaction or resume the recovery digest, else a
  recap of the project's last session (sessions/recap.py), within a character budget;
- prompt submit: recall for the prompt; nothing unless the best memory is relevant enough,
  then as many as have a real chance of helping (search/relevance.py), never a statement a
  newer one contradicts (search/current.py), never what the session already holds, laid out
  by sessions/construct.py within a budget; counts prompts and fires the periodic checkpoint;
- pre-compaction: a checkpoint with the working state read from the transcript, and what the
  summary should keep; compaction complete: the next start (or prompt) recovers;
- session end: the transcript stored losslessly (scrubbed), a checkpoint, a summary job.

Every memory injected is recorded in `session_memories`. Memories given before the session's
context was last rebuilt (compaction, /clear) no longer count as held.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mnemonist.model.answers_sessions import (
    CompactionCompleteAnswer,
    PreCompactionAnswer,
    PromptAnswer,
    SessionEndAnswer,
    SessionStartAnswer,
    SummaryQueued,
)
from mnemonist.model.hooks import (
    CompactionCompleteRequest,
    PreCompactionRequest,
    PromptSubmitRequest,
    SessionEndRequest,
    SessionStartRequest,
)
from mnemonist.model.memory import Memory, parse_ts, utcnow
from mnemonist.model.requests import Caller, RecallFilters
from mnemonist.pipeline.summary_worker import summary_unavailable
from mnemonist.search.current import current_only
from mnemonist.search.filters import visibility_clause
from mnemonist.search.hits import Hit
from mnemonist.search.newest_first import outdated
from mnemonist.search.relevance import choose
from mnemonist.service.base import ServiceCore
from mnemonist.service.files import Files
from mnemonist.service.graph_feedback import Feedback
from mnemonist.service.part import Part
from mnemonist.service.session_turns import Sessions
from mnemonist.sessions import construct
from mnemonist.sessions import recap as recaps
from mnemonist.sessions.context import (
    PROMPT_HEADER,
    Section,
    memory_section,
    pre_compaction_instructions,
    render,
    session_header,
)
from mnemonist.sessions.digest import clip, minutes_since, union_capped
from mnemonist.sessions.queue import scrub
from mnemonist.sessions.reader import TAIL_BYTES, TranscriptRefused, read_tail, resolve
from mnemonist.sessions.transcript import Activity, activity, looks_like_jsonl, parse_jsonl
from mnemonist.store import files as files_store
from mnemonist.store import graph as graph_store
from mnemonist.store import jobs, memory_reads
from mnemonist.store import sessions as store

log = logging.getLogger(__name__)

RECOVER_SOURCES = ("compact", "resume")
RESET_SOURCES = ("compact", "clear")
DECISION_TYPES = ("decision", "constraint", "rule")
MIN_PROMPT_CHARS = 3
TURN_SLACK = 40  # extra candidates for the session turns dropped after the search
#: the fused score a memory needs when its relevance is unknown (the hooks' bar before there
#: was relevance: a paraphrase of a stored fact scores 0.5-0.8, an unrelated prompt under 0.2)
SCORE_WITHOUT_RELEVANCE = 0.45


class Hooks(Part):
    """The harness hooks: what a session is given at its start and at each prompt, and what is
    kept at compaction and at its end (through `sessions`, `files` and `feedback`)."""

    def __init__(self, core: ServiceCore, sessions: Sessions, files: Files,
                 feedback: Feedback) -> None:
        super().__init__(core)
        self.sessions = sessions
        self.files = files
        self.feedback = feedback

    # -- helpers -------------------------------------------------------------------------
    def _search(self, query: str, names: list[str], limit: int, *, caller: Caller,
                skip_session: str | None = None, no_turns: bool = False) -> list[Hit]:
        """Hybrid recall within this project's memories and memories of no project (the
        scope is a filter of the search itself: each leg ranks within it, so other projects'
        better matches take no place); never the turns of the session `skip_session` (it
        holds them already), nor any session turn with `no_turns`."""
        scope = RecallFilters(scope=names, **caller.model_dump())
        outcome = self.core.searcher.search(self.core.db.reader(), query, scope,
                                            limit + TURN_SLACK, 0.0)
        out = []
        for h in outcome.hits:
            m = h.memory
            if m.source_type == "session" and (no_turns or m.source_id == skip_session):
                continue
            out.append(h)
            if len(out) >= limit:
                break
        return out

    def _transcript_activity(self, path: str | None) -> Activity | None:
        """The working state at the end of a transcript file the daemon may read (its last
        megabyte: the same cost whatever the file's size), or None."""
        if not path:
            return None
        try:
            text = read_tail(resolve(path, self.sessions.transcript_roots()))
        except (OSError, TranscriptRefused) as exc:
            log.info("transcript not read: %s", exc)
            return None
        return activity(parse_jsonl(text)) if looks_like_jsonl(text) else None

    # -- what is handed over (search/relevance.py, search/current.py) --------------------
    def _relevant(self, hit: Hit, at_least: float) -> bool:
        """Relevance decides; without it (no model, no vector yet) the fused score does."""
        if hit.score < self.core.config.hooks.prompt_min_score:
            return False
        if hit.relevance is None:
            return hit.score >= SCORE_WITHOUT_RELEVANCE
        return hit.relevance >= at_least

    def _choose(self, hits: list[Hit], held: set[str], query: str = ""
                ) -> tuple[list[Memory], dict[str, Memory]]:
        """The memories the prompt hook injects, best first, and the older statements the
        newer of them replaced. Stale statements go first (an older memory that a newer
        candidate contradicts is never injected); then nothing unless the best is relevant
        enough, and after it only those with a real chance of being the first useful one
        (`relevance.choose`); never what the session holds."""
        hooks = self.core.config.hooks
        kept, replaced = current_only([h.memory for h in hits])
        # of the statements about what the prompt asks, an older one the newest contradicts
        # is stale too (search/newest_first.py)
        stale = outdated(query, hits, self.core.config.search.newest_first_share)
        for old_id, newer in stale.items():
            older = next(h.memory for h in hits if h.memory.id == old_id)
            replaced.setdefault(newer.id, older)
        alive = {m.id for m in kept} - set(stale)
        pool = [h for h in hits if h.memory.id in alive and h.memory.id not in held
                and h.score >= hooks.prompt_min_score]
        if pool and any(h.relevance is not None for h in pool):
            picked = choose([h.relevance or 0.0 for h in pool],
                            gate=hooks.prompt_min_relevance,
                            marginal=hooks.prompt_marginal_relevance,
                            cap=hooks.prompt_max_memories)
            chosen = [pool[i].memory for i in picked]
        else:
            chosen = [h.memory for h in pool if self._relevant(h, 0.0)]
        return chosen, {k: v for k, v in replaced.items() if k in {m.id for m in chosen}}

    # -- constructed context (sessions/construct.py, sessions/recap.py) -------------------
    def _prompt_block(self, prompt: str, fresh: list[Memory], names: list[str],
                      max_items: int | None = None,
                      replaced: dict[str, Memory] | None = None) -> tuple[str, list[str]]:
        """The prompt hook's block for `fresh` (rank order): entity blocks, file chunks with
        their lines, turns by session, tool lines only for prompts about commands."""
        hooks = self.core.config.hooks
        lookups = self._lookups(fresh, names, replaced)
        return construct.prompt_block(
            PROMPT_HEADER, prompt, fresh, lookups, limit=hooks.memory_chars,
            budget=hooks.prompt_budget_chars,
            max_items=hooks.prompt_max_memories if max_items is None else max_items)

    def _lookups(self, memories: list[Memory], names: list[str],
                 replaced: dict[str, Memory] | None = None) -> construct.Lookups:
        """What the layout reads from the store for `memories`."""
        conn, ids = self.core.db.reader(), [m.id for m in memories]
        return construct.Lookups(
            where={mid: (x["path"], x["start_line"], x["end_line"])
                   for mid, x in files_store.lines_of(conn, ids).items()},
            mentions=graph_store.mentions_of(conn, ids),
            skip_entities=frozenset(" ".join(n.split()).lower() for n in names),
            replaced=replaced or {})

    def _project_sections(self, project: str, memories: list[Memory], names: list[str]
                          ) -> list[Section]:
        """The project's memories at session start, laid out as the prompt block is (entity
        blocks, file chunks with their lines, turns by session); one-line memories go under
        "Project NAME"."""
        title = f"Project {project}"
        sections = construct.build(memories, self._lookups(memories, names),
                                   self.core.config.hooks.memory_chars)
        for sec in sections:
            if sec.items and sec.title in ("", "Other memories"):
                sec.title = title
        return sections

    def _recap(self, state: Mapping[str, Any], caller: Caller) -> list[Section]:
        """The recap of the project's last sessions (never this one; decisions only those the
        caller may see), within a third of the session-start budget and the recovery one."""
        project, key = state.get("project_normalized"), state["session_key"]
        room = min(self.core.config.memory.pipeline_v2.continuity.recovery_budget_chars,
                   self.core.config.hooks.session_start_budget_chars // 3)
        if not project or room < recaps.MIN_CHARS:
            return []
        names, visible, past = self.sessions.project_names(state), visibility_clause(caller), []
        for row in store.recent_sessions(self.core.db.reader(), project, key, recaps.MAX_SESSIONS):
            other = row["session_key"]
            self.sessions.checkpoint_queue.flush(other)
            conn = self.core.db.reader()
            cp = store.latest_checkpoint(conn, session_key=other)
            last = row["ended_at"] or row["updated_at"]
            past.append(recaps.PastSession(
                key=other, last_at=last, started_at=row["started_at"],
                ended=bool(row["ended_at"]), prompt_count=row["prompt_count"], cwd=row["cwd"],
                recent_prompts=row["recent_prompts"], digest=cp["digest"] if cp else None,
                decisions=store.session_decisions(conn, other, names, row["started_at"], last,
                                                  visible, DECISION_TYPES),
                turns=store.last_turns(conn, other, visible)))
        got = recaps.recap(past, room)
        return [Section("Previous sessions", text=got[0], text_ids=got[1])] if got else []

    # -- session start -------------------------------------------------------------------
    def hook_session_start(self, req: SessionStartRequest) -> SessionStartAnswer:
        hooks = self.core.config.hooks
        state = self.sessions.ensure_session(req)
        self.files.note_root(req.cwd)  # the project's memory files are synced first
        key = state["session_key"]
        source = (req.source or "startup").lower()
        names = self.sessions.project_names(state)
        project = state.get("project")
        header = session_header(project)
        sections: list[Section] = []
        recovered = None
        if source in RECOVER_SOURCES or state["compaction_pending"]:
            room = hooks.session_start_budget_chars - len(header) - 8
            recovered = self.sessions.recovery_for(state, budget=room,
                                          project_fallback=source == "resume")
            if recovered:
                sections.append(Section("Recovered", text=recovered[0]))
        if recovered is None:  # nothing of this session to recover: where the last ones stood
            sections += self._recap(state, req.caller())
        conn = self.core.db.reader()
        cap, chars = hooks.session_start_max_memories, hooks.memory_chars
        caller = req.caller()
        visible = visibility_clause(caller)  # the hook reads as its agent / user, or global
        pinned = store.context_memories(conn, names, pinned=True, limit=cap, visible=visible)
        decisions = store.context_memories(conn, names, types=DECISION_TYPES, order="recent",
                                           limit=10, visible=visible)
        best: dict[str, Memory] = {}
        if project:
            best = {m.id: m for m in store.context_memories(conn, names, only_project=True,
                                                            limit=10, visible=visible)}
            for hit in self._search(project, names, 10, caller=caller, no_turns=True):
                if self._relevant(hit, hooks.prompt_min_relevance):
                    best.setdefault(hit.memory.id, hit.memory)
        # a statement that a newer one among them contradicts is never handed over
        current, _ = current_only([*pinned, *decisions, *best.values()])
        alive = {m.id for m in current}
        pinned, decisions = ([m for m in ms if m.id in alive] for ms in (pinned, decisions))
        sections += [memory_section("Pinned", pinned, chars),
                     memory_section("Decisions and rules", decisions, chars)]
        if project:
            sections += self._project_sections(
                project, [m for m in best.values() if m.id in alive], names)
        text, ids = render(header, sections, hooks.session_start_budget_chars, cap)
        now = utcnow()
        with self.core.db.write_tx() as w:
            fields: dict[str, Any] = {}
            if source in RESET_SOURCES:
                fields["context_reset_at"] = now
            if recovered or source in RECOVER_SOURCES:
                fields["compaction_pending"] = 0
            store.update_state(w, key, **fields)
            if ids:
                store.record_injected(w, key, ids, now)
        self._touch(ids)
        return {
            "session_key": key, "project": project, "source": source, "context": text,
            "memories": ids, "recovered": recovered is not None,
            "checkpoint_id": recovered[1]["id"] if recovered else None, "chars": len(text),
        }

    def _touch(self, memory_ids: list[str]) -> None:
        """Injected memories count as accessed: decay's anchor moves. Not as recalled: the
        access boost counts explicit recalls only (an injection is the ranking's own choice)."""
        if not memory_ids:
            return
        seqs = memory_reads.seqs_of(self.core.db.reader(), memory_ids)
        self.core.access.record(seqs)

    # -- prompt submit -------------------------------------------------------------------
    def hook_user_prompt_submit(self, req: PromptSubmitRequest) -> PromptAnswer:
        hooks = self.core.config.hooks
        state = self.sessions.ensure_session(req)
        key = state["session_key"]
        prompt = scrub(req.prompt).strip()
        names = self.sessions.project_names(state)
        count = state["prompt_count"] + 1
        recent = list(state["recent_prompts"])
        queries = list(state["memory_queries"])
        if prompt:
            recent = union_capped(recent, [clip(prompt, 300)], 10)
        parts: list[str] = []
        recovered = None
        if state["compaction_pending"]:  # a compaction-complete with no session start since
            recovered = self.sessions.recovery_for(state, budget=10_000)
            if recovered:
                parts.append(recovered[0])
        hits: list[Hit] = []
        ids: list[str] = []
        wanted = hooks.prompt_max_memories > 0 and hooks.prompt_budget_chars > 0
        if wanted and len(prompt) >= MIN_PROMPT_CHARS:
            queries = union_capped(queries, [clip(prompt)], 20)
            held = store.injected_ids(self.core.db.reader(), key, state["context_reset_at"])
            hits = self._search(prompt[:2000], names, max(20, 4 * hooks.prompt_max_memories),
                                caller=req.caller(), skip_session=key)
            held |= self.feedback.suppressed_for_prompt(prompt)  # rated unhelpful for this prompt
            fresh, replaced = self._choose(hits, held, prompt[:2000])
            block, ids = self._prompt_block(prompt, fresh, names, replaced=replaced)
            if block:
                parts.append(block)
        now = utcnow()
        with self.core.db.write_tx() as w:
            store.update_state(w, key, prompt_count=count, recent_prompts=recent,
                               memory_queries=queries,
                               **({"compaction_pending": 0} if recovered else {}))
            store.record_hits(w, key, [h.memory.id for h in hits])
            if ids:
                store.record_injected(w, key, ids, now)
        self._touch(ids)
        # the ranker's pairs, at the end
        self.feedback.note_injected(key, prompt[:2000], ids, req.caller())
        checkpoint = self._periodic(key)
        fresh_state = store.get_state(self.core.db.reader(), key) or state
        ingest = None
        if self.sessions.session_delta_due(fresh_state):
            ingest = self.sessions.queue_session_ingest(
                fresh_state, path=fresh_state["transcript_path"], trigger="prompt")
        text = "\n\n".join(p.strip() for p in parts) + ("\n" if parts else "")
        return {"session_key": key, "context": text, "memories": ids, "prompt_count": count,
            "recovered": recovered is not None, "checkpoint": checkpoint, "ingest": ingest,
            "candidates": len(hits)}

    def _periodic(self, key: str) -> str | None:
        """Fire the periodic trigger every `promptInterval` prompts or `timeIntervalMs`."""
        cont = self.core.config.memory.pipeline_v2.continuity
        if not cont.enabled:
            return None
        state = store.get_state(self.core.db.reader(), key)
        if state is None:
            return None
        since = state["prompt_count"] - state["checkpoint_prompt_count"]
        if since <= 0:
            return None
        waited = minutes_since(state["last_checkpoint_at"] or state["started_at"],
                               parse_ts(utcnow()))
        due_by_time = waited is not None and waited * 60_000 >= cont.time_interval_ms
        if since < cont.prompt_interval and not due_by_time:
            return None
        draft = self.sessions.draft_for(state, "periodic")
        self.sessions.write_checkpoint(state, draft, immediate=False)
        return "queued"

    # -- compaction ----------------------------------------------------------------------
    def hook_pre_compaction(self, req: PreCompactionRequest) -> PreCompactionAnswer:
        state = self.sessions.ensure_session(req)
        path = req.transcript_path or state["transcript_path"]
        act = self._transcript_activity(path)
        ingest = self.sessions.queue_session_ingest(state, path=path, trigger="pre_compaction")
        checkpoint_id = None
        if self.core.config.memory.pipeline_v2.continuity.enabled:
            draft = self.sessions.draft_for(state, "pre_compaction", act,
                                            note=req.custom_instructions)
            checkpoint_id = self.sessions.write_checkpoint(state, draft, immediate=True)
        with self.core.db.write_tx() as w:
            store.update_state(w, state["session_key"], compactions=state["compactions"] + 1)
        return {
            "session_key": state["session_key"], "checkpoint_id": checkpoint_id,
            "trigger": req.trigger, "ingest": ingest,
            "instructions": pre_compaction_instructions(checkpoint_id,
                                                        act.files if act else []),
        }

    def hook_compaction_complete(self, req: CompactionCompleteRequest
                                 ) -> CompactionCompleteAnswer:
        state = self.sessions.ensure_session(req)
        with self.core.db.write_tx() as w:
            store.update_state(w, state["session_key"], compaction_pending=1,
                               context_reset_at=utcnow())
        return {"session_key": state["session_key"], "recovery_pending": True}

    # -- session end ---------------------------------------------------------------------
    def hook_session_end(self, req: SessionEndRequest) -> SessionEndAnswer:
        """Answers at once: the transcript is read into turn memories (and kept losslessly)
        in the background; the checkpoint takes the working state from its tail."""
        state = self.sessions.ensure_session(req)
        key = state["session_key"]
        path = req.transcript_path or state["transcript_path"]
        if req.transcript:
            tail = req.transcript[-TAIL_BYTES:]
            act = activity(parse_jsonl(tail)) if looks_like_jsonl(req.transcript) else None
            ingest = self.sessions.queue_session_ingest(state, body=req.transcript,
                                               trigger="session_end", final=True)
        else:
            act = self._transcript_activity(path)
            ingest = self.sessions.queue_session_ingest(state, path=path, trigger="session_end",
                                               final=True)
        checkpoint_id = None
        if self.core.config.memory.pipeline_v2.continuity.enabled:
            draft = self.sessions.draft_for(state, "session_end", act)
            checkpoint_id = self.sessions.write_checkpoint(state, draft, immediate=True)
        summary = self.queue_summary(state, req.reason, checkpoint_id)
        with self.core.db.write_tx() as w:
            store.update_state(w, key, ended_at=utcnow())
        try:  # learning is a side effect: the session end itself must not fail on it
            learned = self.feedback.session_feedback(key)
        except Exception:
            log.exception("session feedback failed for %s", key)
            learned = None
        return {"session_key": key, "checkpoint_id": checkpoint_id,
                "summary_job": summary.get("job_id"), "summary": summary,
                "transcript": ingest, "feedback": learned}

    def queue_summary(self, state: Mapping[str, Any], reason: str | None,
                      checkpoint_id: str | None) -> SummaryQueued:
        """A summary job when an LLM can write it; otherwise none, and why (no job waits
        forever for an LLM that is not configured)."""
        cfg = self.core.config.memory.pipeline_v2
        why_not = summary_unavailable(cfg)
        if why_not:
            return {"queued": False, "reason": why_not}
        key = state["session_key"]
        payload = {"session_key": key, "harness": state.get("harness"),
                   "project": state.get("project"), "reason": reason,
                   "checkpoint_id": checkpoint_id, "prompt_count": state["prompt_count"]}
        with self.core.db.write_tx() as w:
            job_id = store.pending_summary_job(w, key) or jobs.enqueue(
                w, "summary", payload=payload, check_existing=False,
                max_attempts=cfg.worker.max_retries)
        return {"queued": True, "job_id": job_id}

