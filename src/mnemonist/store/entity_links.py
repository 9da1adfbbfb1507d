"""The inline entity linker: the entities a memory's text names are linked to it
inside the transaction that writes the memory, so the graph knows them the moment the memory
commits — no queue, no LLM, only `text.entities` and a few indexed statements.

The store functions that change a memory's text call it (`memories.insert`,
`memories.update_fields`, `memories.hard_delete`), so remember, import, documents, modify and
the pipeline's controlled writes all link the same way. It is on or off per connection
(`configure`, like the context window): off unless configured; the daemon turns it on from
`memory.pipelineV2.graph.enabled` and `graph.inlineLinker`. Off, inserts and modifies write no
graph row at all; a hard delete still removes the memory's links, whoever wrote them.

What it writes for one memory (text scanned up to `MAX_SCAN_CHARS`, at most `MAX_LINKS`):

- `entities`, matched by canonical name in the memory's scope (its project, agent_id and
  user_id: `graph.memory_scope`), created there when new, typed by the extractor. A
  tentative name (a lone capitalised word at a sentence start) only links to an entity that
  already exists; it never creates one. A name the entity-health pass folded into another
  entity ("ttls" into "ttl", `entity_aliases`) links to that entity; a text naming both links
  it once.
- `memory_entity_mentions` with confidence `INLINE_CONFIDENCE`, `INSERT OR IGNORE`; an
  entity's `mentions` grows only when a link is new, so linking again is idempotent and the
  count stays the number of linked memories.
- `co_occurrence` relations between the first `MAX_PAIR_ENTITIES` linked entities, one row per
  unordered pair (source = the smaller id), strength 1.0, reason `co-occurrence`, `mentions`
  + 1 for each memory in which the pair newly co-occurs (at most 45 rows per memory), and the
  confidence that count earns (`graph.co_occurrence_confidence`). The count is live: it falls
  when a memory stops naming one of the pair (modify), is deleted (soft or purge; a recover
  adds it back), and the row goes at 0.
- `depends_on` relations for dependencies the text states ("ShopApi depends on ShopDb",
  `text.dependencies`): reason `pattern-matched` (0.8), `multi-memory` (0.9) once a second
  memory states it. Counted once per memory, like co-occurrence; not decremented (a stated
  dependency stays evidence until its entity goes).
- `entity_attributes`: per linked entity, the sentence of the memory that names it; kind
  `constraint` with importance 0.85 when the memory is decision language (decision
  auto-protection), else `attribute` with 0.5. Rewritten on modify, removed on purge.

A content change unlinks the entities the old text named and the new one does not (mentions
- 1; a link the pipeline wrote for such an entity goes too: the memory no longer names it),
then links the new text.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from typing import Any, NamedTuple

from mnemonist.model.memory import utcnow
from mnemonist.store.graph import REASONS, co_occurrence_confidence, memory_scope
from mnemonist.store.row_ids import time_ordered_id
from mnemonist.text.entities import Entity, Extraction, extract, is_decision_content
from mnemonist.text.prose_graph import Alias, key_of, read
from mnemonist.text.relations import Relation
from mnemonist.text.tagger import available as prose_available

INLINE_CONFIDENCE = 0.6
MAX_LINKS = 32
MAX_PAIR_ENTITIES = 10
MAX_SCAN_CHARS = 10_000
CO_OCCURRENCE = "co_occurrence"
#: the job a bulk import queues per chunk: the prose reading of its memories, in the background
PROSE_JOB = "prose_link"
CONSTRAINT_IMPORTANCE = 0.85
ATTRIBUTE_IMPORTANCE = 0.5
MAX_ATTRIBUTE_CHARS = 300
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")

_ENABLED: dict[int, bool] = {}


def configure(conn: sqlite3.Connection, enabled: bool) -> None:
    _ENABLED[id(conn)] = enabled


def enabled(conn: sqlite3.Connection) -> bool:
    return _ENABLED.get(id(conn), False)


class _Found(NamedTuple):
    entities: list[Entity]
    tentative: list[Entity]
    relations: list[Relation]
    aliases: list[Alias]


def _extract(content: str) -> _Found:
    found = read(content[:MAX_SCAN_CHARS])
    entities = found.entities[:MAX_LINKS]
    return _Found(entities, found.tentative[: MAX_LINKS - len(entities)], found.relations,
                  found.aliases)


def _extract_names(content: str) -> _Found:
    """The names alone (no tagging): what a bulk import links in its own transaction; the
    prose reading follows in the background (`PROSE_JOB`)."""
    found = extract(content[:MAX_SCAN_CHARS])
    entities = found.entities[:MAX_LINKS]
    return _Found(entities, found.tentative[: MAX_LINKS - len(entities)], [], [])


def content_digest(content: str) -> str:
    """What the prose job checks a memory's text against: changed since, it is not read (a
    modify links the new text in full)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:16]


