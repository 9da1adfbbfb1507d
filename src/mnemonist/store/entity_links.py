"""The inline entity linker (document 000): the entities a memory's text names are linked to it
inside the transaction that writes the memory, so the graph knows them the moment the memory
commits — no queue, no LLM, only `text.entities` and a few indexed statements.

The store functions that change a memory's text call it (`memories.insert`,
`memories.update_fields`, `memories.hard_delete`), so remember, import, documents, modify and
the pipeline's controlled writes all link the same way. It is on or off per connection
(`configure`, like the context window): off unless configured; the daemon turns it on from
`memory.pipelineV2.graph.enabled` and `graph.inlineLinker`. Off, inserts and modifies write no
graph row at all; a hard delete still removes the memory's links, whoever wrote them.

What it writes for one memory (text scanned up to `MAX_SCAN_CHARS`, at most `MAX_LINKS`):

- `entities`, matched by canonical name, created when new, typed by the extractor. A
  tentative name (a lone capitalised word at a sentence start) only links to an entity that
  already exists; it never creates one.
- `memory_entity_mentions` with confidence `INLINE_CONFIDENCE`, `INSERT OR IGNORE`; an
  entity's `mentions` grows only when a link is new, so linking again is idempotent and the
  count stays the number of linked memories.
- `co_occurrence` relations between the first `MAX_PAIR_ENTITIES` linked entities, one row per
  unordered pair (source = the smaller id), strength 1.0, `mentions` + 1 for each memory in
  which the pair newly co-occurs (at most 45 rows per memory). Like extracted triples, these
  counts are evidence seen, not live state: they are not decremented when a memory changes or
  goes; the retention worker removes an entity's relations with the entity.

A content change unlinks the entities the old text named and the new one does not (mentions
- 1; a link the pipeline wrote for such an entity goes too: the memory no longer names it),
then links the new text.
"""

from __future__ import annotations

import sqlite3
import uuid

from mnemonist.model.memory import utcnow
from mnemonist.text.entities import Extraction, canonical_name, extract

INLINE_CONFIDENCE = 0.6
MAX_LINKS = 32
MAX_PAIR_ENTITIES = 10
MAX_SCAN_CHARS = 10_000
CO_OCCURRENCE = "co_occurrence"

_ENABLED: dict[int, bool] = {}


def configure(conn: sqlite3.Connection, enabled: bool) -> None:
    _ENABLED[id(conn)] = enabled


def enabled(conn: sqlite3.Connection) -> bool:
    return _ENABLED.get(id(conn), False)


def _extract(content: str) -> Extraction:
    found = extract(content[:MAX_SCAN_CHARS])
    entities = found.entities[:MAX_LINKS]
    return Extraction(entities, found.tentative[: MAX_LINKS - len(entities)])


def _keys(found: Extraction) -> dict[str, str]:
    """canonical name -> name, certain entities first, in order of appearance."""
    return {canonical_name(e.name): e.name for e in [*found.entities, *found.tentative]}


def link(conn: sqlite3.Connection, memory_id: str, content: str) -> int:
    """Link the entities `content` names to the memory. Returns the links added."""
    if not enabled(conn):
        return 0
    return _link(conn, memory_id, _extract(content))


def _link(conn: sqlite3.Connection, memory_id: str, found: Extraction) -> int:
    wanted = _keys(found)
    if not wanted:
        return 0
    now = utcnow()
    keys = list(wanted)
    ids: dict[str, str] = dict(conn.execute(
        f"SELECT canonical_name, id FROM entities WHERE canonical_name IN"
        f" ({','.join('?' * len(keys))})", keys,
    ).fetchall())
    # new entities, certain ones only; no other writer can add one meanwhile (write lock)
    rows = [(str(uuid.uuid4()), e.name, key, e.entity_type, now, now)
            for e in found.entities if (key := canonical_name(e.name)) not in ids]
    if rows:
        conn.executemany(
            "INSERT INTO entities (id, name, canonical_name, entity_type, mentions, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, 0, ?, ?)", rows,
        )
        ids.update((row[2], row[0]) for row in rows)
    linked = [ids[k] for k in keys if k in ids]
    new: set[str] = set()
    for key in keys:
        if key in ids and conn.execute(
            "INSERT OR IGNORE INTO memory_entity_mentions (memory_id, entity_id, mention_text,"
            " confidence, created_at) VALUES (?, ?, ?, ?, ?)",
            (memory_id, ids[key], wanted[key], INLINE_CONFIDENCE, now),
        ).rowcount:
            new.add(ids[key])
    if not new:
        return 0
    conn.executemany(
        "UPDATE entities SET mentions = mentions + 1, updated_at = ? WHERE id = ?",
        [(now, entity_id) for entity_id in linked if entity_id in new],
    )
    _co_occur(conn, linked[:MAX_PAIR_ENTITIES], new, now)
    return len(new)


def _co_occur(conn: sqlite3.Connection, ids: list[str], new: set[str], now: str) -> None:
    """Count each pair once per memory: only pairs with a newly linked end are new here."""
    rows = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if a in new or b in new:
                source, target = (a, b) if a < b else (b, a)
                rows.append((str(uuid.uuid4()), source, target, INLINE_CONFIDENCE, now, now))
    if rows:
        conn.executemany(
            "INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
            f" strength, mentions, confidence, created_at, updated_at) VALUES (?, ?, ?,"
            f" '{CO_OCCURRENCE}', 1.0, 1, ?, ?, ?) ON CONFLICT(source_entity_id,"
            " target_entity_id, relation_type) DO UPDATE SET mentions = mentions + 1,"
            " updated_at = excluded.updated_at",
            rows,
        )


def relink(conn: sqlite3.Connection, memory_id: str, old_content: str, new_content: str) -> None:
    """The memory's text changed: unlink what only the old text named, link the new text."""
    if not enabled(conn):
        return
    new = _extract(new_content)
    keep = _keys(new)
    gone = [k for k in _keys(_extract(old_content)) if k not in keep]
    if gone:
        rows = conn.execute(
            f"SELECT mm.entity_id FROM memory_entity_mentions mm JOIN entities e"
            f" ON e.id = mm.entity_id WHERE mm.memory_id = ?"
            f" AND e.canonical_name IN ({','.join('?' * len(gone))})",
            [memory_id, *gone],
        ).fetchall()
        _unlink(conn, memory_id, [r[0] for r in rows])
    _link(conn, memory_id, new)


def unlink_all(conn: sqlite3.Connection, memory_id: str) -> int:
    """Remove every link of the memory (it is being deleted for good). Returns the links."""
    rows = conn.execute(
        "SELECT entity_id FROM memory_entity_mentions WHERE memory_id = ?", (memory_id,)
    ).fetchall()
    return _unlink(conn, memory_id, [r[0] for r in rows])


def _unlink(conn: sqlite3.Connection, memory_id: str, entity_ids: list[str]) -> int:
    if not entity_ids:
        return 0
    now = utcnow()
    conn.executemany(
        "DELETE FROM memory_entity_mentions WHERE memory_id = ? AND entity_id = ?",
        [(memory_id, e) for e in entity_ids],
    )
    conn.executemany(
        "UPDATE entities SET mentions = MAX(0, mentions - 1), updated_at = ? WHERE id = ?",
        [(now, e) for e in entity_ids],
    )
    return len(entity_ids)
