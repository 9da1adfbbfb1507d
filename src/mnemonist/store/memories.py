"""The memories table: inserts, lookups, field updates, soft and hard deletes, listing.

Every change also keeps the context index (`context`) and the inline entity links
(`entity_links`) in step, in the caller's write transaction. Soft delete and restore keep a
memory's links (recall never returns a deleted memory); a hard delete removes them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mnemonist.model.memory import RANKING_COLUMNS, Memory
from mnemonist.store import context, entity_links, hints
from mnemonist.store.write_batch import WriteBatch
from mnemonist.text.scrub import scrub_all, scrub_optional

COLUMNS = (
    "id", "content", "normalized_content", "content_hash", "type", "importance", "tags",
    "pinned", "who", "why", "project", "source_type", "source_id", "idempotency_key",
    "confidence", "occurred_at", "created_at", "updated_at", "updated_by", "extraction_model",
    "key", "supersedes", "valid_from", "valid_to", "agent_id", "user_id", "observed_by",
)  # fmt: skip


@dataclass
class NewMemory:
    id: str
    content: str
    normalized_content: str
    content_hash: str
    type: str
    importance: float
    tags: list[str]
    pinned: bool
    who: str | None
    why: str | None
    project: str | None
    source_type: str | None
    source_id: str | None
    idempotency_key: str | None
    occurred_at: str
    created_at: str
    confidence: float | None = None
    extraction_model: str | None = None
    key: str | None = None
    supersedes: str | None = None
    valid_from: str | None = None  # None: from occurred_at
    valid_to: str | None = None
    agent_id: str | None = None  # owner: private to this agent (None: global)
    user_id: str | None = None  # owner: private to this user (None: global)
    observer: str | None = None  # the first observer (agent_id, else who)


_INSERT = (f"INSERT INTO memories ({', '.join(COLUMNS)})"
           f" VALUES ({', '.join('?' * len(COLUMNS))})")
_INSERT_AT = (f"INSERT INTO memories (seq, {', '.join(COLUMNS)})"
              f" VALUES ({', '.join('?' * (len(COLUMNS) + 1))})")


def reserve_seqs(conn: sqlite3.Connection, n: int) -> list[int]:
    """`n` seqs for memories about to be written (PostgreSQL: from the identity's sequence,
    never handed out twice; a seq reserved and not used is a gap, as a rolled-back insert
    leaves)."""
    return [r[0] for r in conn.execute(
        "SELECT nextval(pg_get_serial_sequence('memories', 'seq'))"
        " FROM generate_series(1, ?)", (n,))]


#: what an import writes, whose planner statistics it refreshes (PostgreSQL)
IMPORTED_TABLES = ("memories", "memory_context", "memory_entity_mentions", "entities",
                   "relations", "entity_attributes", "entity_aliases", "memory_history")


def refresh_statistics(conn: sqlite3.Connection) -> None:
    """PostgreSQL's ANALYZE of the tables an import fills (a sample of each: it reads no
    table whole, and blocks neither reads nor writes)."""
    conn.execute(f"ANALYZE {', '.join(IMPORTED_TABLES)}")


def _may_wait(m: NewMemory, batch: WriteBatch) -> bool:
    """Whether nothing reads this memory's row before the chunk is flushed: its context rows
    and entity links are the batch's, and no key supersedes through it."""
    return (batch.links is not None and m.key is None and context.is_line(m.why)
            and m.agent_id is None and m.user_id is None)


def insert(conn: sqlite3.Connection, m: NewMemory, batch: WriteBatch | None = None) -> int:
    """Insert the row. Content comes scrubbed (its hash is of the scrubbed text); the other
    free-text fields (who, why, tags) are scrubbed here, whichever path wrote them. With a
    `batch` (bulk import), its context rows and entity links are left to `batch.flush`
    before the transaction ends, where the batch collects them."""
    who = scrub_optional(m.who)
    values = {
        **{c: getattr(m, c, None) for c in COLUMNS},
        "who": who,
        "why": scrub_optional(m.why),
        "tags": json.dumps(scrub_all(m.tags)),
        "pinned": int(m.pinned),
        "updated_at": m.created_at,
        "updated_by": who,
        "valid_from": m.valid_from or m.occurred_at,
        "observed_by": json.dumps([m.observer] if m.observer else []),
    }
    params = [values[c] for c in COLUMNS]
    seq = batch.next_seq() if batch is not None else None
    if seq is None:
        cur = conn.execute(_INSERT, params)
        seq = int(cur.lastrowid or 0)
    else:
        assert batch is not None
        if _may_wait(m, batch):  # written with the chunk's other rows (`batch.flush_rows`)
            batch.rows_sql = _INSERT_AT
            batch.rows.append([seq, *params])
        else:
            batch.flush_rows(conn)  # the rows before it first: their seqs come first
            conn.execute(_INSERT_AT, [seq, *params])
    if batch is not None and context.is_line(m.why) and m.agent_id is None \
            and m.user_id is None:
        batch.context.append(context.Inserted(seq, m.project, m.source_id, m.occurred_at,
                                              m.content))
    else:  # not a line of its source: its own row alone, from the lines already there
        context.refresh_at(conn, seq, m.project, m.source_id, m.occurred_at)
    scope = (m.project or "", m.agent_id or "", m.user_id or "")
    if batch is not None and batch.links is not None:
        batch.links.append((m.id, m.content, scope))
    else:
        entity_links.link(conn, m.id, m.content, fresh=True, scope=scope)
    return seq


