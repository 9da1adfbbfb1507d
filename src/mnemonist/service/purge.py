"""Purge: remove a memory's text from the database and its file (`store.purge`).

Reached three ways: `DELETE /api/memory/{id}` with `purge: true` (a live or a soft-deleted
memory, or one whose row is already gone but whose history still holds its text), `forget`
with `force: true`, and the retention sweep for tombstones past their window. Each purge runs
in one write transaction that also writes its `purged` history event; the FTS5 indexes are then
merged (so their old segments drop the words) and the WAL is checkpointed into the file.
"""

from __future__ import annotations

import sqlite3
from typing import cast

from mnemonist.model.answers import DeleteAnswer, PurgeCounts, with_legacy_keys
from mnemonist.model.memory import Memory, utcnow
from mnemonist.model.requests import DeleteRequest
from mnemonist.service.errors import Conflict, NotFound
from mnemonist.service.mutations import MutationOps
from mnemonist.store import history, memories
from mnemonist.store import purge as store_purge
from mnemonist.store.purge import PurgeReport
from mnemonist.text.scrub import scrub_optional

#: how long a purge waits for readers before it leaves the WAL to the next checkpoint
CHECKPOINT_WAIT_MS = 2000


class PurgeOps(MutationOps):
    def delete(self, memory_id: str, req: DeleteRequest) -> DeleteAnswer:
        """A soft delete (mutations.py), or with `purge` the text removed for good."""
        memory_id = self.core.resolve_id(memory_id, caller=req)
        if not req.purge:
            return self._delete_soft(memory_id, req)
        reason = scrub_optional(req.reason) or ""
        by = scrub_optional(req.changed_by) or "api"
        with self.core.db.write_tx() as conn:
            m = memories.get(conn, memory_id)
            if m is None and not _has_history(conn, memory_id):
                raise NotFound(f"no memory {memory_id}")
            if m is not None:
                if req.if_version is not None and req.if_version != m.version:
                    raise Conflict(f"version is {m.version}, not {req.if_version}",
                                   code="version_conflict",
                               **with_legacy_keys({"current_version": m.version}))
                if m.pinned and not m.is_deleted and not req.force:
                    raise Conflict("the memory is pinned; pass force: true to purge it",
                                   code="pinned")
            report = self.purge_in_tx(conn, memory_id, m, reason, by)
            store_purge.compact(conn)
        truncated = self.core.db.checkpoint(CHECKPOINT_WAIT_MS)
        return with_legacy_keys(DeleteAnswer(
            id=memory_id, status="purged",
            current_version=m.version if m else None, new_version=None,
            was_deleted=report.was_deleted, purged=cast(PurgeCounts, report.to_dict()),
            wal_truncated=truncated))

    def purge_in_tx(
        self, conn: sqlite3.Connection, memory_id: str, m: Memory | None, reason: str, by: str
    ) -> PurgeReport:
        """One memory's purge inside the caller's transaction (compact and checkpoint after)."""
        report = store_purge.purge_memory(conn, memory_id, by=by, reason=reason, at=utcnow())
        if m is not None:
            self.core.db.on_commit(lambda: self.core.unindex(m.seq))
        return report

    def finish_purge(self) -> bool:
        """After the purges' transaction: merge the FTS5 indexes, checkpoint the WAL."""
        with self.core.db.write_tx() as conn:
            store_purge.compact(conn)
        return self.core.db.checkpoint(CHECKPOINT_WAIT_MS)


def _has_history(conn: sqlite3.Connection, memory_id: str) -> bool:
    return history.has_any(conn, memory_id)
