"""Migration 15: entities per scope.

Until migration 14 an entity was keyed by its canonical name across the whole store, so two
projects naming "ShopDb" shared one row: its mention count, its aspects, its community and
every edge at it mixed both projects (and the private memories of agents and users with the
shared ones). From 15 an entity's identity is (project, agent_id, user_id, canonical name),
the scope of the memories that name it ('' where the memory has none): a private memory
never creates or changes a shared entity row, and what one project's memories teach the
graph stays in that project.

The rebuild splits every existing entity by the scopes of the memories linked to it. The copy
with the most links keeps the entity's id (links to it from outside, e.g. a dashboard URL,
keep working for the scope that uses it most); the others get ids derived from the old id
and the scope (uuid5), so the migration gives the same ids on the same data. Then:

- links (`memory_entity_mentions`) go to the copy of their memory's scope; each copy's
  `mentions` is its number of links, as before;
- attributes go with their memory, the same way;
- aspects are copied to every copy of their entity (the weights learned so far), and an
  attribute's aspect is its copy's;
- a relation goes to each scope where some memory links both its ends (supporting it). A
  co-occurrence edge there counts the live memories of that scope naming the pair (never more
  than it counted before); other relations keep their reason, confidence and count. A relation
  no memory supports at all stays only where both ends' id-keeping copies share a scope: no
  read could follow it anywhere else (every walk needs a supporting memory);
- communities are dropped (computed again per project by the next maintenance cycle or the
  first `/api/diagnostics/graph`).

Foreign keys stay ON (SQLite cannot switch them inside the migration's transaction): new
tables are created beside the old ones and filled, the old ones dropped children first (so no
cascade fires), and the new ones renamed (SQLite rewrites the foreign keys that name them).
"""

from __future__ import annotations

import sqlite3
import uuid

_NAMESPACE = uuid.UUID("6d1f4c3e-1b0a-4f55-9a43-5e0c8f2b7a15")

_NEW_TABLES = """
CREATE TABLE entities_v15 (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    canonical_name TEXT NOT NULL,
    entity_type TEXT NOT NULL DEFAULT 'extracted',
    mentions INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    community_id INTEGER,
    project TEXT NOT NULL DEFAULT '',
    agent_id TEXT NOT NULL DEFAULT '',
    user_id TEXT NOT NULL DEFAULT '',
    UNIQUE (project, agent_id, user_id, canonical_name)
);
CREATE TABLE relations_v15 (
    id TEXT PRIMARY KEY,
    source_entity_id TEXT NOT NULL REFERENCES entities_v15(id) ON DELETE CASCADE,
    target_entity_id TEXT NOT NULL REFERENCES entities_v15(id) ON DELETE CASCADE,
    relation_type TEXT NOT NULL,
    strength REAL NOT NULL DEFAULT 1.0,
    mentions INTEGER NOT NULL DEFAULT 1,
    confidence REAL NOT NULL DEFAULT 0.5,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT 'extracted',
    note TEXT,
    derived_from TEXT,
    boost REAL NOT NULL DEFAULT 0,
    confirmed_at TEXT,
    UNIQUE (source_entity_id, target_entity_id, relation_type)
);
CREATE TABLE memory_entity_mentions_v15 (
    memory_id TEXT NOT NULL,
    entity_id TEXT NOT NULL REFERENCES entities_v15(id) ON DELETE CASCADE,
    mention_text TEXT NOT NULL,
    confidence REAL NOT NULL DEFAULT 0.5,
    created_at TEXT NOT NULL,
    PRIMARY KEY (memory_id, entity_id)
);
CREATE TABLE entity_aspects_v15 (
    id TEXT PRIMARY KEY,
    entity_id TEXT NOT NULL REFERENCES entities_v15(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    canonical_name TEXT NOT NULL,
    weight REAL NOT NULL DEFAULT 0.5,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    confirmed_at TEXT,
    UNIQUE (entity_id, canonical_name)
);
CREATE TABLE entity_attributes_v15 (
    id TEXT PRIMARY KEY,
    entity_id TEXT NOT NULL REFERENCES entities_v15(id) ON DELETE CASCADE,
    memory_id TEXT NOT NULL,
    aspect_id TEXT REFERENCES entity_aspects_v15(id) ON DELETE SET NULL,
    kind TEXT NOT NULL DEFAULT 'attribute' CHECK (kind IN ('attribute', 'constraint')),
    content TEXT NOT NULL,
    importance REAL NOT NULL DEFAULT 0.5,
    source TEXT NOT NULL DEFAULT 'inline',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (entity_id, memory_id)
);
CREATE TABLE entity_communities_v15 (
    id INTEGER PRIMARY KEY,
    label TEXT NOT NULL,
    member_count INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    project TEXT NOT NULL DEFAULT ''
)
"""