def _position(conn: sqlite3.Connection, memory_id: str) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT seq, project, source_id, occurred_at FROM memories WHERE id = ?", (memory_id,)
    ).fetchone()


def _refresh(conn: sqlite3.Connection, before: sqlite3.Row | None, memory_id: str) -> None:
    """Keep the context index in step: around the old position and around the new one."""
    if context.window_of(conn) <= 0 or before is None:
        return
    context.refresh_at(conn, before["seq"], before["project"], before["source_id"],
                       before["occurred_at"])
    after = _position(conn, memory_id)
    if after is not None and tuple(after) != tuple(before):
        context.refresh_memory(conn, after["seq"])


def get(conn: sqlite3.Connection, memory_id: str) -> Memory | None:
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return Memory.from_row(row) if row else None


def ids_with_prefix(conn: sqlite3.Connection, prefix: str,
                    limit: int = 5) -> tuple[list[str], int]:
    """(the first `limit` ids, live or deleted, that start with `prefix`, in id order; how
    many there are in all)."""
    bounds = (prefix, prefix + "\U0010ffff")  # a range the UNIQUE index on id answers
    rows = conn.execute("SELECT id FROM memories WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
                        (*bounds, limit)).fetchall()
    total = len(rows) if len(rows) < limit else conn.execute(
        "SELECT COUNT(*) FROM memories WHERE id >= ? AND id < ?", bounds).fetchone()[0]
    return [r[0] for r in rows], total


def get_many_by_seq(
    conn: sqlite3.Connection, seqs: list[int], where: str = "1", args: list[Any] | None = None
) -> dict[int, Memory]:
    """Rows by seq, optionally only those also matching `where` (over `memories m`). NOT
    INDEXED keeps the lookup on the primary key: `where` holds `m.is_deleted = 0`, and the
    planner would otherwise read every live row through an index that leads with it."""
    out: dict[int, Memory] = {}
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        rows = conn.execute(
            f"SELECT * FROM memories m NOT INDEXED WHERE m.seq IN ({','.join('?' * len(chunk))})"
            f" AND {where}",
            [*chunk, *(args or [])],
        )
        for row in rows:
            out[row["seq"]] = Memory.from_row(row)
    return out


def ranking_rows(
    conn: sqlite3.Connection, seqs: list[int], where: str = "1", args: list[Any] | None = None
) -> dict[int, Memory]:
    """`get_many_by_seq` with only the columns ranking reads (`Memory.for_ranking`): recall
    ranks ~200 candidates to return ~10, and reads the full rows of those alone."""
    out: dict[int, Memory] = {}
    columns = ", ".join(f"m.{c}" for c in RANKING_COLUMNS)
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        rows = conn.execute(
            f"SELECT {columns} FROM memories m NOT INDEXED"
            f" WHERE m.seq IN ({','.join('?' * len(chunk))}) AND {where}",
            [*chunk, *(args or [])],
        )
        for row in rows:
            out[row[0]] = Memory.for_ranking(row)
    return out


#: a memory neither deleted nor superseded: the rows of the duplicate guard `memories_live_hash`
LIVE = "is_deleted = 0 AND superseded_at IS NULL"


def hash_in_use(value: str) -> str:
    """SQL that is true when some memory row, live or not, holds the content hash `value` (a
    column such as `e.content_hash`, or `?`, bound twice). No one index holds every row's hash:
    a live row's is in the duplicate guard, any other row's in `memories_hash_retired`
    (migration 18), so that a new memory writes one random page of a hash index, not two. Each
    probe names its index's condition so that the planner can use it."""
    return (f"(EXISTS (SELECT 1 FROM memories WHERE content_hash = {value} AND {LIVE})"
            f" OR EXISTS (SELECT 1 FROM memories WHERE content_hash = {value}"
            f" AND NOT ({LIVE})))")


