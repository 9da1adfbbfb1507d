"""Bulk import: many memories in batched transactions, idempotent when re-run.

Each item takes remember's path (prefixes, scrubbing, normalisation, dedup, history, extraction
job); only the transaction is shared by a batch. An item without an idempotency key gets one
derived from its source and its position in that source (or, without a source, from its content,
project and event time), so importing the same file twice creates nothing new.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mnemonist.model.answers import ImportAnswer, ImportItem, RememberAnswer
from mnemonist.model.memory import utcnow
from mnemonist.model.requests import ImportRequest
from mnemonist.pipeline import structural
from mnemonist.providers.embedding.request_gate import holds_gate
from mnemonist.service.errors import BadRequest
from mnemonist.service.part import Part
from mnemonist.store import memories
from mnemonist.store.backend import is_postgres
from mnemonist.store.write_batch import WriteBatch
from mnemonist.text.normalize import normalize_and_hash

if TYPE_CHECKING:
    from mnemonist.service.parts import Memories

#: an import that created this many memories refreshes PostgreSQL's planner statistics
STATISTICS_AFTER = 1000
#: memories per transaction when no other writer waits (~10% faster than 500 at a million)
BATCH = 1000
#: a transaction ends early once it holds this many memories and another writer waits for the
#: lock: a remember sent during an import waits for a short chunk, not a whole one
LET_IN_AFTER = 50


def derived_key(
    project: str | None, source_id: str | None, position: int, content: str, occurred_at: str | None
) -> str:
    """The idempotency key of the item at `position` of its source (shared with the CLI)."""
    if source_id:
        return f"import:{project or ''}:{source_id}:{position}"
    digest = normalize_and_hash(content).content_hash[:32]
    return f"import:{project or ''}:{digest}:{occurred_at or ''}"


class ImportOps(Part):
    #: when this daemon last refreshed the planner statistics (PostgreSQL)
    _statistics_at = -1e9

    memories: Memories  # prepare and insert: remember's own path

    def _import_chunk(self, conn: sqlite3.Connection, prepared: list[Any], first: int,
                      batch: WriteBatch, results: list[RememberAnswer], rows_at_once: bool,
                      waiting: Callable[[], bool] | None) -> int:
        """Write `prepared[first:]` up to a chunk's end in `conn`'s transaction; returns
        where the next chunk starts."""
        done, end = first, min(first + BATCH, len(prepared))
        # which keys and contents the store holds, asked once for the chunk; one met again
        # later in the chunk is looked up as before (it is stored by then)
        keys, hashes = memories.present(
            conn, [p[1].idempotency_key for p in prepared[first:end] if p[1].idempotency_key],
            [p[1].content_hash for p in prepared[first:end]])
        if rows_at_once:
            batch.seqs = memories.reserve_seqs(conn, end - first)
        while done < end:
            _item, new, actor, scrubbed = prepared[done]
            unseen = new.idempotency_key not in keys and new.content_hash not in hashes
            if new.idempotency_key:
                keys.add(new.idempotency_key)
            hashes.add(new.content_hash)
            if not unseen:  # its look-ups must see the rows written before it
                batch.flush_rows(conn)
            results.append(self.memories.insert_or_existing(conn, new, actor, scrubbed,
                                                            batch=batch, unseen=unseen))
            done += 1
            if done - first >= LET_IN_AFTER and waiting is not None and waiting():
                break  # another writer waits (a remember): commit what is written
        batch.flush(conn)
        return done

    @holds_gate
    def import_memories(
        self, req: ImportRequest, *, changed_by: str | None = None,
        progress: Callable[[int, int], object] | None = None,
    ) -> ImportAnswer:
        now = utcnow()
        positions: dict[tuple[str | None, str], int] = {}
        prepared = []
        errors: list[str] = []
        for i, raw in enumerate(req.items):
            defaults = {k: getattr(req, k) for k in ("project", "source_id", "source_type", "who")
                        if getattr(raw, k) is None and getattr(req, k) is not None}
            item = raw.model_copy(update=defaults) if defaults else raw
            if item.idempotency_key is None:
                source = (item.project, item.source_id or "")
                position = positions.get(source, 0)
                positions[source] = position + 1
                key = derived_key(item.project, item.source_id, position, item.content,
                                  item.occurred_at)
                item = item.model_copy(update={"idempotency_key": key})
            try:
                prepared.append((item, *self.memories.prepare(item, changed_by, now)))
            except BadRequest as exc:
                errors.append(f"items[{i}]: {exc.message}")
        if errors:
            raise BadRequest("; ".join(errors[:20]) + (" ..." if len(errors) > 20 else ""),
                             code="invalid_items", invalid=len(errors))
        results: list[RememberAnswer] = []
        waiting = getattr(self.core.db, "writers_waiting", None)
        done = 0
        # PostgreSQL: a chunk's memory rows go in one statement (seqs reserved for them)
        rows_at_once = is_postgres(self.core.db)
        while done < len(prepared):
            # derived rows per chunk, not per memory (one statement per table); entity links
            # too, unless the structural job must see each memory's links as it is queued
            batch = WriteBatch(links=None if structural.should_queue(self.core.config) else [])
            first = done
            try:
                with self.core.db.write_tx() as conn:
                    done = self._import_chunk(conn, prepared, first, batch, results,
                                              rows_at_once, waiting)
            except sqlite3.IntegrityError:
                if not (rows_at_once and batch.rows_sql):
                    raise
                # another daemon stored one of these keys or texts since `present` asked:
                # the chunk was rolled back; again, a row at a time, each meeting its
                # stored twin as remember does
                del results[first:]
                done = first
                with self.core.db.write_tx() as conn:
                    done = self._import_chunk(conn, prepared, first, WriteBatch(
                        links=None if structural.should_queue(self.core.config) else []),
                        results, False, waiting)
            if progress is not None:
                progress(len(results), len(prepared))
        for item, *_ in prepared:
            if item.transcript and item.source_id:
                self.memories.save_transcript(item.source_id, item.transcript, item.harness,
                                              item.project)
        items: list[ImportItem] = [
            {"index": i, "id": r["id"],
             "status": "created" if r["created"] else
             ("replayed" if r["idempotent_replay"] else "deduplicated")}
            for i, r in enumerate(results)
        ]
        counts = {s: sum(1 for it in items if it["status"] == s)
                  for s in ("created", "deduplicated", "replayed")}
        if counts["created"] >= STATISTICS_AFTER:
            self._refresh_statistics()
        return {"total": len(items), "created": counts["created"],
                "deduplicated": counts["deduplicated"], "replayed": counts["replayed"],
                "items": items}

    def _refresh_statistics(self) -> None:
        """PostgreSQL: the planner's statistics of the tables a large import filled, now
        rather than at autovacuum's next round (a minute or more): until then it may scan
        every memory where an index finds the few an entity is mentioned in (a graph walk
        of 6,000 memories took 12 ms a statement instead of 0.1). At most once a minute."""
        db = self.core.db
        now = time.monotonic()
        if not is_postgres(db) or now - self._statistics_at < 60.0:
            return
        self._statistics_at = now
        with db.write_tx() as conn:
            memories.refresh_statistics(conn)
