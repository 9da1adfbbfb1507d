"""modify (batch and PATCH), delete, recover: version-guarded, each with its history event."""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from mnemonist.model.answers import (
    DeleteAnswer,
    ModifyAnswer,
    PatchResult,
    RecoverAnswer,
    with_legacy_keys,
)
from mnemonist.model.memory import Memory, parse_ts, utcnow
from mnemonist.model.requests import (
    Caller,
    DeleteRequest,
    MemoryPatch,
    ModifyRequest,
    RecoverRequest,
)
from mnemonist.service.errors import BadRequest, Conflict, NotFound, Unavailable
from mnemonist.service.lifecycle import immutable_message
from mnemonist.service.part import Part
from mnemonist.store import embeddings, expiry, files, hints, history, memories
from mnemonist.text.normalize import NormalizedContent, normalize_and_hash
from mnemonist.text.scrub import scrub_all, scrub_credentials, scrub_optional

#: patch status -> (HTTP status, error code) for the single-memory PATCH route
PATCH_ERRORS = {
    "invalid": (400, "invalid_request"),
    "not_found": (404, "not_found"),
    "deleted": (409, "memory_deleted"),
    "version_conflict": (409, "version_conflict"),
    "duplicate_content": (409, "duplicate_content"),
    "file_managed": (409, "file_managed"),
    "immutable": (409, "immutable"),
}


def file_managed_error(conn: sqlite3.Connection, memory_ids: list[str]) -> Conflict | None:
    """The 409 for the first of these memories that is a chunk of a memory file (the file is
    the truth: its chunks change when it does), or None."""
    found = files.lines_of(conn, memory_ids)
    for memory_id in memory_ids:
        if memory_id in found:
            where = found[memory_id]
            s, e = where["start_line"], where["end_line"]
            lines = f"line {s}" if s == e else f"lines {s}–{e}"
            return Conflict(f"memory {memory_id} is {lines} of {where['path']}: edit the file;"
                            " the index follows it", code="file_managed", id=memory_id, **where)
    return None


