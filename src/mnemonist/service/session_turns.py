"""Session transcripts become turn memories, incrementally and without an LLM.

Hooks only queue the work (`queue_session_ingest`): the hook answers at once whatever the
transcript's size, and a background worker (`ingest.sessions`) calls `ingest_session`, which
reads the lines added since the last read, turns what the user and the assistant said into
memories (`source_type` 'session', `source_id` the session key, `occurred_at` each message's
own time, the session's project, scrubbed like every write), appends the lines to the
session's lossless transcript and moves the read position — all idempotent: every turn's
`idempotency_key` comes from its position, so a re-read, a re-ended or resumed session adds
nothing twice.

The significance gate: a session is indexed once it holds `sessions.min_substantive_turns`
turns that say something (greetings and acknowledgements do not count). Until then it is
re-read from the start at each trigger (it is short by definition); a session that ends below
the gate is `skipped` with the reason, and indexed after all if it is resumed and grows.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mnemonist.model.answers_reads import MemoryRow
from mnemonist.model.answers_sessions import (
    Checkpoint,
    IngestQueued,
    SessionAnswer,
    SessionListAnswer,
    SessionMemory,
    SessionReadAnswer,
    SessionsStatus,
    SessionState,
)
from mnemonist.model.memory import utcnow
from mnemonist.model.requests import Caller, parse_when
from mnemonist.pipeline.summary_worker import summary_unavailable
from mnemonist.search.filters import visible_ids
from mnemonist.service.base import ServiceCore
from mnemonist.service.checkpoints import CheckpointOps
from mnemonist.service.errors import NotFound
from mnemonist.sessions.reader import (
    TranscriptRefused,
    allowed_roots,
    read_new_lines,
    resolve,
    take_lines,
)
from mnemonist.sessions.transcript import MAX_TRANSCRIPT_BYTES, flatten, parse_jsonl
from mnemonist.sessions.turns import SessionTurn, is_substantive, speakers, turns_of_lines
from mnemonist.store import jobs
from mnemonist.store import session_turns as store
from mnemonist.store import sessions as sessions_store
from mnemonist.store.memories import NewMemory
from mnemonist.store.row_ids import memory_id
from mnemonist.text.normalize import normalize_and_hash
from mnemonist.text.scrub import (
    MIN_GENERIC_VALUE_LEN,
    is_secret_key,
    marker,
    scrub_credentials,
    scrub_deep,
)

if TYPE_CHECKING:
    from mnemonist.service.parts import Memories

log = logging.getLogger(__name__)

ACTOR = "session-ingest"
TURN_TYPE = "episodic"
BATCH = 16  # turns per write transaction: the writer lock is never held for long


class Sessions(CheckpointOps):
    """Sessions: their transcripts read into turn memories (through `memories`), their
    checkpoints (service/checkpoints.py), and what is kept of them."""

    _session_wake: Callable[[], None] | None = None

    def __init__(self, core: ServiceCore, memories: Memories) -> None:
        super().__init__(core)
        self.memories = memories

    def set_session_waker(self, wake: Callable[[], None] | None) -> None:
        self._session_wake = wake

    # -- queueing (hooks) ----------------------------------------------------------------
    def transcript_roots(self) -> list[Path]:
        return allowed_roots(self.core.config.hooks.transcript_roots)

    def queue_session_ingest(self, state: Mapping[str, Any], *, path: str | None = None,
                             body: str | None = None, trigger: str,
                             final: bool = False) -> IngestQueued:
        """Queue a read of the session's transcript (a file the daemon may read, or the text
        the harness sent). Returns what was queued, or why nothing was."""
        if not self.core.config.sessions.enabled:
            return {"queued": False, "reason": "sessions.enabled is false"}
        key = state["session_key"]
        if body is None:
            if not path:
                return {"queued": False, "reason": "no transcript_path"}
            try:
                resolve(path, self.transcript_roots())
            except TranscriptRefused as exc:
                return {"queued": False, "reason": str(exc)}
        payload: dict[str, Any] = {"session_key": key, "trigger": trigger, "final": final}
        if body is not None:
            payload["body"] = scrub_transcript_body(body)  # the payload is stored as it is
        else:
            payload["path"] = path
        with self.core.db.write_tx() as conn:
            waiting = store.queued_job(conn, key)
            if waiting is not None:  # one pending read per session: fold this one in
                before = json.loads(waiting["payload"] or "{}")
                payload["final"] = final or bool(before.get("final"))
                if body is None and "body" in before and "path" not in payload:
                    payload["body"] = before["body"]
                store.set_payload(conn, waiting["id"], payload)
                job_id = waiting["id"]
            else:
                job_id = jobs.enqueue(conn, store.JOB_TYPE, payload=payload,
                                      check_existing=False,
                                      max_attempts=self.core.config.memory.pipeline_v2.worker
                                      .max_retries)
            store.upsert(conn, key, path=path, project=state.get("project"),
                         harness=state.get("harness"),
                         prompts_at_ingest=state.get("prompt_count", 0),
                         **({"ended": 1} if final else {}))
        if self._session_wake is not None:
            self._session_wake()
        return {"queued": True, "job_id": job_id, "trigger": trigger}

    def session_delta_due(self, state: Mapping[str, Any]) -> bool:
        """Prompt submit's periodic trigger: every `delta_prompts` prompts, or as soon as the
        transcript file grew by `delta_bytes` since the last read."""
        cfg = self.core.config.sessions
        if not cfg.enabled or not state.get("transcript_path"):
            return False
        row = store.get(self.core.db.reader(), state["session_key"])
        done = row["prompts_at_ingest"] if row else 0
        if state["prompt_count"] - done >= cfg.delta_prompts:
            return True
        try:
            real = resolve(state["transcript_path"], self.transcript_roots())
            return real.stat().st_size - (row["byte_offset"] if row else 0) >= cfg.delta_bytes
        except (TranscriptRefused, OSError):
            return False

    # -- reading (the worker) ------------------------------------------------------------
    def ingest_session(self, payload: dict[str, Any]) -> SessionReadAnswer:
        """Read what is new in a session's transcript into turn memories (see the module)."""
        started = time.perf_counter()
        key = str(payload["session_key"])
        final = bool(payload.get("final"))
        row = store.get(self.core.db.reader(), key) or {}
        indexed = row.get("status") == "indexed"
        offset, first_line = (row.get("byte_offset", 0), row.get("next_line", 0)) if indexed \
            else (0, 0)
        data = payload.get("body")
        if data is not None:
            raw = str(data).encode("utf-8")
            if len(raw) < offset:
                offset, first_line = 0, 0
            chunk = take_lines(raw[offset:], offset, first_line, final=final)
        else:
            try:
                real = resolve(str(payload.get("path") or ""), self.transcript_roots())
            except TranscriptRefused as exc:
                return {"skipped": str(exc)}
            if real.stat().st_size < offset:  # rewritten shorter: read it again from the start
                offset, first_line = 0, 0
            chunk = read_new_lines(real, offset, first_line, final=final,
                                   max_bytes=MAX_TRANSCRIPT_BYTES)
        turns = turns_of_lines(key, chunk.lines)
        substantive = (row.get("substantive", 0) if indexed else 0) + sum(
            1 for t in turns if is_substantive(t))
        state = self._session_row(key)
        project, harness = state.get("project"), state.get("harness")
        gate = self.core.config.sessions.min_substantive_turns
        flat = flatten(parse_jsonl("\n".join(text for _, text in chunk.lines)))
        transcript = scrub_credentials(flat).text if flat.strip() else ""
        if not indexed and substantive < gate:
            status = "skipped" if final else "pending"
            reason = (f"{substantive} substantive turn(s), fewer than"
                      f" sessions.min_substantive_turns ({gate})")
            with self.core.db.write_tx() as conn:
                self._keep_transcript(conn, key, transcript, harness, project, replace=True)
                store.upsert(conn, key, status=status, reason=reason, substantive=substantive,
                             project=project, harness=harness)
            return {"session_key": key, "status": status, "reason": reason, "written": 0}
        written = deduplicated = 0
        when = row.get("last_at") or state.get("started_at") or utcnow()
        units = group_turns(turns, self.core.config.sessions.messages_per_memory)
        names = speakers(turns, store.speakers(self.core.db.reader(), key))
        for start in range(0, len(units), BATCH):
            with self.core.db.write_tx() as conn:
                for turn in units[start:start + BATCH]:
                    new = self._turn_memory(key, turn, project, when, names)
                    if new is None:
                        continue
                    when = new.occurred_at
                    out = self.memories.insert_or_existing(conn, new, ACTOR, [], derive=False)
                    written += out["created"]
                    deduplicated += not out["created"]
        firsts = [t.timestamp for t in turns if t.timestamp]
        with self.core.db.write_tx() as conn:
            self._keep_transcript(conn, key, transcript, harness, project,
                                  replace=offset == 0)
            store.upsert(
                conn, key, status="indexed", reason=None, byte_offset=chunk.end,
                next_line=chunk.next_line, substantive=substantive,
                turns=(row.get("turns", 0) if indexed else 0) + written,
                first_at=row.get("first_at") if indexed and row.get("first_at") else (
                    _ts(firsts[0]) if firsts else None),
                last_at=when, project=project, harness=harness,
            )
        return {"session_key": key, "status": "indexed", "lines": len(chunk.lines),
                "turns": len(turns), "written": written, "deduplicated": deduplicated,
                "took_ms": round((time.perf_counter() - started) * 1000, 1)}

    def _session_row(self, key: str) -> dict[str, Any]:
        return sessions_store.state_origin(self.core.db.reader(), key)

    def _keep_transcript(self, conn: sqlite3.Connection, key: str, text: str, harness: str | None,
                         project: str | None, *, replace: bool) -> None:
        """The lossless copy: replaced when the whole transcript was read, else appended."""
        if not text:
            return
        if replace:
            store.delete_transcript(conn, key)
        store.append_transcript(conn, key, text, harness, project)

    def _turn_memory(self, key: str, turn: SessionTurn, project: str | None,
                     previous: str, names: set[str]) -> NewMemory | None:
        scrubbed = scrub_credentials(turn.text)
        limit = self.core.config.memory.max_content_chars
        text = scrubbed.text if len(scrubbed.text) <= limit else scrubbed.text[:limit - 1] + "…"
        norm = normalize_and_hash(text)
        if not norm.storage:
            return None
        at = _ts(turn.timestamp) or previous
        return NewMemory(
            id=memory_id(), content=norm.storage, normalized_content=norm.normalized,
            content_hash=norm.content_hash, type=TURN_TYPE,
            importance=self.core.config.sessions.importance, tags=[], pinned=False,
            who=turn.speaker(names), why=None, project=project,
            source_type=store.SOURCE_TYPE, source_id=key,
            idempotency_key=f"{key}/{turn.key}", occurred_at=at, created_at=utcnow(),
        )

    # -- reading what was kept ----------------------------------------------------------
    def list_sessions(self, *, project: str | None = None, limit: int = 50,
                      offset: int = 0) -> SessionListAnswer:
        items, total = store.list_sessions(self.core.db.reader(), project=project, limit=limit,
                                           offset=offset)
        return {"sessions": items, "total": total, "limit": limit, "offset": offset,
                "has_more": offset + len(items) < total}

    def get_session(self, session_key: str, *, turns: int = 200, offset: int = 0,
                    transcript: bool = False, caller: Caller | None = None) -> SessionAnswer:
        """A session: its state, what was read of it, its turns (in order), checkpoints,
        what it was given, and with `transcript` the lossless transcript.

        `injected` lists only the memories `caller` may see (None: global ones): another
        agent's or user's private memory given to their session is not named to others."""
        conn = self.core.db.reader()
        state = sessions_store.get_state(conn, session_key)
        ingest = store.get(conn, session_key)
        if state is None and ingest is None:
            raise NotFound(f"no session {session_key}")
        items, total = store.turns(conn, session_key, limit=turns, offset=offset)
        checkpoints, _ = sessions_store.list_checkpoints(conn, session_key=session_key,
                                                         limit=100)
        out: SessionAnswer = {
            "session_key": session_key, "state": cast(SessionState | None, state),
            "ingest": ingest, "turns": [cast(MemoryRow, m.to_public()) for m in items],
            "turns_total": total, "turns_offset": offset,
            "checkpoints": cast(list[Checkpoint], checkpoints),
            "injected": self._visible_injected(conn, session_key, caller),
        }
        if transcript:
            out["transcript"] = store.transcript(conn, session_key)
        return out

    @staticmethod
    def _visible_injected(conn: Any, session_key: str,
                          caller: Caller | None) -> list[SessionMemory]:
        given = sessions_store.session_memories(conn, session_key)
        seen = visible_ids(conn, [r["memory_id"] for r in given], caller)
        return [cast(SessionMemory, r) for r in given if r["memory_id"] in seen]

    # -- status --------------------------------------------------------------------------
    def sessions_status(self) -> SessionsStatus:
        """The `sessions` part of /api/status: the checkpoints' counts, the sessions indexed
        as turns, and how many are being read."""
        conn = self.core.db.reader()
        counts = store.counts(conn)
        return {**self.checkpoint_status(), "indexed": counts["indexed"],
                "pending": counts["pending"], "skipped": counts["skipped"],
                "turns": counts["turns"], "reading": store.unfinished_jobs(conn)}

    def explain(self, status: Mapping[str, Any]) -> list[str]:
        """What the daemon is doing and why it is idle, as sentences for `mnemonist status`."""
        cfg = self.core.config.memory.pipeline_v2
        lines: list[str] = []
        why = summary_unavailable(cfg)
        pending = {t: c.get("pending", 0) + c.get("leased", 0)
                   for t, c in status.get("jobs", {}).items()}
        if why:
            waiting = pending.get("extract", 0)
            lines.append(f"LLM pipeline idle: {why}. New memories are not queued for"
                         " extraction"
                         + (f"; {waiting} extract job(s) queued earlier wait until an LLM is"
                            " configured." if waiting else "."))
        else:
            reason = status.get("pipeline", {}).get("waiting_reason")
            lines.append(f"LLM pipeline: {cfg.extraction.provider}"
                         + (f", waiting: {reason}" if reason else ", running"))
        s = status.get("sessions", {})
        if self.core.config.sessions.enabled:
            lines.append(
                f"sessions: {s.get('indexed', 0)} indexed as {s.get('turns', 0)} turns,"
                f" {s.get('skipped', 0)} skipped by the significance gate, {s.get('pending', 0)}"
                f" below it so far, {s.get('reading', 0)} being read")
        else:
            lines.append("sessions: not indexed (sessions.enabled: false)")
        return lines

    # -- waiting (tests, benchmarks) -----------------------------------------------------
    def wait_sessions(self, timeout: float) -> bool:
        """Wait until no session read is queued or running (False at the timeout)."""
        deadline = time.monotonic() + timeout
        while store.unfinished_jobs(self.core.db.reader()):
            if time.monotonic() >= deadline:
                return False
            if self._session_wake is not None:
                self._session_wake()
            time.sleep(0.05)
        return True


