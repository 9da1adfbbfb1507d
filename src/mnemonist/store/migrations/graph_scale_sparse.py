"""Migrations 13–19: graph structure, the event-time index, graph per scope, sparse expansions,
hash indexes, the index of memories waiting for their vector."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store import graph_scopes
from mnemonist.store.migrations import _script, migration


@migration(13, "graph structure: relation reasons, entity aspects and attributes, communities,"
               " memory feedback, session scores")
def _graph_structure(conn: sqlite3.Connection) -> None:
    # `reason`: how a relation is known (store/graph.py REASONS); co-occurrence edges take the
    # confidence their count earns (0.4 + 0.1 per memory, at most 0.7). Attributes are what a
    # memory says about an entity (the clause naming it), `constraint` for decision language;
    # aspects group an entity's attributes and carry a weight that feedback moves.
    _script(
        conn,
        """
        ALTER TABLE relations ADD COLUMN reason TEXT NOT NULL DEFAULT 'extracted';
        UPDATE relations SET reason = 'co-occurrence',
            confidence = MIN(0.7, 0.4 + 0.1 * mentions) WHERE relation_type = 'co_occurrence';
        ALTER TABLE entities ADD COLUMN community_id INTEGER;
        CREATE INDEX entities_community ON entities(community_id)
            WHERE community_id IS NOT NULL;

        CREATE TABLE entity_aspects (
            id TEXT PRIMARY KEY,
            entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            canonical_name TEXT NOT NULL,
            weight REAL NOT NULL DEFAULT 0.5,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (entity_id, canonical_name)
        );

        CREATE TABLE entity_attributes (
            id TEXT PRIMARY KEY,
            entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            memory_id TEXT NOT NULL,
            aspect_id TEXT REFERENCES entity_aspects(id) ON DELETE SET NULL,
            kind TEXT NOT NULL DEFAULT 'attribute' CHECK (kind IN ('attribute', 'constraint')),
            content TEXT NOT NULL,
            importance REAL NOT NULL DEFAULT 0.5,
            source TEXT NOT NULL DEFAULT 'inline',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (entity_id, memory_id)
        );
        CREATE INDEX entity_attributes_memory ON entity_attributes(memory_id);
        CREATE INDEX entity_attributes_aspect ON entity_attributes(aspect_id)
            WHERE aspect_id IS NOT NULL;

        CREATE TABLE entity_communities (
            id INTEGER PRIMARY KEY,
            label TEXT NOT NULL,
            member_count INTEGER NOT NULL,
            created_at TEXT NOT NULL
        );

        CREATE TABLE graph_state (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );

        CREATE TABLE memory_feedback (
            id INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL,
            prompt_key TEXT,
            session_key TEXT,
            helpful INTEGER NOT NULL CHECK (helpful IN (0, 1)),
            created_at TEXT NOT NULL
        );
        CREATE INDEX memory_feedback_prompt ON memory_feedback(prompt_key, memory_id);
        CREATE INDEX memory_feedback_memory ON memory_feedback(memory_id);

        CREATE TABLE session_scores (
            session_key TEXT PRIMARY KEY,
            score REAL,
            injected INTEGER NOT NULL DEFAULT 0,
            used INTEGER NOT NULL DEFAULT 0,
            scored_by TEXT,
            created_at TEXT NOT NULL
        );
        """,
    )


@migration(14, "event-time index: the time-candidate pass and since/until filters")
def _occurred_index(conn: sqlite3.Connection) -> None:
    # A query that names a time ("what did we decide in March?") adds a pass over the
    # memories of that window; without an index on event time, listing them read every row
    # of the table (a full scan per recall at 100,000 memories). `is_deleted` first: every
    # recall filter says `is_deleted = 0`, and with it in front the planner always prefers
    # this index to the one on `is_deleted` alone.
    _script(conn, "CREATE INDEX IF NOT EXISTS memories_occurred"
                  " ON memories(is_deleted, occurred_at);")


@migration(15, "graph per scope: an entity belongs to one project and owner; stated and"
               " inferred relations, time decay of what feedback taught")
def _graph_scopes(conn: sqlite3.Connection) -> None:
    # An entity's identity becomes (project, agent_id, user_id, canonical name): existing
    # entities are split by the scopes of the memories naming them. A data migration, so it
    # lives in `store/graph_scopes.py`; it rebuilds the tables with foreign keys ON.
    graph_scopes.split_entities_by_scope(conn)


@migration(17, "learned sparse (SPLADE) expansions of memories and their context texts")
def _sparse_terms(conn: sqlite3.Connection) -> None:
    # One row per memory and field ('content': the memory's text; 'context': its context
    # text, store/context.py): the vocabulary term ids and weights the SPLADE model gives it.
    # `model` and `text_hash` make a row stale when the model or the text changes; the
    # background expander (pipeline/sparse_worker.py) re-encodes those and deletes the rows
    # of deleted, superseded and purged memories. Terms and weights are little-endian
    # int32 / float32 blobs of equal length.
    _script(conn, """
        CREATE TABLE IF NOT EXISTS sparse_terms (
            seq INTEGER NOT NULL,
            field TEXT NOT NULL CHECK (field IN ('content', 'context')),
            model TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            terms BLOB NOT NULL,
            weights BLOB NOT NULL,
            PRIMARY KEY (seq, field)
        );
        """)


def _postgres_keeps_its_hash_indexes(conn: Any) -> None:
    """PostgreSQL keeps `memories_hash` on every row: `hash_in_use`'s two probes both use it."""


@migration(18, "one content-hash index page per new memory: the duplicate guard leads with the"
               " hash, the plain hash index keeps only deleted and superseded rows",
           postgres=_postgres_keeps_its_hash_indexes)
def _hash_indexes(conn: sqlite3.Connection) -> None:
    # A content hash is random, so each index keyed by it changes a random page per new
    # memory: at a million memories, the plain index on every row's hash and the duplicate
    # guard were two of the largest writers of an import (about 1,400 and 800 pages per 1,000
    # memories). The guard holds every live row's hash already; with the hash leading it also
    # answers "which live memory has this hash", and the plain index keeps only the rows the
    # guard leaves out. A query that needs any row with a hash asks both
    # (`store.memories.hash_in_use`). Same uniqueness: the guard's columns are unchanged.
    _script(conn, """
        DROP INDEX IF EXISTS memories_live_hash;
        CREATE UNIQUE INDEX memories_live_hash
            ON memories(content_hash, COALESCE(project, ''), COALESCE(source_id, ''),
                        COALESCE(agent_id, ''), COALESCE(user_id, ''))
            WHERE is_deleted = 0 AND superseded_at IS NULL;
        DROP INDEX IF EXISTS memories_hash;
        CREATE INDEX memories_hash_retired ON memories(content_hash)
            WHERE NOT (is_deleted = 0 AND superseded_at IS NULL);
        """)


_UNEMBEDDED = ("CREATE INDEX IF NOT EXISTS memories_unembedded ON memories(seq)"
               " WHERE embedding_model IS NULL AND is_deleted = 0")


def _postgres_unembedded(conn: Any) -> None:
    conn.execute(_UNEMBEDDED)


@migration(19, "the memories still waiting for their vector, indexed: recall counts those in"
               " its scope and embeds a few before it searches",
           postgres=_postgres_unembedded)
def _unembedded_index(conn: sqlite3.Connection) -> None:
    # A partial index holds only the rows without a vector (a handful, except during a bulk
    # import): a row enters it when it is written and leaves it when the embedder sets its
    # `embedding_model`, so counting them per recall reads a few index entries, not the table.
    _script(conn, _UNEMBEDDED + ";")