class MutationOps(Part):
    # -- modify --------------------------------------------------------------------------
    def modify(self, req: ModifyRequest) -> ModifyAnswer:
        limit = self.core.config.memory.modify_batch_limit
        if len(req.patches) > limit:
            raise BadRequest(
                f"{len(req.patches)} patches; at most {limit} per call (memory.modify_batch_limit)",
                field="patches",
            )
        for i, patch in enumerate(req.patches):
            if not patch.id:
                raise BadRequest(f"patches[{i}].id is required", field=f"patches[{i}].id")
            if not (patch.reason or req.reason):
                raise BadRequest(
                    f"patches[{i}]: a reason is required (per patch or for the batch)",
                    field=f"patches[{i}].reason",
                )
            if not patch.changes():
                raise BadRequest(f"patches[{i}] changes nothing", field=f"patches[{i}]")
        ids = self.core.resolve_ids([p.id or "" for p in req.patches], caller=req)
        managed = file_managed_error(self.core.db.reader(), ids)
        if managed is not None:  # nothing of the batch is applied
            raise managed
        results = [
            self.apply_patch(memory_id, p, reason=p.reason or req.reason or "",
                             changed_by=req.changed_by)
            for memory_id, p in zip(ids, req.patches, strict=True)
        ]
        updated = sum(r["status"] == "updated" for r in results)
        return {"results": results, "updated": updated, "total": len(results)}

    def patch(self, memory_id: str, patch: MemoryPatch, changed_by: str | None = None,
              caller: Caller | None = None) -> PatchResult:
        """PATCH /api/memory/{id}: one patch; failures raise the matching 4xx."""
        if not patch.reason:
            raise BadRequest("reason is required", field="reason")
        if not patch.changes():
            raise BadRequest("the patch changes nothing", field="body")
        memory_id = self.core.resolve_id(memory_id, caller=caller)
        result = self.apply_patch(memory_id, patch, reason=patch.reason, changed_by=changed_by)
        if result["status"] in PATCH_ERRORS:
            status, code = PATCH_ERRORS[result["status"]]
            kind = {400: BadRequest, 404: NotFound}.get(status, Conflict)
            exc = kind(result["message"], code=code)
            exc.details = {k: v for k, v in result.items() if k not in {"message"}}
            raise exc
        return result

    def apply_patch(
        self, memory_id: str, patch: MemoryPatch, *, reason: str, changed_by: str | None
    ) -> PatchResult:
        if patch.tags is not None or patch.who is not None:  # compared with stored, scrubbed
            patch = patch.model_copy(update={"tags": scrub_all(patch.tags),
                                             "who": scrub_optional(patch.who)})
        before = memories.get(self.core.db.reader(), memory_id)
        managed = file_managed_error(self.core.db.reader(), [memory_id])
        if managed is not None:
            out = self._result(memory_id, "file_managed", before, message=managed.message)
            where = managed.details  # the chunk's path and lines (and its id, already there)
            out["path"] = where["path"]
            out["start_line"] = where["start_line"]
            out["end_line"] = where["end_line"]
            return out
        norm: NormalizedContent | None = None
        vec: np.ndarray | None = None
        if patch.content is not None:
            norm = normalize_and_hash(scrub_credentials(patch.content).text)
            if not norm.storage:
                return self._result(memory_id, "invalid", before, message="content is empty")
            limit = self.core.config.memory.max_content_chars
            if len(norm.storage) > limit:
                return self._result(
                    memory_id, "invalid", before,
                    message=f"content has {len(norm.storage)} characters; the limit is {limit}"
                    " (memory.max_content_chars)",
                )
            if before is not None and norm.content_hash != before.content_hash:
                vec = self.core.try_embed(norm.storage)  # outside the write lock, before the write
        with self.core.db.write_tx() as conn:
            return self._write_patch(conn, memory_id, patch, norm, vec, reason, changed_by)

    def _write_patch(
        self,
        conn: sqlite3.Connection,
        memory_id: str,
        patch: MemoryPatch,
        norm: NormalizedContent | None,
        vec: np.ndarray | None,
        reason: str,
        changed_by: str | None,
    ) -> PatchResult:
        m = memories.get(conn, memory_id)
        if m is None:
            return self._result(memory_id, "not_found", None, message=f"no memory {memory_id}")
        if m.is_deleted:
            return self._result(memory_id, "deleted", m, message="the memory is deleted")
        if patch.if_version is not None and patch.if_version != m.version:
            return self._result(
                memory_id, "version_conflict", m,
                message=f"version is {m.version}, not {patch.if_version}",
            )
        fields: dict[str, Any] = {}
        for name, value in patch.changes().items():
            if name != "content" and getattr(m, name) != value:
                fields[name] = value
        content_changed = norm is not None and norm.content_hash != m.content_hash
        text_changed = norm is not None and norm.storage != m.content
        refused = immutable_message(m, {**fields, **({"content": 1} if text_changed else {})})
        if refused:
            return self._result(memory_id, "immutable", m, message=refused)
        if norm is not None and text_changed:
            project = fields.get("project", m.project)
            dup = memories.find_live_duplicate(
                conn, norm.content_hash, project, m.source_id, m.id,
                agent_id=m.agent_id, user_id=m.user_id,
            )
            if dup is not None:
                return self._result(
                    memory_id, "duplicate_content", m, duplicate=dup,
                    message=f"memory {dup} already holds this content",
                )
            fields.update(content=norm.storage, normalized_content=norm.normalized,
                          content_hash=norm.content_hash)
        if "project" in fields and not content_changed:
            dup = memories.find_live_duplicate(
                conn, m.content_hash, fields["project"], m.source_id, m.id,
                agent_id=m.agent_id, user_id=m.user_id,
            )
            if dup is not None:
                return self._result(memory_id, "duplicate_content", m, duplicate=dup,
                                    message=f"memory {dup} holds this content in that project")
        if not fields:
            return self._result(memory_id, "unchanged", m, new_version=m.version)
        embedded = False
        if content_changed:
            model = self.core.provider.model_id if self.core.provider else None
            if vec is not None and model:
                embeddings.upsert(conn, fields["content_hash"], model, vec)
                fields["embedding_model"] = model
                embedded = True
            else:
                fields["embedding_model"] = None
        now = utcnow()
        memories.update_fields(conn, m.id, fields, at=now, by=changed_by)
        if fields.get("who"):  # a new name on an old row: the query side must know it
            self.core.db.on_commit(lambda: self.core.searcher.authors.add(fields["who"]))
        if text_changed:  # hints described the old text: drop them, generate anew
            hints.delete_for(conn, [m.id])
            self.core.enqueue_hints(conn, m.id, m.why)
        history.append(
            conn, m.id, "modified",
            old_content=m.content, new_content=fields.get("content", m.content),
            changed_by=changed_by or "api", reason=reason,
            metadata={"fields": sorted(k for k in fields if k != "normalized_content"),
                      "before": {k: getattr(m, k) for k in fields
                                 if k not in {"content", "normalized_content", "content_hash",
                                              "embedding_model"}},
                      "version": m.version + 1},
            at=now,
        )
        self._reindex_after_patch(m, fields, vec if embedded else None)
        return self._result(
            memory_id, "updated", m, new_version=m.version + 1,
            content_changed=text_changed, embedded=embedded,
        )

    def _reindex_after_patch(self, m: Memory, fields: dict[str, Any],
                             vec: np.ndarray | None) -> None:
        index, embedder = self.core.index, self.core.embedder
        project = fields.get("project", m.project)
        if "content_hash" in fields:
            def swap() -> None:
                if vec is not None:
                    self.core.get_index(int(vec.shape[0])).add(m.seq, vec, project)
                else:
                    if index is not None:
                        index.remove(m.seq)
                    if embedder is not None:
                        embedder.notify(m.seq)
            self.core.db.on_commit(swap)
        if "project" in fields:
            self.core.db.on_commit(lambda: self.core.reproject(m.seq, project))

    @staticmethod
    def _result(
        memory_id: str, status: str, m: Memory | None, *, new_version: int | None = None,
        content_changed: bool = False, embedded: bool = False, duplicate: str | None = None,
        message: str | None = None,
    ) -> PatchResult:
        out: PatchResult = {
            "id": memory_id,
            "status": status,
            "current_version": m.version if m else None,
            "new_version": new_version,
            "content_changed": content_changed,
            "embedded": embedded,
            "duplicate_memory_id": duplicate,
        }
        if message:
            out["message"] = message
        return with_legacy_keys(out)

    # -- delete / recover -----------------------------------------------------------------
    def _delete_soft(self, memory_id: str, req: DeleteRequest) -> DeleteAnswer:
        """`delete` without `purge` (service/purge.py): a tombstone, recoverable."""
        with self.core.db.write_tx() as conn:
            m = memories.get(conn, memory_id)
            if m is None:
                raise NotFound(f"no memory {memory_id}")
            if m.is_deleted:
                raise Conflict("the memory is already deleted", code="already_deleted")
            managed = file_managed_error(conn, [memory_id])
            if managed is not None:
                raise managed
            if req.if_version is not None and req.if_version != m.version:
                raise Conflict(f"version is {m.version}, not {req.if_version}",
                               code="version_conflict",
                               **with_legacy_keys({"current_version": m.version}))
            if m.pinned and not req.force:
                raise Conflict("the memory is pinned; pass force: true to delete it",
                               code="pinned")
            self.soft_delete(conn, m, req.reason, req.changed_by, {"force": req.force})
        return with_legacy_keys(DeleteAnswer(id=memory_id, status="deleted",
                                             current_version=m.version,
                                             new_version=m.version + 1))

    def soft_delete(self, conn: sqlite3.Connection, m: Memory, reason: str, by: str | None,
                    meta: dict[str, Any]) -> None:
        now = utcnow()
        memories.soft_delete(conn, m.id, reason=reason, at=now, by=by)
        history.append(conn, m.id, "deleted", old_content=m.content, changed_by=by or "api",
                       reason=reason, metadata={**meta, "version": m.version + 1}, at=now)
        self.core.db.on_commit(lambda: self.core.unindex(m.seq))

    def recover(self, memory_id: str, req: RecoverRequest) -> RecoverAnswer:
        if self.core.config.memory.pipeline_v2.mutations_frozen:
            raise Unavailable("mutations are frozen (memory.pipelineV2.mutationsFrozen)",
                              code="mutations_frozen")
        days = self.core.config.memory.retention.tombstone_days
        memory_id = self.core.resolve_id(memory_id, caller=req)
        with self.core.db.write_tx() as conn:
            m = memories.get(conn, memory_id)
            if m is None:
                raise NotFound(f"no memory {memory_id} (it may have been purged)")
            if not m.is_deleted:
                raise Conflict("the memory is not deleted", code="not_deleted")
            if req.if_version is not None and req.if_version != m.version:
                raise Conflict(f"version is {m.version}, not {req.if_version}",
                               code="version_conflict",
                               **with_legacy_keys({"current_version": m.version}))
            age = (parse_ts(utcnow()) - parse_ts(m.deleted_at or utcnow())).total_seconds()
            if age > days * 86400 and not expiry.is_archived(m):  # an expired event: any time
                raise Conflict(f"deleted more than {days} days ago", code="retention_expired")
            dup = memories.find_live_duplicate(conn, m.content_hash, m.project, m.source_id, m.id,
                                               agent_id=m.agent_id, user_id=m.user_id)
            if dup is not None:
                raise Conflict(f"memory {dup} now holds the same content",
                               code="duplicate_content",
                               **with_legacy_keys({"duplicate_memory_id": dup}))
            now = utcnow()
            memories.restore(conn, m.id, at=now, by=req.changed_by)
            history.append(conn, m.id, "recovered", new_content=m.content,
                           changed_by=req.changed_by or "api", reason=req.reason,
                           metadata={"version": m.version + 1}, at=now)
            vec = embeddings.get(conn, m.content_hash, self.core.provider.model_id) if (
                self.core.provider) else None
            self.core.db.on_commit(lambda: self._reindex(m, vec))
        return with_legacy_keys(RecoverAnswer(id=memory_id, status="recovered",
                                              current_version=m.version,
                                              new_version=m.version + 1))

    def _reindex(self, m: Memory, vec: np.ndarray | None) -> None:
        if vec is not None:
            self.core.get_index(int(vec.shape[0])).add(m.seq, vec, m.project)
        elif self.core.embedder is not None:
            self.core.embedder.notify(m.seq)
