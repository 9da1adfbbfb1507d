"""Typed lifecycles without an LLM: keyed supersession, immutable decisions and events, and
the supersession chain of a memory.

- A memory with a `key` (fact, status, decision, any type but event) supersedes the live
  memories with the same key, type and project, in the remember's own write transaction: the
  old row stays, marked `superseded_by` / `superseded_at`, its `valid_to` where the new one's
  `valid_from` begins; the new row records `supersedes`. Pinned memories are never superseded
  automatically: the new one is stored beside them (`kept_pinned`).
- A decision's content, type and event time never change (a new decision with its key
  supersedes it); an event's content never changes. Metadata (pinned, tags, importance, who,
  project) may.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mnemonist.model.answers_reads import ChainAnswer, ChainLink
from mnemonist.model.memory import Memory
from mnemonist.store import archive, history, memories
from mnemonist.store.backend import serialize
from mnemonist.store.memories import NewMemory

#: type -> the patch fields that would rewrite it
IMMUTABLE_FIELDS: dict[str, frozenset[str]] = {
    "decision": frozenset({"content", "type", "occurred_at"}),
    "event": frozenset({"content"}),
}
#: the longest chain walked either way (a loop cannot exist, a runaway one is cut)
MAX_CHAIN = 1000


@dataclass
class Supersession:
    superseded: list[str] = field(default_factory=list)
    kept_pinned: list[str] = field(default_factory=list)


def supersede_keyed(
    conn: sqlite3.Connection, new: NewMemory, actor: str, *, at: str,
    unindex: Callable[[int], None],
) -> Supersession:
    """After `new` is inserted: supersede the live unpinned memories holding its key (same
    type and project), newest last so that `supersedes` names the most recent one. The
    lookup and the updates run in the caller's write transaction (no read-then-write race)."""
    out = Supersession()
    if not new.key:
        return out
    # several daemons on one PostgreSQL: the second writer of a key reads the first's row
    serialize(conn, "key", new.key, new.project or "", new.type)
    successor_from = new.valid_from or new.occurred_at
    olds = [m for m in memories.live_with_key(conn, new.key, new.project, new.type,
                                              new.agent_id, new.user_id)
            if m.id != new.id]
    for old in reversed(olds):
        if old.pinned:
            out.kept_pinned.append(old.id)
            continue
        valid_to = archive.supersede(conn, old, new.id, successor_from, at=at, by=actor)
        history.append(
            conn, old.id, "superseded", old_content=old.content, new_content=new.content,
            changed_by=actor, reason=f"superseded by a newer {new.type} with key {new.key!r}",
            metadata={"supersededBy": new.id, "key": new.key, "validTo": valid_to,
                      "version": old.version + 1, "lifecycle": "key"},
            at=at,
        )
        out.superseded.insert(0, old.id)
        unindex(old.seq)
    return out


def immutable_message(m: Memory, changes: dict[str, Any]) -> str | None:
    """Why these changes (the fields that really differ) may not be applied to `m`, or
    None."""
    fields = IMMUTABLE_FIELDS.get(m.type, frozenset())
    touched = sorted(fields & changes.keys())
    if not touched:
        return None
    if m.type == "decision":
        how = (f"store a new decision with key {m.key!r} to supersede it" if m.key
               else "store a new decision with a key to supersede it")
        return f"decision {m.id} is immutable ({', '.join(touched)}): {how}"
    return f"event {m.id} is never rewritten ({', '.join(touched)}): store a new event"


def _link(m: Memory) -> ChainLink:
    return {
        "id": m.id, "content": m.content, "type": m.type, "key": m.key,
        "project": m.project, "pinned": m.pinned, "is_deleted": m.is_deleted,
        "valid_from": m.valid_from or m.occurred_at, "valid_to": m.valid_to,
        "supersedes": m.supersedes, "superseded_by": m.superseded_by,
        "superseded_at": m.superseded_at, "current": not m.superseded_at and not m.is_deleted,
    }


def chain(conn: sqlite3.Connection, m: Memory) -> ChainAnswer:
    """The versions before `m` (oldest first) and after it (newest last), each with its
    validity, following `supersedes` back and `superseded_by` forward."""
    before: list[ChainLink] = []
    seen = {m.id}
    prev = m.supersedes
    while prev and prev not in seen and len(before) < MAX_CHAIN:
        old = memories.get(conn, prev)
        if old is None:
            break
        seen.add(old.id)
        before.insert(0, _link(old))
        prev = old.supersedes
    after: list[ChainLink] = []
    nxt = m.superseded_by
    while nxt and nxt not in seen and len(after) < MAX_CHAIN:
        newer = memories.get(conn, nxt)
        if newer is None:
            break
        seen.add(newer.id)
        after.append(_link(newer))
        nxt = newer.superseded_by
    return {"memory": _link(m), "supersedes": before, "superseded_by": after,
            "versions": [*before, _link(m), *after]}
