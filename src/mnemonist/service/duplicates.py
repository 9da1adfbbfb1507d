"""Review of the near-duplicate candidates the sweep flagged (`pipeline.dedup`): list them,
dismiss a pair (it is never flagged again), or resolve it by keeping one memory and marking
the other superseded by it — an explicit action, recorded in the dropped memory's history
and reversible like any supersession. Nothing here merges on its own.
"""

from __future__ import annotations

from typing import Any, cast

from mnemonist.model.answers_curation import (
    DedupSweep,
    DuplicateDismissed,
    DuplicateListAnswer,
    DuplicatePair,
    DuplicateResolved,
    DuplicatesState,
)
from mnemonist.model.memory import Memory, utcnow
from mnemonist.model.requests import Caller
from mnemonist.pipeline import dedup
from mnemonist.search.filters import visibility_clause, visible_ids
from mnemonist.service.errors import BadRequest, Conflict, NotFound
from mnemonist.service.mutations import file_managed_error
from mnemonist.service.part import Part
from mnemonist.store import archive, consolidation, duplicates, history, memories

#: the shortest prefix of a candidate id that is looked up as a prefix
MIN_PREFIX = 4
ACTOR = "duplicates-review"


def _live(m: Memory | None) -> bool:
    return m is not None and not m.is_deleted and m.superseded_at is None


def _public(row: dict[str, Any]) -> DuplicatePair:
    return {
        "id": row["id"], "kind": row.get("kind", "duplicate"), "status": row["status"],
        "similarity": row["similarity"],
        "reason": row["reason"], "kept": row["kept"], "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "a": {"id": row["memory_a"], "content": row.get("content_a"),
              "type": row.get("type_a"), "created_at": row.get("created_a")},
        "b": {"id": row["memory_b"], "content": row.get("content_b"),
              "type": row.get("type_b"), "created_at": row.get("created_b")},
    }


class DuplicateOps(Part):
    def dedup_sweep(self, batch_size: int | None = None) -> DedupSweep:
        """One run of the near-duplicate sweep now (it only flags)."""
        return cast(DedupSweep, dedup.sweep(self.core.db, self.core.index,
                                            self.core.config.memory.pipeline_v2.repair,
                                            batch_size=batch_size))

    def duplicates_state(self) -> DuplicatesState:
        """For diagnostics: open pairs waiting for review, and how far the sweep has come."""
        conn = self.core.db.reader()
        cursor = duplicates.cursor(conn)
        left = duplicates.unswept(conn, cursor)
        return {"open": duplicates.open_count(conn), "swept_up_to_seq": cursor,
                "not_swept_yet": int(left)}

    def list_duplicates(self, status: str = "open", limit: int = 50, offset: int = 0,
                        caller: Caller | None = None, kind: str | None = None
                        ) -> DuplicateListAnswer:
        """Pairs whose two memories `caller` may both see (a pair never spans owners);
        `kind`: only near-duplicates, contradictions, or what consolidation settled."""
        if status not in duplicates.STATUSES:
            raise BadRequest(f"status must be one of {', '.join(duplicates.STATUSES)}")
        if kind is not None and kind not in consolidation.KINDS:
            raise BadRequest(f"kind must be one of {', '.join(consolidation.KINDS)}")
        rows, total = duplicates.listing(self.core.db.reader(), status, limit, offset,
                                         visibility_clause(caller), kind)
        return {"duplicates": [_public(r) for r in rows], "total": total, "status": status,
                "kind": kind, "limit": limit, "offset": offset}

    def _candidate_id(self, ref: str) -> str:
        conn = self.core.db.reader()
        if duplicates.get(conn, ref) is not None or len(ref) < MIN_PREFIX:
            return ref
        found = duplicates.ids_with_prefix(conn, ref.lower())
        if len(found) > 1:
            raise Conflict(f"prefix {ref} matches {len(found)} candidates; give more of the id",
                           code="ambiguous_id", prefix=ref, matches=found)
        return found[0] if found else ref

    def _open_candidate(self, conn: Any, ref: str, caller: Caller | None) -> dict[str, Any]:
        """The open pair `ref` names; a pair whose memories `caller` may not both see is a
        404, as a missing one."""
        row = duplicates.get(conn, ref)
        pair = [row["memory_a"], row["memory_b"]] if row is not None else []
        if row is None or visible_ids(conn, pair, caller) != set(pair):
            raise NotFound(f"no duplicate candidate {ref}")
        if row["status"] != "open":
            raise Conflict(f"candidate {row['id']} is already {row['status']}",
                           code="not_open", status=row["status"])
        return row

    def dismiss_duplicate(self, ref: str, reason: str | None = None,
                          caller: Caller | None = None) -> DuplicateDismissed:
        """Not duplicates: the pair stays recorded as dismissed and is not flagged again."""
        cid = self._candidate_id(ref)
        with self.core.db.write_tx() as w:
            self._open_candidate(w, cid, caller)
            duplicates.set_status(w, cid, "dismissed", utcnow())
        return {"id": cid, "status": "dismissed", "reason": reason}

    def resolve_duplicate(self, ref: str, keep: str, reason: str,
                          changed_by: str | None = None,
                          caller: Caller | None = None) -> DuplicateResolved:
        """Keep one memory of the pair; the other is superseded by it (its row and history
        stay; it leaves recall like any superseded memory). `keep`: "a", "b" or either id."""
        cid = self._candidate_id(ref)
        actor = changed_by or ACTOR
        with self.core.db.write_tx() as w:
            row = self._open_candidate(w, cid, caller)
            a, b = memories.get(w, row["memory_a"]), memories.get(w, row["memory_b"])
            if not (_live(a) and _live(b)):
                raise Conflict("one memory of the pair is no longer live (forgotten or"
                               " superseded since it was flagged); dismiss the pair",
                               code="not_live")
            assert a is not None and b is not None
            if keep in ("a", a.id):
                kept, dropped = a, b
            elif keep in ("b", b.id):
                kept, dropped = b, a
            else:
                raise BadRequest(f"keep must be 'a', 'b', {a.id} or {b.id}")
            managed = file_managed_error(w, [dropped.id])
            if managed is not None:
                raise managed
            at = utcnow()
            archive.mark_superseded(w, dropped.id, kept.id, at=at, by=actor)
            if kept.supersedes is None:
                archive.set_supersedes(w, kept.id, dropped.id)
            history.append(
                w, dropped.id, "superseded", old_content=dropped.content,
                new_content=kept.content, changed_by=actor, reason=reason,
                metadata={"supersededBy": kept.id, "lifecycle": "duplicate",
                          "duplicateCandidate": cid, "similarity": row["similarity"],
                          "version": dropped.version + 1},
                at=at,
            )
            duplicates.set_status(w, cid, "resolved", at, kept=kept.id)
            seq = dropped.seq
            self.core.db.on_commit(lambda: self.core.unindex(seq))
        return {"id": cid, "status": "resolved", "kept": kept.id, "superseded": dropped.id}