def group_turns(turns: list[SessionTurn], size: int) -> list[SessionTurn]:
    """Consecutive messages joined `size` at a time into one memory (tool lines stay alone);
    the group's key is its first message's key plus `+n`, its speaker the first one's when
    all share it."""
    if size <= 1:
        return turns
    out: list[SessionTurn] = []
    group: list[SessionTurn] = []

    def close() -> None:
        if not group:
            return
        first = group[0]
        text = "\n".join(t.text for t in group)
        voices = {t.speaker() for t in group}
        role = first.role if len(voices) == 1 else "group"
        out.append(SessionTurn(f"{first.key}+{len(group)}", first.line, role, text,
                               first.timestamp, speaker_override=None if len(voices) == 1
                               else "conversation"))
        group.clear()

    for t in turns:
        if t.role == "tool":
            close()
            out.append(t)
            continue
        group.append(t)
        if len(group) >= size:
            close()
    close()
    return out


def _ts(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return parse_when(value)
    except ValueError:
        return None


def scrub_transcript_body(body: str) -> str:
    """A transcript a hook sent in its body, credentials scrubbed before it is queued (the
    job's payload is stored). Line by line, so the same lines scrub to the same bytes when a
    longer copy of the transcript comes later (the read position stays valid): a JSON line
    stays one valid JSON line (scrubbed as text, or else value by value, a value under a key
    that names a secret replaced whole); a run of other lines is scrubbed as one text (a key
    block spans lines). Every line keeps its number."""
    if not scrub_credentials(body).kinds:
        return body
    out: list[str] = []
    plain: list[str] = []

    def flush() -> None:  # a key block becomes one marker: blank lines keep the numbering
        if plain:
            text = scrub_credentials("\n".join(plain)).text
            out.append(text + "\n" * max(0, len(plain) - 1 - text.count("\n")))
            plain.clear()

    for line in body.split("\n"):
        if not line.lstrip().startswith("{"):
            plain.append(line)
            continue
        flush()
        clean = scrub_credentials(line).text
        if clean != line:
            try:
                json.loads(clean)
            except (ValueError, RecursionError):
                clean = json.dumps(_secret_values_scrubbed(json.loads(line)),
                                   ensure_ascii=False) if _is_json(line) else clean
        out.append(clean)
    flush()
    return "\n".join(out)


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _secret_values_scrubbed(value: Any) -> Any:
    """`scrub_deep`, and a string under a key that names a secret (`"password": "..."`)
    replaced whole."""
    if isinstance(value, dict):
        return {k: marker("secret_assignment") if isinstance(v, str) and is_secret_key(k)
                and len(v) >= MIN_GENERIC_VALUE_LEN else _secret_values_scrubbed(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_secret_values_scrubbed(v) for v in value]
    return scrub_deep(value)
