"""The context index: each memory indexed under the lines around it in its source.

A turn of a conversation ("yes, the blue one") means little alone; indexed with its ±N
neighbours from the same source (same project and `source_id`, ordered by event time, then
arrival), the turn written twice so that its own words weigh most, and its event date, it is
found by questions that name what the neighbours say (the largest lever measured on recall).
The result returned is always the memory itself; only the keyword leg reads this index.

Rows live in `memory_context` (FTS5 `memories_ctx_fts` over it) and are kept current inside the
writer's transaction by the store functions that change memories, so every write path —
remember, import, modify, delete, recover, the pipeline, retention — keeps it in step.
The window is per connection (`configure`), 0 turning the index off.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

_WINDOWS: dict[int, int] = {}

#: Facts the pipeline derives share their source memory's source and time, but they are not
#: lines of that source: they never appear in another memory's context (their own context is
#: the lines around them).
DERIVED_WHY = "extracted-fact"
#: A private memory (an owner in `agent_id` / `user_id`) is not a line either: its text must
#: never reach the context of a memory other readers see (docs/scopes.md).
LINE = (f"COALESCE(why, '') != '{DERIVED_WHY}'"
        " AND agent_id IS NULL AND user_id IS NULL")


def is_line(why: str | None) -> bool:
    """`LINE` for a row in hand: False for what the pipeline derived from another memory."""
    return (why or "") != DERIVED_WHY


def configure(conn: sqlite3.Connection, window: int) -> None:
    _WINDOWS[id(conn)] = window


def window_of(conn: sqlite3.Connection) -> int:
    return _WINDOWS.get(id(conn), 0)


def date_text(occurred_at: str) -> str:
    """"2023-05-08T13:56:00.000Z" -> "8 May 2023" (words a question may use)."""
    try:
        d = datetime.fromisoformat(occurred_at.replace("Z", "+00:00"))
    except ValueError:
        return ""
    return f"{d.day} {d.strftime('%B')} {d.year}"


def _text(seq_items: list[Any], i: int, n: int) -> str:
    item = seq_items[i]
    before = [r["content"] for r in seq_items[max(0, i - n) : i]]
    after = [r["content"] for r in seq_items[i + 1 : i + 1 + n]]
    parts = [*before, item["content"], item["content"], *after, date_text(item["occurred_at"])]
    return " ".join(p for p in parts if p)


def text_hash(text: str) -> str:
    """The key of the context text's vector in `embeddings` (same scheme as memory content)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_WRITE = (
    "INSERT INTO memory_context (seq, text, text_hash) VALUES (?, ?, ?)"
    " ON CONFLICT(seq) DO UPDATE SET text = excluded.text, text_hash = excluded.text_hash"
    " WHERE text IS NOT excluded.text"
)


def _write(conn: sqlite3.Connection, seq: int, text: str) -> None:
    conn.execute(_WRITE, (seq, text, text_hash(text)))


def _side(conn: sqlite3.Connection, project: str | None, source_id: str, occurred_at: str,
          seq: int, n: int, after: bool) -> list[sqlite3.Row]:
    cond = ("(occurred_at > ? OR (occurred_at = ? AND seq > ?))" if after
            else "(occurred_at < ? OR (occurred_at = ? AND seq < ?))")
    order = "occurred_at ASC, seq ASC" if after else "occurred_at DESC, seq DESC"
    # `+is_deleted`: the (is_deleted, occurred_at) event-time index must not be used here;
    # without statistics the planner took it over (source_id, occurred_at, seq) and read
    # every earlier memory of the store (54 ms a call at 35,000 memories, import at 8/s).
    rows = conn.execute(
        f"SELECT seq, content, occurred_at FROM memories WHERE source_id = ?"
        f" AND COALESCE(project, '') = ? AND +is_deleted = 0 AND {LINE} AND {cond}"
        f" ORDER BY {order} LIMIT ?",
        (source_id, project or "", occurred_at, occurred_at, seq, 2 * n),
    ).fetchall()
    return rows if after else rows[::-1]


def refresh_at(
    conn: sqlite3.Connection,
    seq: int,
    project: str | None,
    source_id: str | None,
    occurred_at: str,
) -> None:
    """Recompute the context rows a change at this position can affect: the memory itself
    (dropped when it is no longer live) and up to N live neighbours on each side."""
    n = window_of(conn)
    if n <= 0:
        return
    me = conn.execute(
        f"SELECT seq, content, occurred_at, {LINE} AS line FROM memories"
        " WHERE seq = ? AND is_deleted = 0",
        (seq,),
    ).fetchone()
    if me is None:
        conn.execute("DELETE FROM memory_context WHERE seq = ?", (seq,))
    if not source_id:
        if me is not None:
            _write(conn, seq, _text([me], 0, n))
        return
    before = _side(conn, project, source_id, occurred_at, seq, n, after=False)
    after = _side(conn, project, source_id, occurred_at, seq, n, after=True)
    items = [*before, *([me] if me is not None else []), *after]
    centre = len(before)
    if me is not None and not me["line"]:  # a derived fact: only its own row changes
        _write(conn, seq, _text(items, centre, n))
        return
    lo, hi = max(0, centre - n), min(len(items), centre + (1 if me is not None else 0) + n)
    for i in range(lo, hi):
        _write(conn, items[i]["seq"], _text(items, i, n))


@dataclass(frozen=True)
class Inserted:
    """A memory inserted in this transaction whose context `refresh_many` writes: a line of
    its source (see `LINE`) and live."""

    seq: int
    project: str | None
    source_id: str | None
    occurred_at: str
    content: str