def present(conn: sqlite3.Connection, keys: list[str], hashes: list[str]
            ) -> tuple[set[str], set[str]]:
    """Which of these idempotency keys any memory holds, and which of these content hashes a
    live memory holds: an import asks once for a chunk instead of twice for every memory (a
    round trip each on PostgreSQL). A hash found here may still belong to another project or
    source: the caller looks that memory up as it would have."""
    found_keys: set[str] = set()
    found_hashes: set[str] = set()
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found_keys.update(r[0] for r in conn.execute(
            f"SELECT idempotency_key FROM memories WHERE idempotency_key IN ({marks})", chunk))
    for start in range(0, len(hashes), 500):
        chunk = hashes[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found_hashes.update(r[0] for r in conn.execute(
            f"SELECT content_hash FROM memories WHERE content_hash IN ({marks}) AND {LIVE}",
            chunk))
    return found_keys, found_hashes


def find_live_duplicate(
    conn: sqlite3.Connection,
    content_hash: str,
    project: str | None,
    source_id: str | None = None,
    exclude_id: str | None = None,
    *,
    agent_id: str | None = None,
    user_id: str | None = None,
) -> str | None:
    """The live (not deleted, not superseded) memory with this content in the same project,
    source and visibility scope (owners), if any: the row the unique `memories_live_hash`
    index would collide with."""
    row = conn.execute(
        "SELECT id FROM memories WHERE COALESCE(project, '') = ? AND COALESCE(source_id, '') = ?"
        " AND COALESCE(agent_id, '') = ? AND COALESCE(user_id, '') = ? AND content_hash = ?"
        " AND is_deleted = 0 AND superseded_at IS NULL AND id IS NOT ? LIMIT 1",
        (project or "", source_id or "", agent_id or "", user_id or "", content_hash,
         exclude_id),
    ).fetchone()
    return row["id"] if row else None


def corroborate(conn: sqlite3.Connection, memory_id: str, observer: str,
                cap: int) -> bool:
    """Record that `observer` stored this memory's content too, in one UPDATE (the caller's
    write transaction): a new observer joins `observed_by` (while it holds fewer than `cap`)
    and `observation_count` grows. An observer already listed changes nothing (False). Past
    the cap an observer cannot be told from one already counted, so each store counts."""
    cur = conn.execute(
        "UPDATE memories SET observation_count = observation_count + 1,"
        " observed_by = CASE WHEN json_array_length(observed_by) < ?"
        "   THEN json_insert(observed_by, '$[#]', ?) ELSE observed_by END"
        " WHERE id = ? AND NOT EXISTS (SELECT 1 FROM json_each(observed_by)"
        "   WHERE json_each.value = ?)",
        (cap, observer, memory_id, observer),
    )
    return cur.rowcount > 0


def live_with_key(
    conn: sqlite3.Connection, key: str, project: str | None, type_: str,
    agent_id: str | None = None, user_id: str | None = None,
) -> list[Memory]:
    """The live memories holding this lifecycle key, type, project and owners (a private
    version never replaces a global one, nor another scope's), newest first."""
    rows = conn.execute(
        "SELECT * FROM memories WHERE key = ? AND COALESCE(project, '') = ? AND type = ?"
        " AND COALESCE(agent_id, '') = ? AND COALESCE(user_id, '') = ?"
        " AND is_deleted = 0 AND superseded_at IS NULL ORDER BY valid_from DESC, seq DESC",
        (key, project or "", type_, agent_id or "", user_id or ""),
    ).fetchall()
    return [Memory.from_row(r) for r in rows]


def find_by_idempotency_key(conn: sqlite3.Connection, key: str) -> Memory | None:
    row = conn.execute("SELECT * FROM memories WHERE idempotency_key = ?", (key,)).fetchone()
    return Memory.from_row(row) if row else None


def adopt_idempotency_key(conn: sqlite3.Connection, memory_id: str, key: str) -> bool:
    """Give a memory that has no idempotency key this one (a deduplicated keyed write)."""
    cur = conn.execute(
        "UPDATE memories SET idempotency_key = ? WHERE id = ? AND idempotency_key IS NULL",
        (key, memory_id),
    )
    return cur.rowcount > 0


SCOPE_FIELDS = frozenset({"project", "agent_id", "user_id"})


def update_fields(
    conn: sqlite3.Connection, memory_id: str, fields: dict[str, Any], *, at: str, by: str | None
) -> None:
    """Set `fields`, bump the version and updated_at."""
    values = dict(fields)
    if "who" in values:
        values["who"] = scrub_optional(values["who"])
    if "tags" in values:
        values["tags"] = json.dumps(scrub_all(values["tags"]))
    if "pinned" in values:
        values["pinned"] = int(values["pinned"])
    sets = ", ".join(f"{k} = ?" for k in values)
    before = _position(conn, memory_id)
    old_content = None
    # entities belong to the memory's scope: a move to another project or owner relinks
    moved = bool(SCOPE_FIELDS & values.keys()) and entity_links.enabled(conn)
    if moved:
        entity_links.unlink_all(conn, memory_id)
    elif "content" in values and entity_links.enabled(conn):
        row = conn.execute("SELECT content FROM memories WHERE id = ?", (memory_id,)).fetchone()
        old_content = row[0] if row else None
    conn.execute(
        f"UPDATE memories SET {sets}{', ' if sets else ''}version = version + 1,"
        " updated_at = ?, updated_by = ? WHERE id = ?",
        [*values.values(), at, scrub_optional(by), memory_id],
    )
    if moved:
        entity_links.rescope(conn, memory_id)
    elif old_content is not None and old_content != values["content"]:
        entity_links.relink(conn, memory_id, old_content, values["content"])
    if {"content", "project", "source_id", "occurred_at"} & values.keys():
        _refresh(conn, before, memory_id)


def soft_delete(
    conn: sqlite3.Connection, memory_id: str, *, reason: str, at: str, by: str | None
) -> None:
    conn.execute(
        "UPDATE memories SET is_deleted = 1, deleted_at = ?, delete_reason = ?,"
        " version = version + 1, updated_at = ?, updated_by = ? WHERE id = ?",
        (at, scrub_optional(reason), at, scrub_optional(by), memory_id),
    )
    _shift_graph(conn, memory_id, entity_links.on_soft_delete)
    _refresh(conn, _position(conn, memory_id), memory_id)


def restore(conn: sqlite3.Connection, memory_id: str, *, at: str, by: str | None) -> None:
    conn.execute(
        "UPDATE memories SET is_deleted = 0, deleted_at = NULL, delete_reason = NULL,"
        " version = version + 1, updated_at = ?, updated_by = ? WHERE id = ?",
        (at, scrub_optional(by), memory_id),
    )
    _shift_graph(conn, memory_id, entity_links.on_restore)
    _refresh(conn, _position(conn, memory_id), memory_id)


def _shift_graph(conn: sqlite3.Connection, memory_id: str,
                 fn: Callable[[sqlite3.Connection, str, str], None]) -> None:
    """Soft delete and restore move the memory's co-occurrence counts (links stay)."""
    row = conn.execute("SELECT content FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is not None:
        fn(conn, memory_id, row[0])


def hard_delete(conn: sqlite3.Connection, memory_id: str) -> None:
    before = _position(conn, memory_id)
    hints.delete_for(conn, [memory_id])
    entity_links.unlink_all(conn, memory_id)
    conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    _refresh(conn, before, memory_id)


def record_access(
    conn: sqlite3.Connection, accesses: dict[int, tuple[int, int, str]]
) -> None:
    """Add accesses to access_count, explicit recalls to recall_count, and move last_accessed
    (no version bump, no FTS). `accesses`: seq -> (accesses, recalls, at)."""
    conn.executemany(
        "UPDATE memories SET access_count = access_count + ?, recall_count = recall_count + ?,"
        " last_accessed = ? WHERE seq = ?",
        [(count, recalls, at, seq) for seq, (count, recalls, at) in accesses.items()],
    )


def counts(conn: sqlite3.Connection) -> dict[str, Any]:
    """`live`: the current memories, those `list` and recall show (not deleted, not
    superseded), of every owner; `private` of them belong to an agent or a user (a reader
    sees them only as that agent or user); `superseded`: replaced versions kept as history."""
    row = conn.execute(
        "SELECT COUNT(*) AS total,"
        " SUM(is_deleted = 0 AND superseded_at IS NULL) AS live,"
        " SUM(is_deleted = 0 AND superseded_at IS NOT NULL) AS superseded,"
        " SUM(is_deleted = 1) AS deleted,"
        " SUM(is_deleted = 0 AND superseded_at IS NULL AND pinned = 1) AS pinned,"
        " SUM(is_deleted = 0 AND superseded_at IS NULL"
        "     AND (agent_id IS NOT NULL OR user_id IS NOT NULL)) AS private"
        " FROM memories"
    ).fetchone()
    by_type = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT type, COUNT(*) FROM memories WHERE is_deleted = 0 AND superseded_at IS NULL"
            " GROUP BY type"
        )
    }
    return {
        "total": row["total"] or 0,
        "live": row["live"] or 0,
        "private": row["private"] or 0,
        "superseded": row["superseded"] or 0,
        "deleted": row["deleted"] or 0,
        "pinned": row["pinned"] or 0,
        "by_type": by_type,
    }