def _keys(found: Extraction | _Found) -> dict[str, str]:
    """canonical name -> name, certain entities first, in order of appearance."""
    return {key_of(e): e.name for e in [*found.entities, *found.tentative]}


def named_keys(content: str) -> set[str]:
    """The canonical names the linker reads in `content` (certain and tentative), as it reads
    them: the first `MAX_SCAN_CHARS`, at most `MAX_LINKS`."""
    return set(_keys(_extract(content)))


def _lookup(conn: sqlite3.Connection, scope: tuple[str, str, str],
            keys: list[str]) -> dict[str, str]:
    """canonical name -> id of the scope's entity of that name, or of the entity it was folded
    into (`entity_aliases`, written by the entity-health pass); an entity's own name wins."""
    marks = ",".join("?" * len(keys))
    return dict(conn.execute(
        "SELECT canonical_name, entity_id FROM entity_aliases WHERE project = ?"
        f" AND agent_id = ? AND user_id = ? AND canonical_name IN ({marks}) UNION ALL"
        " SELECT canonical_name, id FROM entities WHERE project = ? AND agent_id = ?"
        f" AND user_id = ? AND canonical_name IN ({marks})",
        [*scope, *keys, *scope, *keys],
    ).fetchall())


def _first_per_entity(keys: list[str], ids: dict[str, str]) -> list[str]:
    """The keys that name an entity, one per entity (a name and its alias in one text: the
    first written)."""
    seen: set[str] = set()
    out = []
    for k in keys:
        if k in ids and ids[k] not in seen:
            seen.add(ids[k])
            out.append(k)
    return out


def _linked_keys(conn: sqlite3.Connection, memory_id: str) -> dict[str, str]:
    """canonical name (or alias) -> id, of the entities linked to the memory."""
    return dict(conn.execute(
        "SELECT a.canonical_name, a.entity_id FROM memory_entity_mentions mm"
        " CROSS JOIN entity_aliases a ON a.entity_id = mm.entity_id WHERE mm.memory_id = ?"
        " UNION ALL SELECT e.canonical_name, e.id FROM memory_entity_mentions mm"
        " CROSS JOIN entities e ON e.id = mm.entity_id WHERE mm.memory_id = ?",
        (memory_id, memory_id)).fetchall())


def link(conn: sqlite3.Connection, memory_id: str, content: str, *,
         scope: tuple[str, str, str] | None = None, fresh: bool = False) -> int:
    """Link the entities `content` names to the memory. Returns the links added. An insert
    passes the memory's `scope` (as `memory_scope` reads it) and `fresh`: a memory written in
    this very statement has no link yet, so every link is new and none is looked up."""
    if not enabled(conn):
        return 0
    return _link(conn, memory_id, _extract(content), content, scope=scope, fresh=fresh)


def link_prose(conn: sqlite3.Connection, memory_id: str, content: str) -> int:
    """The prose reading of a memory a bulk import linked by its names only: the phrases,
    aliases and relations its text states (every relation, once: this runs once per memory).
    Returns the links added."""
    if not enabled(conn):
        return 0
    return _link(conn, memory_id, _extract(content), content, relate_all=True)