_ORDER_ASC = "occurred_at ASC, seq ASC"


def refresh_many(conn: sqlite3.Connection, inserted: list[Inserted]) -> None:
    """`refresh_at` for many lines inserted in this transaction (bulk import), each context
    row written once: per source, the lines from 2N before the first inserted one to 2N after
    the last are read in one pass, and every row within N of an inserted line gets its text
    from that final order, the text `refresh_at` one insert after another would leave."""
    n = window_of(conn)
    if n <= 0 or not inserted:
        return
    texts: dict[int, str] = {}
    sources: dict[tuple[str, str], list[Inserted]] = {}
    for item in inserted:
        if item.source_id:
            sources.setdefault((item.project or "", item.source_id), []).append(item)
        else:  # no source: its own text alone
            texts[item.seq] = _text([{"content": item.content,
                                      "occurred_at": item.occurred_at}], 0, n)
    for (project, source_id), items in sources.items():
        items.sort(key=lambda i: (i.occurred_at, i.seq))
        first, last = items[0], items[-1]
        before = _side(conn, project, source_id, first.occurred_at, first.seq, n, after=False)
        after = _side(conn, project, source_id, last.occurred_at, last.seq, n, after=True)
        middle = conn.execute(
            "SELECT seq, content, occurred_at FROM memories WHERE source_id = ?"
            f" AND COALESCE(project, '') = ? AND +is_deleted = 0 AND {LINE}"
            " AND (occurred_at > ? OR (occurred_at = ? AND seq >= ?))"
            " AND (occurred_at < ? OR (occurred_at = ? AND seq <= ?))"
            f" ORDER BY {_ORDER_ASC}",
            (source_id, project, first.occurred_at, first.occurred_at, first.seq,
             last.occurred_at, last.occurred_at, last.seq),
        ).fetchall()
        rows = [*before, *middle, *after]
        new = {i.seq for i in items}
        touched: set[int] = set()
        for k, row in enumerate(rows):
            if row["seq"] in new:
                touched.update(range(max(0, k - n), min(len(rows), k + n + 1)))
        for k in sorted(touched):
            texts[rows[k]["seq"]] = _text(rows, k, n)
    _write_many(conn, texts)


def _write_many(conn: sqlite3.Connection, texts: dict[int, str]) -> None:
    if texts:
        conn.executemany(_WRITE, [(seq, text, text_hash(text)) for seq, text in texts.items()])


def refresh_memory(conn: sqlite3.Connection, seq: int) -> None:
    row = conn.execute(
        "SELECT project, source_id, occurred_at FROM memories WHERE seq = ?", (seq,)
    ).fetchone()
    if row is None:
        conn.execute("DELETE FROM memory_context WHERE seq = ?", (seq,))
        return
    refresh_at(conn, seq, row["project"], row["source_id"], row["occurred_at"])


def rebuild(conn: sqlite3.Connection) -> int:
    """Recompute every live memory's context (after the window changed). Returns rows."""
    n = window_of(conn)
    conn.execute("DELETE FROM memory_context")
    if n <= 0:
        return 0
    count = 0
    sources = conn.execute(
        "SELECT DISTINCT COALESCE(project, ''), source_id FROM memories"
        " WHERE is_deleted = 0 AND source_id IS NOT NULL"
    ).fetchall()
    for project, source_id in sources:
        items = conn.execute(
            "SELECT seq, content, occurred_at FROM memories WHERE source_id = ?"
            f" AND COALESCE(project, '') = ? AND is_deleted = 0 AND {LINE}"
            " ORDER BY occurred_at, seq",
            (source_id, project),
        ).fetchall()
        for i in range(len(items)):
            _write(conn, items[i]["seq"], _text(items, i, n))
        count += len(items)
        for row in conn.execute(
            "SELECT seq FROM memories WHERE source_id = ? AND COALESCE(project, '') = ?"
            f" AND is_deleted = 0 AND NOT ({LINE})",
            (source_id, project),
        ).fetchall():
            refresh_memory(conn, row[0])
            count += 1
    for row in conn.execute(
        "SELECT seq, content, occurred_at FROM memories WHERE is_deleted = 0 AND source_id IS NULL"
    ).fetchall():
        _write(conn, row["seq"], _text([row], 0, n))
        count += 1
    return count


def ensure(conn: sqlite3.Connection, window: int) -> bool:
    """Make the stored context rows match `window` (rebuild after a change). True if rebuilt."""
    configure(conn, window)
    row = conn.execute("SELECT value FROM meta WHERE key = 'context_window'").fetchone()
    if row is not None and int(row[0]) == window:
        return False
    rebuild(conn)
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('context_window', ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (str(window),),
    )
    return True


# -- reads of the context texts (the keyword mirror, search/keyword_mirror_keeper.py) -------


def row_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM memory_context").fetchone()[0])


def texts_after(conn: sqlite3.Connection, last: int, limit: int) -> list[Any]:
    """(seq, text) of the context rows after seq `last`, in seq order, at most `limit`."""
    return conn.execute("SELECT seq, text FROM memory_context WHERE seq > ? ORDER BY seq"
                        " LIMIT ?", (last, limit)).fetchall()


def texts_of(conn: sqlite3.Connection, seqs: list[int]) -> list[Any]:
    """(seq, text) of those of `seqs` that have a context row."""
    marks = ",".join("?" * len(seqs))
    return conn.execute(
        f"SELECT seq, text FROM memory_context WHERE seq IN ({marks})", seqs).fetchall()
