"""The tables a bundle carries (docs/export.md), read and written generically by column name.

Every record is a row of one table with all of its columns as `PRAGMA table_info` lists them,
so a column a later migration adds flows through export and import without code here. The
only columns left out are SQLite's surrogate row numbers that other rows never point to by
value (`memories.seq`, `memory_hints.id`): an import gives the rows new ones, in bundle order.

Values travel as JSON: BLOB columns as base64 text, `memories.tags` as a list; everything else
as stored (JSON-text columns stay text, so they come back byte for byte).

Reads page by rowid (keyset, `PAGE` rows a query) on one connection inside one read
transaction, so a bundle is one consistent snapshot however long it takes to stream.
Writes are `INSERT ... ON CONFLICT DO NOTHING`: a row whose id (or other unique key) is
already there is skipped, which makes an import idempotent.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mnemonist.store.backend import is_postgres
from mnemonist.store.filters import PRIVATE

PAGE = 500


@dataclass(frozen=True)
class Table:
    kind: str  # the record's `kind`
    table: str
    #: WHERE clause (over the table as `t`) selecting one project's rows; `?` is the project
    project_where: str
    #: columns not exported (surrogate row numbers)
    skip: tuple[str, ...] = ()
    #: WHERE clause leaving out the rows of memories the reader may not see; `{hidden}` is a
    #: subquery of those memories' ids
    scope_where: str = ""


_MEMORY_OF_PROJECT = "t.memory_id IN (SELECT id FROM memories WHERE project = ?)"
#: an entity belongs to one project and owner (migration 15); relations never cross them
_ENTITY_OF_PROJECT = "SELECT id FROM entities WHERE project = ?"

_NOT_HIDDEN = "t.memory_id NOT IN ({hidden})"
#: an entity only hidden memories mention is theirs (its name is words of their text)
_ENTITY_SEEN = ("(t.{col} IN (SELECT entity_id FROM memory_entity_mentions WHERE memory_id NOT"
                " IN ({hidden})) OR t.{col} NOT IN (SELECT entity_id FROM"
                " memory_entity_mentions WHERE memory_id IN ({hidden})))")

#: a private entity (an agent's or a user's) goes only with a memory the reader sees that
#: names it: a relation stated privately, with no memory, stays out of others' exports
_ENTITY_OWNED = ("t.{col} IN (SELECT id FROM entities WHERE (agent_id = '' AND user_id = '')"
                 " OR id IN (SELECT entity_id FROM memory_entity_mentions WHERE memory_id NOT"
                 " IN ({hidden})))")

#: in dependency order: an import meets every row a foreign key points to before the row
TABLES: tuple[Table, ...] = (
    Table("memory", "memories", "t.project = ?", skip=("seq",),
          scope_where="t.id NOT IN ({hidden})"),
    Table("history", "memory_history", _MEMORY_OF_PROJECT, scope_where=_NOT_HIDDEN),
    Table("hint", "memory_hints", _MEMORY_OF_PROJECT, skip=("id",), scope_where=_NOT_HIDDEN),
    Table("archive", "memory_archive", _MEMORY_OF_PROJECT, scope_where=_NOT_HIDDEN),
    Table("embedding", "embeddings",
          "t.content_hash IN (SELECT content_hash FROM memories WHERE project = ?"
          " UNION SELECT c.text_hash FROM memory_context c JOIN memories m ON m.seq = c.seq"
          " WHERE m.project = ?)",
          scope_where="t.content_hash NOT IN (SELECT content_hash FROM memories WHERE id IN"
                      " ({hidden}))"),
    Table("entity", "entities", "t.project = ?",
          scope_where=_ENTITY_SEEN.replace("{col}", "id") + " AND "
          + _ENTITY_OWNED.replace("{col}", "id")),
    Table("relation", "relations",
          f"t.source_entity_id IN ({_ENTITY_OF_PROJECT})",
          scope_where=_ENTITY_SEEN.replace("{col}", "source_entity_id") + " AND "
          + _ENTITY_SEEN.replace("{col}", "target_entity_id") + " AND "
          + _ENTITY_OWNED.replace("{col}", "source_entity_id")),
    Table("mention", "memory_entity_mentions", _MEMORY_OF_PROJECT, scope_where=_NOT_HIDDEN),
    Table("document", "documents", "t.project = ?"),
    Table("document_memory", "document_memories",
          "t.document_id IN (SELECT id FROM documents WHERE project = ?)"),
    Table("file", "memory_files", "t.project = ?"),
    Table("file_chunk", "file_chunks",
          "t.path IN (SELECT path FROM memory_files WHERE project = ?)"),
    Table("file_root", "file_roots", "t.project = ?"),
    Table("checkpoint", "session_checkpoints", "t.project = ?"),
)
BY_KIND = {t.kind: t for t in TABLES}

#: a session record gathers the rows of these tables under one session key
SESSION_PARTS = {"state": "session_state", "ingest": "session_ingest",
                 "transcript": "session_transcripts"}
SESSION_MEMORIES = "session_memories"
KINDS = ("header", *(t.kind for t in TABLES), "session")


#: PostgreSQL-only columns (computed there from the others: the row number, the full-text
#: vector, pgvector's copy of the blob): never in a bundle, so bundles of both stores agree
PG_COMPUTED = frozenset({"rowid", "fts", "embedding"})


def columns(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    """Column name -> declared type (SQLite's names: BLOB for PostgreSQL's bytea), in table
    order."""
    if is_postgres(conn):
        return {name: ("BLOB" if kind == "bytea" else kind.upper()) for name, kind in
                conn.execute("SELECT column_name, data_type FROM information_schema.columns"
                             " WHERE table_schema = current_schema() AND table_name = ?"
                             " ORDER BY ordinal_position", (table,))
                if name not in PG_COMPUTED}
    return {r[1]: (r[2] or "").upper() for r in conn.execute(f"PRAGMA table_info({table})")}


def _encode(row: sqlite3.Row, cols: dict[str, str], skip: tuple[str, ...] = ()
            ) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in cols:
        if name in skip:
            continue
        value = row[name]
        if isinstance(value, bytes | memoryview):
            value = base64.b64encode(value).decode("ascii")
        out[name] = value
    return out


#: the memories a reader may not see, as (SELECT of their ids, its arguments); None: all seen
Hidden = tuple[str, list[Any]] | None


def hidden_from(visible: str, args: list[Any]) -> Hidden:
    """The private memories the scopes' rule `visible` (store/filters.visibility_clause, with
    its arguments) leaves out, as `Hidden`."""
    return (f"SELECT m.id FROM memories m WHERE {PRIVATE} AND NOT ({visible})", args)


def _where(spec: Table, project: str | None, hidden: Hidden = None) -> tuple[str, list[Any]]:
    parts, args = [], []
    if project is not None:
        parts.append(spec.project_where)
        args += [project] * spec.project_where.count("?")
    if hidden is not None and spec.scope_where:
        sql, hidden_args = hidden
        parts.append(spec.scope_where.replace("{hidden}", sql))
        args += hidden_args * spec.scope_where.count("{hidden}")
    return (" AND ".join(parts) or "1 = 1"), args


def read_table(conn: sqlite3.Connection, spec: Table, project: str | None,
               hidden: Hidden = None) -> Iterator[dict[str, Any]]:
    """Every row of `spec.table` (of one project), as records, in rowid order; none of the
    `hidden` memories' rows."""
    cols = columns(conn, spec.table)
    where, args = _where(spec, project, hidden)
    last = -1
    while True:
        rows = conn.execute(
            f"SELECT rowid AS _rowid_, t.* FROM {spec.table} t WHERE rowid > ? AND {where}"
            f" ORDER BY rowid LIMIT {PAGE}", [last, *args]).fetchall()
        if not rows:
            return
        for row in rows:
            record = {"kind": spec.kind, **_encode(row, cols, spec.skip)}
            if spec.kind == "memory":
                record["tags"] = json.loads(record.get("tags") or "[]")
            yield record
        last = rows[-1]["_rowid_"]