def _link(conn: sqlite3.Connection, memory_id: str, found: _Found, content: str, *,
          scope: tuple[str, str, str] | None = None, fresh: bool = False,
          relate_all: bool = False) -> int:
    wanted = _keys(found)
    if not wanted:
        return 0
    now = utcnow()
    keys = list(wanted)
    scope = scope or memory_scope(conn, memory_id)
    ids = _lookup(conn, scope, keys)
    # new entities, certain ones only. On SQLite no other writer can add one meanwhile (write
    # lock); on PostgreSQL another daemon may have committed the same name since the look-up:
    # its row stands (the insert is ignored) and the ids are read again
    rows = [(time_ordered_id(), e.name, key, e.entity_type, now, now, *scope)
            for e in found.entities if (key := key_of(e)) not in ids]
    if rows:
        conn.executemany(
            "INSERT OR IGNORE INTO entities (id, name, canonical_name, entity_type, mentions,"
            " created_at, updated_at, project, agent_id, user_id)"
            " VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
            rows,
        )
        ids.update(_lookup(conn, scope, [row[2] for row in rows]))
    _alias(conn, scope, found.aliases, ids, now)
    keys = _first_per_entity(keys, ids)
    linked = [ids[k] for k in keys]
    new: set[str] = set()
    if fresh:
        conn.executemany(
            "INSERT INTO memory_entity_mentions (memory_id, entity_id, mention_text,"
            " confidence, created_at) VALUES (?, ?, ?, ?, ?)",
            [(memory_id, ids[k], wanted[k], INLINE_CONFIDENCE, now) for k in keys if k in ids])
        new.update(linked)
    for key in keys if not fresh else ():
        if key in ids and conn.execute(
            "INSERT OR IGNORE INTO memory_entity_mentions (memory_id, entity_id, mention_text,"
            " confidence, created_at) VALUES (?, ?, ?, ?, ?)",
            (memory_id, ids[key], wanted[key], INLINE_CONFIDENCE, now),
        ).rowcount:
            new.add(ids[key])
    if not new:
        if relate_all:
            _relate(conn, found.relations, ids, set(ids.values()), now)
        return 0
    conn.executemany(
        "UPDATE entities SET mentions = mentions + 1, updated_at = ? WHERE id = ?",
        [(now, entity_id) for entity_id in linked if entity_id in new],
    )
    _co_occur(conn, linked[:MAX_PAIR_ENTITIES], new, now)
    _relate(conn, found.relations, ids, set(ids.values()) if relate_all else new, now)
    _attributes(conn, memory_id, content, [(k, wanted[k], ids[k]) for k in keys
                                           if k in ids and ids[k] in new], now)
    return len(new)