_INDEXES = """
CREATE INDEX entities_mentions ON entities(mentions);
CREATE INDEX entities_name ON entities(canonical_name);
CREATE INDEX entities_community ON entities(community_id) WHERE community_id IS NOT NULL;
CREATE INDEX relations_target ON relations(target_entity_id);
CREATE INDEX relations_reason ON relations(reason) WHERE reason IN ('user-stated', 'inferred');
CREATE INDEX memory_entity_mentions_entity ON memory_entity_mentions(entity_id);
CREATE INDEX entity_attributes_memory ON entity_attributes(memory_id);
CREATE INDEX entity_attributes_aspect ON entity_attributes(aspect_id)
    WHERE aspect_id IS NOT NULL
"""

#: children first: dropping a parent while a child still points at it would cascade
_OLD = ("entity_attributes", "entity_aspects", "memory_entity_mentions", "relations",
        "entity_communities", "entities")


def _run(conn: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def derived_id(old_id: str, *parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join((old_id, *parts))))


def split_entities_by_scope(conn: sqlite3.Connection) -> None:
    _run(conn, _NEW_TABLES)
    # every link with the scope of its memory ('' for none, and for a link whose memory is gone)
    conn.execute(
        "CREATE TEMP TABLE m15_links AS SELECT mm.memory_id, mm.entity_id,"
        " COALESCE(m.project, '') AS p, COALESCE(m.agent_id, '') AS a,"
        " COALESCE(m.user_id, '') AS u, COALESCE(m.is_deleted, 1) AS deleted"
        " FROM memory_entity_mentions mm LEFT JOIN memories m ON m.id = mm.memory_id")
    conn.execute("CREATE INDEX temp.m15_links_entity ON m15_links(entity_id, memory_id)")
    _copies(conn)
    _entities(conn)
    _links(conn)
    _aspects(conn)
    _attributes(conn)
    _relations(conn)
    conn.execute("DELETE FROM graph_state WHERE key = 'communities'")
    for table in _OLD:
        conn.execute(f"DROP TABLE {table}")
    for table in reversed(_OLD):
        conn.execute(f"ALTER TABLE {table}_v15 RENAME TO {table}")
    _run(conn, _INDEXES)
    for temp in ("m15_links", "m15_copies", "m15_aspects"):
        conn.execute(f"DROP TABLE temp.{temp}")


def _copies(conn: sqlite3.Connection) -> None:
    """m15_copies(old_id, p, a, u, new_id, n): one row per entity and scope of its links
    (an entity with no link: one copy, global), the most linked copy keeping the old id."""
    conn.execute("CREATE TEMP TABLE m15_copies (old_id TEXT, p TEXT, a TEXT, u TEXT,"
                 " new_id TEXT, n INTEGER, PRIMARY KEY (old_id, p, a, u))")
    rows = conn.execute(
        "SELECT entity_id, p, a, u, COUNT(*) AS n FROM m15_links GROUP BY entity_id, p, a, u"
        " UNION ALL SELECT id, '', '', '', 0 FROM entities e WHERE NOT EXISTS"
        " (SELECT 1 FROM m15_links l WHERE l.entity_id = e.id)"
        " ORDER BY 1, 5 DESC, 2, 3, 4").fetchall()
    out, last = [], None
    for old_id, p, a, u, n in rows:
        new_id = old_id if old_id != last else derived_id(old_id, p, a, u)
        last = old_id
        out.append((old_id, p, a, u, new_id, n))
    conn.executemany("INSERT INTO m15_copies VALUES (?, ?, ?, ?, ?, ?)", out)
    conn.execute("CREATE INDEX temp.m15_copies_new ON m15_copies(new_id)")