def read_sessions(conn: sqlite3.Connection, project: str | None) -> Iterator[dict[str, Any]]:
    """One record per session key: its state, ingest progress, transcript and the memories
    it received (each part null / empty when that table has no row for it)."""
    parts = {name: (table, columns(conn, table)) for name, table in SESSION_PARTS.items()}
    sm_cols = columns(conn, SESSION_MEMORIES)
    union = " UNION ".join(
        f"SELECT session_key FROM {table}" + (" WHERE project = ?" if project is not None else "")
        for table in SESSION_PARTS.values())
    args = [project] * len(SESSION_PARTS) if project is not None else []
    last = ""
    while True:
        keys = [r[0] for r in conn.execute(
            f"SELECT session_key FROM ({union}) WHERE session_key > ? ORDER BY session_key"
            f" LIMIT {PAGE // 5}", [*args, last])]
        if not keys:
            return
        for key in keys:
            record: dict[str, Any] = {"kind": "session", "session_key": key}
            for name, (table, cols) in parts.items():
                row = conn.execute(f"SELECT * FROM {table} WHERE session_key = ?",
                                   (key,)).fetchone()
                record[name] = _encode(row, cols) if row is not None else None
            record["memories"] = [_encode(r, sm_cols) for r in conn.execute(
                f"SELECT * FROM {SESSION_MEMORIES} WHERE session_key = ? ORDER BY rowid",
                (key,))]
            yield record
        last = keys[-1]


def decode(values: dict[str, Any], cols: dict[str, str], where: str) -> dict[str, Any]:
    """A record's values for `INSERT`: unknown columns refused, base64 BLOBs decoded."""
    unknown = sorted(set(values) - set(cols))
    if unknown:
        raise ValueError(f"{where}: unknown columns {', '.join(unknown)}")
    out = dict(values)
    for name, value in values.items():
        if "BLOB" in cols[name] and isinstance(value, str):
            try:
                out[name] = base64.b64decode(value, validate=True)
            except ValueError as exc:
                raise ValueError(f"{where}: column {name} is not base64") from exc
        elif isinstance(value, dict | list):
            raise ValueError(f"{where}: column {name} must be a scalar")
    return out


def insert(conn: sqlite3.Connection, table: str, values: dict[str, Any]) -> bool:
    """Insert the row unless a unique key of it is already there. True when inserted."""
    names = list(values)
    cur = conn.execute(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        " ON CONFLICT DO NOTHING", [values[n] for n in names])
    return cur.rowcount > 0


def exists(conn: sqlite3.Connection, table: str, column: str, value: Any) -> bool:
    return conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ? LIMIT 1",
                        (value,)).fetchone() is not None
