"""Migrations 9–12: purge leftovers, lifecycles, scopes and corroboration, ranking signals."""

from __future__ import annotations

import sqlite3

from mnemonist.store import purge
from mnemonist.store.migrations import _script, migration


@migration(9, "purge: memories already hard-deleted lose the text their history still held")
def _purge_leftovers(conn: sqlite3.Connection) -> None:
    # Before purges existed a hard delete (forget with force) and the retention sweep removed
    # the row but kept its text in memory_history for `historyDays`; from now on a purge
    # removes it, and this clears what earlier deletes left (the file follows at the next
    # checkpoint: the writer has secure_delete on).
    if purge.clear_leftovers(conn):
        purge.compact(conn)


@migration(10, "lifecycles: key, supersedes, valid_from / valid_to; superseded rows leave the "
               "duplicate guard")
def _lifecycles(conn: sqlite3.Connection) -> None:
    # `key`: a fact's, status's or decision's normalised key (or subject); a new memory with
    # the same key, type and project supersedes the live one in the same transaction.
    # `supersedes`: the row it replaced (the old row says `superseded_by`). `valid_from` /
    # `valid_to`: when it was true (valid_to NULL: still true). A superseded row no longer
    # counts in the duplicate guard, so a value can come back as a new version.
    _script(
        conn,
        """
        ALTER TABLE memories ADD COLUMN key TEXT;
        ALTER TABLE memories ADD COLUMN supersedes TEXT;
        ALTER TABLE memories ADD COLUMN valid_from TEXT;
        ALTER TABLE memories ADD COLUMN valid_to TEXT;
        UPDATE memories SET valid_from = occurred_at WHERE valid_from IS NULL;
        UPDATE memories SET valid_to = superseded_at
            WHERE superseded_at IS NOT NULL AND valid_to IS NULL;
        UPDATE memories SET valid_to = valid_from WHERE valid_to < valid_from;
        UPDATE memories SET supersedes = (SELECT o.id FROM memories o
            WHERE o.superseded_by = memories.id ORDER BY o.superseded_at DESC LIMIT 1)
            WHERE supersedes IS NULL AND EXISTS (SELECT 1 FROM memories o
            WHERE o.superseded_by = memories.id);
        CREATE INDEX memories_key ON memories(key, COALESCE(project, ''), type)
            WHERE key IS NOT NULL AND is_deleted = 0 AND superseded_at IS NULL;
        CREATE INDEX memories_supersedes ON memories(supersedes) WHERE supersedes IS NOT NULL;
        CREATE INDEX memories_validity ON memories(valid_from, valid_to);
        DROP INDEX memories_live_hash;
        CREATE UNIQUE INDEX memories_live_hash
            ON memories(COALESCE(project, ''), COALESCE(source_id, ''), content_hash)
            WHERE is_deleted = 0 AND superseded_at IS NULL;
        """,
    )


@migration(11, "scopes and corroboration: agent_id / user_id owners, observed_by, "
               "observation_count; the duplicate guard is per visibility scope")
def _scopes(conn: sqlite3.Connection) -> None:
    # `agent_id` / `user_id`: the owner in each dimension (NULL: global in that dimension); a
    # read sees a row only when both dimensions let it through (search/filters.py).
    # `observed_by`: the distinct agents that stored this content (JSON array, capped at 20);
    # `observation_count`: every store by a different agent, past the cap too. The duplicate
    # guard now includes the owners, so A's private copy and B's are two rows.
    _script(
        conn,
        """
        ALTER TABLE memories ADD COLUMN agent_id TEXT;
        ALTER TABLE memories ADD COLUMN user_id TEXT;
        ALTER TABLE memories ADD COLUMN observed_by TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE memories ADD COLUMN observation_count INTEGER NOT NULL DEFAULT 1;
        UPDATE memories SET observed_by = json_array(who) WHERE who IS NOT NULL;
        DROP INDEX memories_live_hash;
        CREATE UNIQUE INDEX memories_live_hash
            ON memories(COALESCE(project, ''), COALESCE(source_id, ''),
                        COALESCE(agent_id, ''), COALESCE(user_id, ''), content_hash)
            WHERE is_deleted = 0 AND superseded_at IS NULL;
        CREATE INDEX memories_private ON memories(agent_id, user_id)
            WHERE agent_id IS NOT NULL OR user_id IS NOT NULL;
        """,
    )


@migration(12, "ranking signals and duplicates: recall_count, duplicate_candidates")
def _signals_and_duplicates(conn: sqlite3.Connection) -> None:
    # `recall_count`: how often an explicit recall or search returned the memory. Unlike
    # access_count it does not move when a hook injects the memory (an injection is chosen by
    # the ranking itself, so counting it would let the access boost feed on itself).
    # `duplicate_candidates`: pairs the near-duplicate sweep flagged for review (`a` the older
    # memory, `b` the newer); nothing merges them but a person's explicit resolve. A dismissed
    # pair stays, so the next sweep does not flag it again.
    _script(
        conn,
        """
        ALTER TABLE memories ADD COLUMN recall_count INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE duplicate_candidates (
            id TEXT PRIMARY KEY,
            memory_a TEXT NOT NULL,
            memory_b TEXT NOT NULL,
            similarity REAL NOT NULL,
            reason TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open'
                CHECK (status IN ('open', 'dismissed', 'resolved')),
            kept TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (memory_a, memory_b)
        );
        CREATE INDEX duplicate_candidates_status ON duplicate_candidates(status, created_at);
        CREATE INDEX duplicate_candidates_b ON duplicate_candidates(memory_b);
        CREATE TABLE dedup_progress (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            last_seq INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT NOT NULL
        );
        """,
    )