def _entities(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO entities_v15 (id, name, canonical_name, entity_type, mentions, created_at,"
        " updated_at, community_id, project, agent_id, user_id)"
        " SELECT c.new_id, e.name, e.canonical_name, e.entity_type, c.n, e.created_at,"
        " e.updated_at, NULL, c.p, c.a, c.u FROM m15_copies c JOIN entities e ON e.id = c.old_id")


def _links(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO memory_entity_mentions_v15 (memory_id, entity_id, mention_text, confidence,"
        " created_at) SELECT mm.memory_id, c.new_id, mm.mention_text, mm.confidence,"
        " mm.created_at FROM memory_entity_mentions mm"
        " JOIN m15_links l ON l.memory_id = mm.memory_id AND l.entity_id = mm.entity_id"
        " JOIN m15_copies c ON c.old_id = mm.entity_id AND c.p = l.p AND c.a = l.a"
        " AND c.u = l.u")


def _aspects(conn: sqlite3.Connection) -> None:
    rows = conn.execute(
        "SELECT asp.id, c.new_id, c.old_id = c.new_id FROM entity_aspects asp"
        " JOIN m15_copies c ON c.old_id = asp.entity_id").fetchall()
    conn.execute("CREATE TEMP TABLE m15_aspects (old_id TEXT, entity_id TEXT, new_id TEXT,"
                 " PRIMARY KEY (old_id, entity_id))")
    conn.executemany("INSERT INTO m15_aspects VALUES (?, ?, ?)",
                     [(a, e, a if keeps else derived_id(a, e)) for a, e, keeps in rows])
    conn.execute(
        "INSERT INTO entity_aspects_v15 (id, entity_id, name, canonical_name, weight,"
        " created_at, updated_at, confirmed_at) SELECT x.new_id, x.entity_id, asp.name,"
        " asp.canonical_name, asp.weight, asp.created_at, asp.updated_at, asp.updated_at"
        " FROM entity_aspects asp JOIN m15_aspects x ON x.old_id = asp.id")


def _attributes(conn: sqlite3.Connection) -> None:
    """An attribute goes to the copy in its memory's scope (the id-keeping copy when its
    memory links no copy: an attribute outlives nothing it should not, but loses nothing)."""
    conn.execute(
        "INSERT INTO entity_attributes_v15 (id, entity_id, memory_id, aspect_id, kind, content,"
        " importance, source, created_at, updated_at)"
        " SELECT t.id, t.copy_id, t.memory_id,"
        " (SELECT x.new_id FROM m15_aspects x WHERE x.old_id = t.aspect_id"
        "  AND x.entity_id = t.copy_id), t.kind, t.content, t.importance, t.source,"
        " t.created_at, t.updated_at"
        " FROM (SELECT ea.*, COALESCE("
        "  (SELECT c.new_id FROM m15_copies c JOIN memories m ON m.id = ea.memory_id"
        "   WHERE c.old_id = ea.entity_id AND c.p = COALESCE(m.project, '')"
        "   AND c.a = COALESCE(m.agent_id, '') AND c.u = COALESCE(m.user_id, '')),"
        "  ea.entity_id) AS copy_id FROM entity_attributes ea) t")


def _relations(conn: sqlite3.Connection) -> None:
    conn.create_function("m15_derived_id", 3, derived_id, deterministic=True)
    # the scopes where some memory links both ends; live: the memory is not deleted
    conn.execute(
        "CREATE TEMP TABLE m15_support AS SELECT r.id AS rel, x.p, x.a, x.u,"
        " SUM(x.deleted = 0) AS live FROM relations r"
        " JOIN m15_links x ON x.entity_id = r.source_entity_id"
        " JOIN m15_links y ON y.memory_id = x.memory_id AND y.entity_id = r.target_entity_id"
        " AND y.p = x.p AND y.a = x.a AND y.u = x.u"
        " WHERE r.source_entity_id != r.target_entity_id GROUP BY r.id, x.p, x.a, x.u")
    conn.execute(
        "INSERT INTO relations_v15 (id, source_entity_id, target_entity_id, relation_type,"
        " strength, mentions, confidence, created_at, updated_at, reason, confirmed_at)"
        " SELECT CASE WHEN cs.new_id = r.source_entity_id AND ct.new_id = r.target_entity_id"
        "  THEN r.id ELSE m15_derived_id(r.id, cs.new_id, ct.new_id) END,"
        " cs.new_id, ct.new_id, r.relation_type, r.strength,"
        " CASE WHEN r.relation_type = 'co_occurrence' THEN MIN(r.mentions, s.live)"
        "  ELSE r.mentions END,"
        " CASE WHEN r.relation_type = 'co_occurrence'"
        "  THEN MIN(0.7, 0.4 + 0.1 * MIN(r.mentions, s.live)) ELSE r.confidence END,"
        " r.created_at, r.updated_at, r.reason, r.updated_at"
        " FROM relations r JOIN m15_support s ON s.rel = r.id"
        " JOIN m15_copies cs ON cs.old_id = r.source_entity_id AND cs.p = s.p AND cs.a = s.a"
        "  AND cs.u = s.u"
        " JOIN m15_copies ct ON ct.old_id = r.target_entity_id AND ct.p = s.p AND ct.a = s.a"
        "  AND ct.u = s.u"
        " WHERE r.relation_type != 'co_occurrence' OR s.live > 0")
    # unsupported relations: where both ends' id-keeping copies share a scope (self-loops too)
    conn.execute(
        "INSERT INTO relations_v15 (id, source_entity_id, target_entity_id, relation_type,"
        " strength, mentions, confidence, created_at, updated_at, reason, confirmed_at)"
        " SELECT r.id, r.source_entity_id, r.target_entity_id, r.relation_type, r.strength,"
        " r.mentions, r.confidence, r.created_at, r.updated_at, r.reason, r.updated_at"
        " FROM relations r"
        " JOIN m15_copies cs ON cs.new_id = r.source_entity_id"
        " JOIN m15_copies ct ON ct.new_id = r.target_entity_id"
        " WHERE cs.p = ct.p AND cs.a = ct.a AND cs.u = ct.u"
        " AND NOT EXISTS (SELECT 1 FROM m15_support s WHERE s.rel = r.id)")
    conn.execute("DROP TABLE temp.m15_support")