def _alias(conn: sqlite3.Connection, scope: tuple[str, str, str], aliases: list[Alias],
           ids: dict[str, str], now: str) -> None:
    """Names the text gives another name ("the checkout API (CheckoutApi)") become aliases of
    that entity in the scope, so later texts that write them link to it (`_lookup`). A name
    that is already an entity of its own stays one (the entity-health pass folds look-alikes)."""
    rows = [(*scope, a.key, ids[a.primary], a.name, now) for a in aliases
            if a.primary in ids and a.key not in ids]
    if rows:
        conn.executemany(
            "INSERT OR IGNORE INTO entity_aliases (project, agent_id, user_id, canonical_name,"
            " entity_id, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        ids.update((row[3], row[4]) for row in rows)


def _relate(conn: sqlite3.Connection, relations: list[Relation], ids: dict[str, str],
            new: set[str], now: str) -> None:
    """Relations the text states (`text/relations.py`), once per memory like co-occurrence:
    reason `pattern-matched` (0.8), `multi-memory` (0.9) once a second memory states it; the
    sentence that stated it first is the relation's note."""
    first, again = REASONS["pattern-matched"], REASONS["multi-memory"]
    rows = [(time_ordered_id(), ids[r.source], ids[r.target], r.relation_type, first,
             r.sentence[:MAX_ATTRIBUTE_CHARS], now, now) for r in relations
            if r.source in ids and r.target in ids and ids[r.source] != ids[r.target]
            and (ids[r.source] in new or ids[r.target] in new)]
    if rows:
        conn.executemany(
            "INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
            " strength, mentions, confidence, reason, note, created_at, updated_at) VALUES (?,"
            " ?, ?, ?, 1.0, 1, ?, 'pattern-matched', ?, ?, ?)"
            " ON CONFLICT(source_entity_id, target_entity_id, relation_type) DO UPDATE SET"
            # an inferred row is taken over by the stated evidence (it starts at one memory)
            " mentions = CASE WHEN reason = 'inferred' THEN 1 ELSE mentions + 1 END,"
            " updated_at = excluded.updated_at, confirmed_at = excluded.updated_at,"
            f" confidence = CASE WHEN reason = 'inferred' THEN {first}"
            f" ELSE MAX(confidence, {again}) END,"
            " derived_from = CASE WHEN reason = 'inferred' THEN NULL ELSE derived_from END,"
            " note = COALESCE(note, excluded.note),"
            " reason = CASE WHEN reason = 'pattern-matched' THEN 'multi-memory'"
            " WHEN reason = 'inferred' THEN 'pattern-matched' ELSE reason END",
            rows,
        )


def _sentence_naming(content: str, name: str) -> str:
    low = name.lower()
    for m in _SENTENCE.finditer(content[:MAX_SCAN_CHARS]):
        if low in m.group().lower():
            return m.group().strip()[:MAX_ATTRIBUTE_CHARS]
    return content.strip()[:MAX_ATTRIBUTE_CHARS]


def _attributes(conn: sqlite3.Connection, memory_id: str, content: str,
                linked: list[tuple[str, str, str]], now: str) -> None:
    """What the memory says about each newly linked entity; decision language makes it a
    constraint (decision auto-protection)."""
    if not linked:
        return
    decision = is_decision_content(content)
    kind = "constraint" if decision else "attribute"
    importance = CONSTRAINT_IMPORTANCE if decision else ATTRIBUTE_IMPORTANCE
    conn.executemany(
        "INSERT OR IGNORE INTO entity_attributes (id, entity_id, memory_id, kind, content,"
        " importance, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'inline', ?, ?)",
        [(time_ordered_id(), entity_id, memory_id, kind, _sentence_naming(content, name),
          importance, now, now) for _, name, entity_id in linked],
    )


def _co_occur(conn: sqlite3.Connection, ids: list[str], new: set[str], now: str) -> None:
    """Count each pair once per memory: only pairs with a newly linked end are new here."""
    rows = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if a in new or b in new:
                source, target = (a, b) if a < b else (b, a)
                rows.append((time_ordered_id(), source, target, co_occurrence_confidence(1),
                             now, now))
    if rows:
        conn.executemany(
            "INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
            " strength, mentions, confidence, reason, created_at, updated_at) VALUES (?, ?, ?,"
            f" '{CO_OCCURRENCE}', 1.0, 1, ?, 'co-occurrence', ?, ?) ON CONFLICT(source_entity_id,"
            " target_entity_id, relation_type) DO UPDATE SET mentions = mentions + 1,"
            f" confidence = {_CONFIDENCE_SQL.format(n='mentions + 1')}, boost = 0,"
            " updated_at = excluded.updated_at, confirmed_at = excluded.updated_at",
            rows,
        )


#: co_occurrence_confidence in SQL, of the count `n`
_CONFIDENCE_SQL = "MIN(0.7, 0.4 + 0.1 * ({n}))"


def _count_mentions(conn: sqlite3.Connection, counts: dict[str, int], now: str) -> None:
    """entities.mentions += n for each (entity, n): one statement on PostgreSQL."""
    if not counts:
        return
    if getattr(conn, "dialect", "sqlite") == "postgresql":  # (store.backend imports this)
        conn.execute(
            "UPDATE entities SET mentions = entities.mentions + u.n, updated_at = ?"
            " FROM (SELECT unnest(CAST(? AS BIGINT[])) AS n, unnest(CAST(? AS TEXT[])) AS id) u"
            " WHERE entities.id = u.id", (now, list(counts.values()), list(counts)))
        return
    conn.executemany("UPDATE entities SET mentions = mentions + ?, updated_at = ? WHERE id = ?",
                     [(n, now, entity_id) for entity_id, n in counts.items()])


def _pair_ids(conn: sqlite3.Connection, memory_id: str, content: str) -> list[str]:
    """The memory's linked entities that took part in its co-occurrence pairs: the first
    `MAX_PAIR_ENTITIES` of its text that are linked, in the order the linker counted them."""
    keys = list(_keys(_extract(content)))
    if not keys:
        return []
    rows = _linked_keys(conn, memory_id)
    return [rows[k] for k in _first_per_entity(keys, rows)][:MAX_PAIR_ENTITIES]


def _shift_pairs(conn: sqlite3.Connection, pairs: set[tuple[str, str]], delta: int,
                 now: str) -> None:
    """Add `delta` to each co-occurrence pair's count (confidence follows); a pair at 0 goes."""
    if not pairs:
        return
    if delta > 0:
        conn.executemany(
            "INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
            " strength, mentions, confidence, reason, created_at, updated_at) VALUES (:id, :a,"
            f" :b, '{CO_OCCURRENCE}', 1.0, :d, :c, 'co-occurrence', :now, :now)"
            " ON CONFLICT(source_entity_id, target_entity_id, relation_type) DO UPDATE SET"
            " mentions = mentions + :d,"
            f" confidence = {_CONFIDENCE_SQL.format(n='mentions + :d')}, boost = 0,"
            " updated_at = :now, confirmed_at = :now",
            [{"id": time_ordered_id(), "a": a, "b": b, "d": delta, "now": now,
              "c": co_occurrence_confidence(delta)} for a, b in pairs],
        )
        return
    conn.executemany(
        "UPDATE relations SET mentions = MAX(0, mentions - :d),"
        f" confidence = {_CONFIDENCE_SQL.format(n='MAX(0, mentions - :d)')}, boost = 0,"
        " updated_at = :now"
        " WHERE source_entity_id = :a AND target_entity_id = :b"
        f" AND relation_type = '{CO_OCCURRENCE}'",
        [{"d": -delta, "now": now, "a": a, "b": b} for a, b in pairs],
    )
    conn.executemany(
        "DELETE FROM relations WHERE source_entity_id = ? AND target_entity_id = ?"
        f" AND relation_type = '{CO_OCCURRENCE}' AND mentions <= 0",
        list(pairs),
    )


def _pairs(ids: list[str], touching: set[str] | None = None) -> set[tuple[str, str]]:
    out = set()
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if touching is None or a in touching or b in touching:
                out.add((a, b) if a < b else (b, a))
    return out


def on_soft_delete(conn: sqlite3.Connection, memory_id: str, content: str) -> None:
    """A deleted memory no longer counts for its co-occurrence pairs (links stay)."""
    _shift_pairs(conn, _pairs(_pair_ids(conn, memory_id, content)), -1, utcnow())


def on_restore(conn: sqlite3.Connection, memory_id: str, content: str) -> None:
    """A recovered memory counts again for the pairs its delete took away."""
    _shift_pairs(conn, _pairs(_pair_ids(conn, memory_id, content)), +1, utcnow())


def relink(conn: sqlite3.Connection, memory_id: str, old_content: str, new_content: str) -> None:
    """The memory's text changed: unlink what only the old text named, link the new text."""
    if not enabled(conn):
        return
    new = _extract(new_content)
    keep = _keys(new)
    linked = _linked_keys(conn, memory_id)  # names and aliases of what the memory links
    kept = {linked[k] for k in keep if k in linked}
    gone_ids = {linked[k] for k in _keys(_extract(old_content)) if k in linked} - kept
    if gone_ids:
        _shift_pairs(conn, _pairs(_pair_ids(conn, memory_id, old_content), gone_ids), -1,
                     utcnow())
        _unlink(conn, memory_id, list(gone_ids))
    # what the memory says about each entity is read again from the new text
    conn.execute("DELETE FROM entity_attributes WHERE memory_id = ? AND source = 'inline'",
                 (memory_id,))
    _link(conn, memory_id, new, new_content)
    _attributes(conn, memory_id, new_content, _linked_names(conn, memory_id, new), utcnow())


def _linked_names(conn: sqlite3.Connection, memory_id: str,
                  found: _Found) -> list[tuple[str, str, str]]:
    wanted = _keys(found)
    rows = _linked_keys(conn, memory_id)
    return [(k, wanted[k], rows[k]) for k in _first_per_entity(list(wanted), rows)]


def rescope(conn: sqlite3.Connection, memory_id: str) -> None:
    """The memory moved to another project or owner: its links leave the old scope's
    entities and go to the new scope's. Call `unlink_all` before the move, then this."""
    if not enabled(conn):
        return
    row = conn.execute("SELECT content, is_deleted FROM memories WHERE id = ?",
                       (memory_id,)).fetchone()
    if row is not None:
        link(conn, memory_id, row[0])
        if row[1]:  # a deleted memory's pairs do not count (link counted them)
            on_soft_delete(conn, memory_id, row[0])


def unlink_all(conn: sqlite3.Connection, memory_id: str) -> int:
    """Remove every link of the memory (it is being deleted for good). Returns the links."""
    row = conn.execute("SELECT content, is_deleted FROM memories WHERE id = ?",
                       (memory_id,)).fetchone()
    if row is not None and not row[1]:  # a soft-deleted memory's pairs were already taken off
        _shift_pairs(conn, _pairs(_pair_ids(conn, memory_id, row[0])), -1, utcnow())
    conn.execute("DELETE FROM entity_attributes WHERE memory_id = ?", (memory_id,))
    rows = conn.execute(
        "SELECT entity_id FROM memory_entity_mentions WHERE memory_id = ?", (memory_id,)
    ).fetchall()
    return _unlink(conn, memory_id, [r[0] for r in rows])


def _unlink(conn: sqlite3.Connection, memory_id: str, entity_ids: list[str]) -> int:
    if not entity_ids:
        return 0
    now = utcnow()
    conn.executemany("DELETE FROM entity_attributes WHERE memory_id = ? AND entity_id = ?",
                     [(memory_id, e) for e in entity_ids])
    conn.executemany(
        "DELETE FROM memory_entity_mentions WHERE memory_id = ? AND entity_id = ?",
        [(memory_id, e) for e in entity_ids],
    )
    conn.executemany(
        "UPDATE entities SET mentions = MAX(0, mentions - 1), updated_at = ? WHERE id = ?",
        [(now, e) for e in entity_ids],
    )
    return len(entity_ids)


def link_many(conn: sqlite3.Connection, fresh: list[tuple[str, str, tuple[str, str, str]]]
              ) -> int:
    """`link` for many memories inserted in this transaction, (id, content, scope) in the
    order they were written, with the same rows and counts as linking them one after another:
    an entity one memory creates is there for the next (a tentative name links to it), each
    entity's `mentions` grows by the memories that newly name it, each co-occurrence pair by
    the memories in which it newly co-occurs. The statements run per batch: one look-up of the
    names per scope, one `executemany` per table (stated dependencies stay in memory order:
    their reason depends on the rows before). Returns the links added."""
    if not enabled(conn) or not fresh:
        return 0
    now = utcnow()
    found = [(memory_id, content, scope, _extract_names(content))
             for memory_id, content, scope in fresh]
    ids: dict[tuple[str, str, str], dict[str, str]] = {}
    by_scope: dict[tuple[str, str, str], set[str]] = {}
    for _, _, scope, extraction in found:
        by_scope.setdefault(scope, set()).update(_keys(extraction))
    for scope, names in by_scope.items():
        known = ids.setdefault(scope, {})
        keys = sorted(names)
        for start in range(0, len(keys), 400):
            known.update(_lookup(conn, scope, keys[start : start + 400]))
    created: list[tuple[Any, ...]] = []
    aliases: list[tuple[Any, ...]] = []
    mentions: list[tuple[Any, ...]] = []
    counts: dict[str, int] = {}
    pairs: dict[tuple[str, str], int] = {}
    attributes: list[tuple[Any, ...]] = []
    stated: list[tuple[list[Relation], dict[str, str], set[str]]] = []
    for memory_id, content, scope, extraction in found:
        wanted = _keys(extraction)
        if not wanted:
            continue
        known = ids[scope]
        for e in extraction.entities:  # new entities, certain ones only
            key = key_of(e)
            if key not in known:
                row = (time_ordered_id(), e.name, key, e.entity_type, now, now, *scope)
                created.append(row)
                known[key] = row[0]
        for a in extraction.aliases:  # a name given as another's: linked to that one
            if a.primary in known and a.key not in known:
                aliases.append((*scope, a.key, known[a.primary], a.name, now))
                known[a.key] = known[a.primary]
        keys = _first_per_entity(list(wanted), known)
        linked = [known[k] for k in keys]
        if not linked:
            continue
        mentions.extend((memory_id, known[k], wanted[k], INLINE_CONFIDENCE, now) for k in keys)
        for entity_id in linked:
            counts[entity_id] = counts.get(entity_id, 0) + 1
        for pair in _pairs(linked[:MAX_PAIR_ENTITIES]):
            pairs[pair] = pairs.get(pair, 0) + 1
        if extraction.relations:
            stated.append((extraction.relations, {k: known[k] for k in wanted if k in known},
                           set(linked)))
        decision = is_decision_content(content)
        kind = "constraint" if decision else "attribute"
        importance = CONSTRAINT_IMPORTANCE if decision else ATTRIBUTE_IMPORTANCE
        attributes.extend(
            (time_ordered_id(), known[k], memory_id, kind, _sentence_naming(content, wanted[k]),
             importance, now, now) for k in keys)
    if created:
        conn.executemany(
            "INSERT INTO entities (id, name, canonical_name, entity_type, mentions, created_at,"
            " updated_at, project, agent_id, user_id) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
            created,
        )
    if aliases:
        conn.executemany(
            "INSERT OR IGNORE INTO entity_aliases (project, agent_id, user_id, canonical_name,"
            " entity_id, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", aliases)
    if prose_available():  # the phrases and relations: read in the background
        from mnemonist.store import jobs  # here: jobs -> backend -> db -> this module

        jobs.insert_rows(conn, [jobs.pending_row(PROSE_JOB, payload={"memories": [
            [memory_id, content_digest(content)] for memory_id, content, _ in fresh]})])
    if not mentions:
        return 0
    conn.executemany(
        "INSERT INTO memory_entity_mentions (memory_id, entity_id, mention_text, confidence,"
        " created_at) VALUES (?, ?, ?, ?, ?)", mentions)
    _count_mentions(conn, counts, now)
    # parameters only in the row (what ON CONFLICT adds reads `excluded`): on PostgreSQL the
    # batch goes as one statement of arrays. The confidence in SQL, as the one-by-one path's
    # update computes it (the same value: PostgreSQL computes 0.4 + 0.1 * 2 exactly, 0.6)
    conn.executemany(
        "INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type,"
        " strength, mentions, confidence, reason, created_at, updated_at) VALUES (?, ?, ?,"
        f" '{CO_OCCURRENCE}', 1.0, ?, {_CONFIDENCE_SQL.format(n='?')}, 'co-occurrence', ?, ?)"
        " ON CONFLICT(source_entity_id, target_entity_id, relation_type) DO UPDATE SET"
        " mentions = mentions + excluded.mentions,"
        f" confidence = {_CONFIDENCE_SQL.format(n='mentions + excluded.mentions')}, boost = 0,"
        " updated_at = excluded.updated_at, confirmed_at = excluded.updated_at",
        [(time_ordered_id(), a, b, d, d, now, now) for (a, b), d in pairs.items()],
    )
    for said, named_ids, new in stated:
        _relate(conn, said, named_ids, new, now)
    conn.executemany(
        "INSERT OR IGNORE INTO entity_attributes (id, entity_id, memory_id, kind, content,"
        " importance, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'inline', ?, ?)",
        attributes,
    )
    return len(mentions)


def live_contents(conn: sqlite3.Connection, memory_ids: list[str]) -> dict[str, str]:
    """{id: text} of those of the memories not deleted (the prose job reads them)."""
    marks = ",".join("?" * len(memory_ids))
    rows = conn.execute(
        f"SELECT id, content FROM memories WHERE id IN ({marks}) AND is_deleted = 0",
        memory_ids).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}
