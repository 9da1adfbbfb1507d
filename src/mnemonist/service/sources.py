"""Ordered sources: memories that share `source_id` (a conversation, a session, a document)
are ordered by event time, then arrival. A memory's neighbours are the lines around it."""

from __future__ import annotations

import sqlite3
from typing import Any, cast

from mnemonist.model.answers_reads import MemoryRow, NeighboursAnswer
from mnemonist.model.memory import Memory
from mnemonist.model.requests import Caller
from mnemonist.search.filters import visibility_clause
from mnemonist.service.errors import NotFound
from mnemonist.service.part import Part
from mnemonist.store import memories, memory_reads


def neighbours_of(conn: sqlite3.Connection, m: Memory, n: int,
                  caller: Caller | None = None) -> dict[str, list[Memory]]:
    """Up to n live memories on each side of `m` in its source (same project), in order;
    only those `caller` may see."""
    out: dict[str, list[Memory]] = {"before": [], "after": []}
    if not m.source_id or n <= 0:
        return out
    visible, args = visibility_clause(caller)
    for side in memory_reads.SIDES:
        seqs = memory_reads.neighbour_seqs(conn, side, m.source_id, m.project, m.occurred_at,
                                           m.seq, visible, args, n)
        found = memories.get_many_by_seq(conn, seqs)
        items = [found[s] for s in seqs if s in found]
        out[side] = items[::-1] if side == "before" else items
    return out


def brief(m: Memory) -> dict[str, Any]:
    return {"id": m.id, "content": m.content, "who": m.who, "occurred_at": m.occurred_at}


class SourceOps(Part):
    def neighbours(self, memory_id: str, n: int = 2,
                   caller: Caller | None = None) -> NeighboursAnswer:
        conn = self.core.db.reader()
        m = memories.get(conn, self.core.resolve_id(memory_id, conn, caller))
        if m is None:
            raise NotFound(f"no memory {memory_id}")
        around = neighbours_of(conn, m, n, caller)
        return {
            "id": m.id,
            "source_id": m.source_id,
            "before": [cast(MemoryRow, x.to_public()) for x in around["before"]],
            "after": [cast(MemoryRow, x.to_public()) for x in around["after"]],
        }
