"""Session checkpoints: the flush queue's lifecycle, drafts built from a session's state, the
recovery digest, and the `/api/checkpoints` operations (docs/sessions.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from mnemonist.model.answers_sessions import (
    Checkpoint,
    CheckpointCreated,
    CheckpointListAnswer,
    CheckpointStatus,
    LatestCheckpoint,
    SessionState,
)
from mnemonist.model.hooks import CheckpointRequest, HookRequest
from mnemonist.model.memory import utcnow
from mnemonist.service.base import ServiceCore
from mnemonist.service.errors import BadRequest, NotFound
from mnemonist.service.part import Part
from mnemonist.sessions.digest import (
    TRIGGERS,
    CheckpointDraft,
    capped,
    clip,
    format_digest,
    recovery_digest,
)
from mnemonist.sessions.queue import CheckpointQueue, scrub
from mnemonist.sessions.transcript import Activity, normalize_project, project_of
from mnemonist.store import sessions as store


class CheckpointOps(Part):
    def __init__(self, core: ServiceCore) -> None:
        super().__init__(core)
        self.checkpoint_queue = CheckpointQueue(
            self.core.db, self.core.config.memory.pipeline_v2.continuity
        )

    def start(self) -> None:
        """The checkpoint queue's flusher (after the core's workers: MemoryService.start)."""
        self.checkpoint_queue.start()

    def stop(self) -> None:
        self.checkpoint_queue.stop()

    def checkpoint_status(self) -> CheckpointStatus:
        """The `sessions` part of /api/status: sessions tracked, checkpoints, transcripts and
        the checkpoint queue."""
        conn = self.core.db.reader()
        q = self.checkpoint_queue
        counts = store.tracking_counts(conn)
        return {
            "tracked": counts["tracked"], "checkpoints": counts["checkpoints"],
            "transcripts": counts["transcripts"],
            "checkpoint_queue": {"pending": q.pending(), "written": q.written,
                                 "merged": q.merged, "pruned": q.pruned,
                                 "last_error": q.last_error},
        }

    # -- sessions ------------------------------------------------------------------------
    def ensure_session(self, req: HookRequest | CheckpointRequest) -> SessionState:
        """The session's state row, created on the first event a session sends."""
        key = req.session_id if isinstance(req, HookRequest) else req.session_key
        state = store.get_state(self.core.db.reader(), key)
        transcript = getattr(req, "transcript_path", None)
        if state is not None and (state["project"] or not (req.cwd or req.project)) and (
            state["transcript_path"] or not transcript
        ):
            return cast(SessionState, state)
        name, normalized, _root = project_of(req.cwd)
        if req.project:
            name, normalized = req.project, normalize_project(req.project)
        with self.core.db.write_tx() as conn:
            if state is None:
                store.create_state(
                    conn, key, harness=req.harness, project=name,
                    project_normalized=normalized, cwd=req.cwd, transcript_path=transcript,
                )
            else:
                store.update_state(
                    conn, key, project=state["project"] or name,
                    project_normalized=state["project_normalized"] or normalized,
                    cwd=state["cwd"] or req.cwd,
                    transcript_path=state["transcript_path"] or transcript,
                )
        fresh = store.get_state(self.core.db.reader(), key)
        assert fresh is not None
        return cast(SessionState, fresh)

    @staticmethod
    def project_names(state: Mapping[str, Any]) -> list[str]:
        """Spellings a memory's `project` may use for this session's project."""
        _, _, root = project_of(state.get("cwd"))
        names = [state.get("project"), state.get("project_normalized"), root, state.get("cwd")]
        return list(dict.fromkeys(n for n in names if n))

    def draft_for(
        self, state: Mapping[str, Any], trigger: str, activity: Activity | None = None,
        note: str | None = None,
    ) -> CheckpointDraft:
        """What a trigger knows now: the state's counts and prompts, the session's remembers
        and, when a transcript was read, its working state. Every text is scrubbed here,
        before the digest clips it (a private key cut to its first line would pass)."""
        key = state["session_key"]
        remembers = store.session_remembers(
            self.core.db.reader(), key, self.project_names(state), state["started_at"]
        )
        prompts = activity.prompts if activity and activity.prompts else state["recent_prompts"]
        return CheckpointDraft(
            session_key=key,
            trigger=trigger,
            harness=state.get("harness"),
            project=state.get("project"),
            project_normalized=state.get("project_normalized"),
            prompt_count=max(0, state["prompt_count"] - state["checkpoint_prompt_count"]),
            total_prompts=state["prompt_count"],
            started_at=state["started_at"],
            recent_prompts=[scrub(p) for p in prompts],
            memory_queries=[scrub(q) for q in state["memory_queries"]],
            recent_remembers=[clip(scrub(r)) for r in remembers],
            files=[scrub(f) for f in activity.files] if activity else [],
            tools=[scrub(t) for t in activity.tools] if activity else [],
            errors=[scrub(e) for e in activity.errors] if activity else [],
            last_reply=scrub(activity.last_reply) if activity and activity.last_reply else None,
            note=scrub(note) if note else note,
        )

    def write_checkpoint(
        self, state: Mapping[str, Any], draft: CheckpointDraft, *, immediate: bool
    ) -> str | None:
        """Queue (or write) a checkpoint and move the session's checkpoint marks. A checkpoint
        written now that would say exactly what the session's latest says (a session-end hook
        sent twice) is not written again: the latest one's id is the answer."""
        repeated = self._same_as_latest(draft) if immediate else None
        checkpoint_id = repeated or self.checkpoint_queue.submit(draft, immediate=immediate)
        with self.core.db.write_tx() as conn:
            store.update_state(conn, state["session_key"],
                               checkpoint_prompt_count=state["prompt_count"],
                               last_checkpoint_at=utcnow())
        return checkpoint_id

    def _same_as_latest(self, draft: CheckpointDraft) -> str | None:
        """The id of the session's latest checkpoint when `draft` would repeat it: same
        trigger, same digest apart from the time it is written at. None when a draft of the
        session waits in the queue (it would be merged into this one)."""
        if self.checkpoint_queue.pending(draft.session_key):
            return None
        latest = store.latest_checkpoint(self.core.db.reader(), session_key=draft.session_key)
        if latest is None or latest["trigger"] != draft.trigger:
            return None
        then = capped(replace(draft, created_at=latest["created_at"]))
        return latest["id"] if scrub(format_digest(then)) == latest["digest"] else None

    def recovery_for(
        self, state: Mapping[str, Any], *, budget: int, project_fallback: bool = False
    ) -> tuple[str, Checkpoint] | None:
        """The recovery digest of the session's latest checkpoint (or, after a resume under a
        new session id, of the project's), within `budget` characters."""
        key = state["session_key"]
        self.checkpoint_queue.flush(key)
        conn = self.core.db.reader()
        cp = store.latest_checkpoint(conn, session_key=key)
        if cp is None and project_fallback and state.get("project_normalized"):
            cp = store.latest_checkpoint(conn, project=state["project_normalized"])
        if cp is None:
            return None
        cont = self.core.config.memory.pipeline_v2.continuity
        limit = max(0, min(cont.recovery_budget_chars, budget))
        if limit < 100:
            return None
        return (recovery_digest(cp["digest"], cp["trigger"], cp["created_at"], limit),
                cast(Checkpoint, cp))

    # -- /api/checkpoints ----------------------------------------------------------------
    def list_checkpoints(
        self, *, session_key: str | None = None, project: str | None = None,
        trigger: str | None = None, limit: int = 50, offset: int = 0,
    ) -> CheckpointListAnswer:
        if trigger is not None and trigger not in TRIGGERS:
            raise BadRequest(f"trigger must be one of {', '.join(TRIGGERS)}", field="trigger")
        if not 1 <= limit <= 500 or offset < 0:
            raise BadRequest("limit must be 1–500 and offset ≥ 0", field="limit")
        self.checkpoint_queue.flush(session_key)
        items, total = store.list_checkpoints(
            self.core.db.reader(), session_key=session_key, project=project, trigger=trigger,
            limit=limit, offset=offset,
        )
        return {"checkpoints": cast(list[Checkpoint], items), "total": total, "limit": limit,
                "offset": offset,
                "has_more": offset + len(items) < total}

    def latest_checkpoint(
        self, session_key: str | None = None, project: str | None = None
    ) -> LatestCheckpoint:
        if not session_key and not project:
            raise BadRequest("give session_key or project", field="session_key")
        self.checkpoint_queue.flush(session_key)
        cp = store.latest_checkpoint(self.core.db.reader(), session_key=session_key,
                                     project=project)
        if cp is None:
            raise NotFound(f"no checkpoint for {session_key or project}")
        budget = self.core.config.memory.pipeline_v2.continuity.recovery_budget_chars
        cp["recovery"] = recovery_digest(cp["digest"], cp["trigger"], cp["created_at"], budget)
        return cast(LatestCheckpoint, cp)

    def create_checkpoint(self, req: CheckpointRequest) -> CheckpointCreated:
        """An explicit checkpoint is written now; an agent checkpoint joins the flush queue."""
        state = self.ensure_session(req)
        draft = self.draft_for(state, req.trigger, note=req.note)
        if req.harness:
            draft.harness = req.harness
        # scrubbed before clipped: a key block cut to one line no longer looks like one
        draft.memory_queries = [*draft.memory_queries,
                                *(clip(scrub(q)) for q in req.memory_queries)]
        draft.recent_remembers = [*draft.recent_remembers,
                                  *(clip(scrub(r)) for r in req.recent_remembers)]
        draft.prompt_count += req.prompt_count
        draft.total_prompts += req.prompt_count
        immediate = req.trigger == "explicit"
        checkpoint_id = self.write_checkpoint(state, draft, immediate=immediate)
        if checkpoint_id is None:
            return {"queued": True, "session_key": state["session_key"], "trigger": req.trigger}
        cp = store.get_checkpoint(self.core.db.reader(), checkpoint_id)
        return cast(CheckpointCreated, {"queued": False, **(cp or {"id": checkpoint_id})})
