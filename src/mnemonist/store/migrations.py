"""Numbered schema migrations, applied in order at start, each in its own transaction.

A migration is registered once and never edited after it ships: a change is a new number.
`schema_migrations` records what ran, so applying is idempotent.

PostgreSQL (`storage.url: postgresql://…`) shares this registry. Versions 1..`PG_BASELINE`
are one script there, `store/postgres/baseline.sql` (the SQLite schema at that version,
translated; FTS5 tables become tsvector columns with GIN indexes). **Rule for every later
migration:** register its PostgreSQL form beside it, `@migration(N, "name", postgres=fn)`,
where `fn(conn)` gets a connection whose `.execute` takes this module's SQLite-dialect SQL for
the common subset (see `store/postgres/dialect.py`) and `conn.raw` (psycopg) for what only
PostgreSQL says (types, GIN/HNSW indexes, tsvector). A migration without one stops a
PostgreSQL database from starting, with a message naming it: nothing is skipped silently.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mnemonist.model.memory import utcnow
from mnemonist.store import graph_scopes, purge
from mnemonist.store.db import Database


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]
    #: the PostgreSQL form (None for versions inside the PostgreSQL baseline)
    postgres: Callable[[Any], None] | None = None


MIGRATIONS: list[Migration] = []
#: versions 1..PG_BASELINE are store/postgres/baseline.sql on PostgreSQL
PG_BASELINE = 17


def migration(version: int, name: str, *, postgres: Callable[[Any], None] | None = None):
    def register(fn: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
        if any(m.version == version for m in MIGRATIONS):
            raise RuntimeError(f"migration {version} registered twice")
        MIGRATIONS.append(Migration(version, name, fn, postgres))
        MIGRATIONS.sort(key=lambda m: m.version)
        return fn

    return register


def _script(conn: sqlite3.Connection, sql: str) -> None:
    for statement in _split(sql):
        conn.execute(statement)


def _split(sql: str) -> list[str]:
    """Split on semicolons that end a statement (trigger bodies hold their own)."""
    out, buf = [], []
    depth = 0
    for line in sql.splitlines():
        stripped = line.strip().upper()
        if stripped.startswith("CREATE TRIGGER"):
            depth = 1
        buf.append(line)
        if depth and stripped.startswith("END;"):
            depth = 0
            out.append("\n".join(buf))
            buf = []
        elif not depth and line.rstrip().endswith(";"):
            out.append("\n".join(buf))
            buf = []
    if "".join(buf).strip():
        out.append("\n".join(buf))
    return [s for s in out if s.strip()]


@migration(1, "core schema: memories, fts, embeddings, history, jobs, transcripts")
def _core(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        CREATE TABLE memories (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            content TEXT NOT NULL,
            normalized_content TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            type TEXT NOT NULL DEFAULT 'fact',
            importance REAL NOT NULL DEFAULT 0.8,
            tags TEXT NOT NULL DEFAULT '[]',
            pinned INTEGER NOT NULL DEFAULT 0,
            who TEXT,
            why TEXT,
            project TEXT,
            source_type TEXT,
            source_id TEXT,
            idempotency_key TEXT,
            confidence REAL,
            version INTEGER NOT NULL DEFAULT 1,
            is_deleted INTEGER NOT NULL DEFAULT 0,
            deleted_at TEXT,
            delete_reason TEXT,
            last_accessed TEXT,
            access_count INTEGER NOT NULL DEFAULT 0,
            embedding_model TEXT,
            extraction_model TEXT,
            occurred_at TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            updated_by TEXT
        );
        -- exact-duplicate guard: one live memory per content hash within a project and source
        CREATE UNIQUE INDEX memories_live_hash
            ON memories(COALESCE(project, ''), COALESCE(source_id, ''), content_hash)
            WHERE is_deleted = 0;
        CREATE UNIQUE INDEX memories_idempotency
            ON memories(idempotency_key) WHERE idempotency_key IS NOT NULL;
        CREATE INDEX memories_hash ON memories(content_hash);
        CREATE INDEX memories_project ON memories(project, is_deleted);
        CREATE INDEX memories_created ON memories(created_at);
        CREATE INDEX memories_source ON memories(source_id, occurred_at, seq);
        CREATE INDEX memories_deleted ON memories(is_deleted, deleted_at);

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, content='memories', content_rowid='seq', tokenize='porter unicode61'
        );
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, content) VALUES (new.seq, new.content);
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content)
                VALUES ('delete', old.seq, old.content);
        END;
        CREATE TRIGGER memories_au AFTER UPDATE OF content ON memories
            WHEN old.content IS NOT new.content BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content)
                VALUES ('delete', old.seq, old.content);
            INSERT INTO memories_fts(rowid, content) VALUES (new.seq, new.content);
        END;

        CREATE TABLE embeddings (
            content_hash TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            dimensions INTEGER NOT NULL,
            vector BLOB NOT NULL,
            created_at TEXT NOT NULL
        );

        CREATE TABLE memory_history (
            id TEXT PRIMARY KEY,
            memory_id TEXT NOT NULL,
            event TEXT NOT NULL,
            old_content TEXT,
            new_content TEXT,
            changed_by TEXT,
            reason TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        );
        CREATE INDEX memory_history_memory ON memory_history(memory_id, created_at);
        CREATE INDEX memory_history_created ON memory_history(created_at);

        CREATE TABLE memory_jobs (
            id TEXT PRIMARY KEY,
            memory_id TEXT,
            document_id TEXT,
            job_type TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            payload TEXT,
            result TEXT,
            error TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL DEFAULT 3,
            run_after TEXT,
            leased_at TEXT,
            completed_at TEXT,
            failed_at TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX memory_jobs_status ON memory_jobs(status, job_type, created_at);
        CREATE INDEX memory_jobs_memory ON memory_jobs(memory_id, job_type, status);

        CREATE TABLE session_transcripts (
            session_key TEXT PRIMARY KEY,
            content TEXT NOT NULL,
            harness TEXT,
            project TEXT,
            agent_id TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX session_transcripts_project ON session_transcripts(project);
        CREATE INDEX session_transcripts_created ON session_transcripts(created_at);
        """,
    )


@migration(8, "memory files: MEMORY.md / memory/**/*.md indexed as line-ranged chunk memories")
def _memory_files(conn: sqlite3.Connection) -> None:
    # Each chunk is a row of `memories` (source_type 'file', source_id 'file:' + path);
    # file_chunks maps it back to its lines. The file is the truth: sync rewrites these.
    _script(
        conn,
        """
        CREATE TABLE memory_files (
            path TEXT PRIMARY KEY,          -- real path (symlinks resolved)
            root TEXT NOT NULL,             -- the project root it was found under
            project TEXT,
            content_hash TEXT,              -- sha256 of the file's bytes at the last sync
            chunking TEXT,                  -- the chunk settings it was cut with
            mtime_ns INTEGER,
            size INTEGER,
            chunk_count INTEGER NOT NULL DEFAULT 0,
            error TEXT,                     -- why the file is not indexed (too big, binary)
            indexed_at TEXT NOT NULL,
            checked_at TEXT NOT NULL
        );
        CREATE INDEX memory_files_root ON memory_files(root);

        CREATE TABLE file_chunks (
            memory_id TEXT PRIMARY KEY,
            path TEXT NOT NULL,
            chunk_index INTEGER NOT NULL,
            start_line INTEGER NOT NULL,    -- 1-based, inclusive
            end_line INTEGER NOT NULL,
            text_hash TEXT NOT NULL         -- sha256 of the chunk text as indexed
        );
        CREATE INDEX file_chunks_path ON file_chunks(path, chunk_index);

        -- project roots the daemon learnt from hooks (session start) besides configured ones
        CREATE TABLE file_roots (
            root TEXT PRIMARY KEY,
            project TEXT,
            first_seen TEXT NOT NULL,
            last_seen TEXT NOT NULL
        );
        """,
    )


@migration(5, "context index: memories under their neighbours; key/value meta")
def _context(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        CREATE TABLE memory_context (
            seq INTEGER PRIMARY KEY,
            text TEXT NOT NULL,
            text_hash TEXT NOT NULL
        );
        CREATE INDEX memory_context_hash ON memory_context(text_hash);
        CREATE VIRTUAL TABLE memories_ctx_fts USING fts5(
            text, content='memory_context', content_rowid='seq', tokenize='porter unicode61'
        );
        CREATE TRIGGER memory_context_ai AFTER INSERT ON memory_context BEGIN
            INSERT INTO memories_ctx_fts(rowid, text) VALUES (new.seq, new.text);
        END;
        CREATE TRIGGER memory_context_ad AFTER DELETE ON memory_context BEGIN
            INSERT INTO memories_ctx_fts(memories_ctx_fts, rowid, text)
                VALUES ('delete', old.seq, old.text);
        END;
        CREATE TRIGGER memory_context_au AFTER UPDATE OF text ON memory_context BEGIN
            INSERT INTO memories_ctx_fts(memories_ctx_fts, rowid, text)
                VALUES ('delete', old.seq, old.text);
            INSERT INTO memories_ctx_fts(rowid, text) VALUES (new.seq, new.text);
        END;
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        """,
    )


@migration(6, "hints: questions each memory answers (prospective indexing), and their index")
def _hints(conn: sqlite3.Connection) -> None:
    # The cascade is a backstop: every store path that removes a memory row also deletes its
    # hints itself (store.hints.delete_for), so the retention sweep can count them.
    _script(
        conn,
        """
        CREATE TABLE memory_hints (
            id INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            hint TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (memory_id, hint)
        );
        CREATE VIRTUAL TABLE memory_hints_fts USING fts5(
            hint, content='memory_hints', content_rowid='id', tokenize='porter unicode61'
        );
        CREATE TRIGGER memory_hints_ai AFTER INSERT ON memory_hints BEGIN
            INSERT INTO memory_hints_fts(rowid, hint) VALUES (new.id, new.hint);
        END;
        CREATE TRIGGER memory_hints_ad AFTER DELETE ON memory_hints BEGIN
            INSERT INTO memory_hints_fts(memory_hints_fts, rowid, hint)
                VALUES ('delete', old.id, old.hint);
        END;
        CREATE TRIGGER memory_hints_au AFTER UPDATE OF hint ON memory_hints BEGIN
            INSERT INTO memory_hints_fts(memory_hints_fts, rowid, hint)
                VALUES ('delete', old.id, old.hint);
            INSERT INTO memory_hints_fts(rowid, hint) VALUES (new.id, new.hint);
        END;
        """,
    )


@migration(3, "documents: ingested texts and URLs, and the chunk memories of each")
def _documents(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        CREATE TABLE documents (
            id TEXT PRIMARY KEY,
            source_type TEXT NOT NULL CHECK (source_type IN ('text', 'url')),
            source_url TEXT,
            title TEXT,
            raw_content TEXT,
            content_type TEXT,
            status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'extracting',
                'chunking', 'embedding', 'indexing', 'done', 'failed', 'deleted')),
            error TEXT,
            chunk_count INTEGER NOT NULL DEFAULT 0,
            byte_length INTEGER,
            project TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            who TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            deleted_at TEXT,
            delete_reason TEXT
        );
        CREATE INDEX documents_created ON documents(created_at);
        CREATE INDEX documents_status ON documents(status, created_at);
        CREATE INDEX documents_project ON documents(project, created_at);

        CREATE TABLE document_memories (
            document_id TEXT NOT NULL REFERENCES documents(id),
            memory_id TEXT NOT NULL,
            chunk_index INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (document_id, chunk_index)
        );
        CREATE INDEX document_memories_memory ON document_memories(memory_id);
        """,
    )


@migration(2, "pipeline v2: supersession, memory_archive, knowledge graph tables")
def _pipeline_v2(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        -- an UPDATE in full mode keeps the old row, marked superseded (never recalled or listed)
        ALTER TABLE memories ADD COLUMN superseded_by TEXT;
        ALTER TABLE memories ADD COLUMN superseded_at TEXT;
        CREATE INDEX memories_superseded ON memories(superseded_by)
            WHERE superseded_by IS NOT NULL;

        -- the cold copy of a row, written before automation changes it
        CREATE TABLE memory_archive (
            id TEXT PRIMARY KEY,
            memory_id TEXT NOT NULL,
            content TEXT NOT NULL,
            row_json TEXT NOT NULL,
            reason TEXT,
            superseded_by TEXT,
            archived_by TEXT,
            archived_at TEXT NOT NULL
        );
        CREATE INDEX memory_archive_memory ON memory_archive(memory_id, archived_at);

        CREATE TABLE entities (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            canonical_name TEXT NOT NULL UNIQUE,
            entity_type TEXT NOT NULL DEFAULT 'extracted',
            mentions INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX entities_mentions ON entities(mentions);

        CREATE TABLE relations (
            id TEXT PRIMARY KEY,
            source_entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            target_entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            relation_type TEXT NOT NULL,
            strength REAL NOT NULL DEFAULT 1.0,
            mentions INTEGER NOT NULL DEFAULT 1,
            confidence REAL NOT NULL DEFAULT 0.5,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (source_entity_id, target_entity_id, relation_type)
        );
        CREATE INDEX relations_target ON relations(target_entity_id);

        CREATE TABLE memory_entity_mentions (
            memory_id TEXT NOT NULL,
            entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            mention_text TEXT NOT NULL,
            confidence REAL NOT NULL DEFAULT 0.5,
            created_at TEXT NOT NULL,
            PRIMARY KEY (memory_id, entity_id)
        );
        CREATE INDEX memory_entity_mentions_entity ON memory_entity_mentions(entity_id);
        """,
    )


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}


def migrate(db: Database) -> list[int]:
    """Apply every pending migration; returns the versions applied now."""
    if getattr(db, "dialect", "sqlite") == "postgresql":
        from mnemonist.store.postgres.schema import migrate_postgres

        return migrate_postgres(db, MIGRATIONS, PG_BASELINE)
    done: list[int] = []
    with db.write_tx() as conn:
        have = applied_versions(conn)
    for m in MIGRATIONS:
        if m.version in have:
            continue
        with db.write_tx() as conn:
            if m.version in applied_versions(conn):
                continue
            m.apply(conn)
            conn.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (m.version, m.name, utcnow()),
            )
        done.append(m.version)
    return done


@migration(4, "sessions: checkpoints, what each session received, hook session state")
def _sessions(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        CREATE TABLE session_checkpoints (
            id TEXT PRIMARY KEY,
            session_key TEXT NOT NULL,
            harness TEXT,
            project TEXT,
            project_normalized TEXT,
            trigger TEXT NOT NULL CHECK (trigger IN
                ('periodic', 'pre_compaction', 'session_end', 'agent', 'explicit')),
            digest TEXT NOT NULL,
            prompt_count INTEGER NOT NULL DEFAULT 0,
            memory_queries TEXT NOT NULL DEFAULT '[]',
            recent_remembers TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL
        );
        CREATE INDEX session_checkpoints_session ON session_checkpoints(session_key, created_at);
        CREATE INDEX session_checkpoints_created ON session_checkpoints(created_at);
        CREATE INDEX session_checkpoints_project
            ON session_checkpoints(project_normalized, created_at);

        -- what each session received (prompt submit never repeats it) and what it hit
        CREATE TABLE session_memories (
            session_key TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            rank INTEGER NOT NULL DEFAULT 0,
            was_injected INTEGER NOT NULL DEFAULT 0,
            injected_at TEXT,
            fts_hit_count INTEGER NOT NULL DEFAULT 0,
            relevance_score REAL,
            PRIMARY KEY (session_key, memory_id)
        );
        CREATE INDEX session_memories_memory ON session_memories(memory_id);

        -- the hooks' view of a live session: prompt counts, recent prompts, compaction marker
        CREATE TABLE session_state (
            session_key TEXT PRIMARY KEY,
            harness TEXT,
            project TEXT,
            project_normalized TEXT,
            cwd TEXT,
            transcript_path TEXT,
            started_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            ended_at TEXT,
            prompt_count INTEGER NOT NULL DEFAULT 0,
            checkpoint_prompt_count INTEGER NOT NULL DEFAULT 0,
            last_checkpoint_at TEXT,
            context_reset_at TEXT,
            compaction_pending INTEGER NOT NULL DEFAULT 0,
            compactions INTEGER NOT NULL DEFAULT 0,
            recent_prompts TEXT NOT NULL DEFAULT '[]',
            memory_queries TEXT NOT NULL DEFAULT '[]'
        );
        CREATE INDEX session_state_updated ON session_state(updated_at);
        """,
    )


@migration(7, "session turns: what has been read of each session's transcript")
def _session_ingest(conn: sqlite3.Connection) -> None:
    # One row per session whose transcript is indexed as turn memories (source_type 'session',
    # source_id = the session key). `offset` / `next_line` say where reading resumes; the turns
    # themselves are memories keyed by their position (idempotency_key), so a re-read adds
    # nothing twice. `status`: pending (below the significance gate so far), indexed, skipped.
    _script(
        conn,
        """
        CREATE TABLE session_ingest (
            session_key TEXT PRIMARY KEY,
            path TEXT,
            byte_offset INTEGER NOT NULL DEFAULT 0,
            next_line INTEGER NOT NULL DEFAULT 0,
            turns INTEGER NOT NULL DEFAULT 0,
            substantive INTEGER NOT NULL DEFAULT 0,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'indexed', 'skipped')),
            reason TEXT,
            project TEXT,
            harness TEXT,
            first_at TEXT,
            last_at TEXT,
            prompts_at_ingest INTEGER NOT NULL DEFAULT 0,
            ended INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX session_ingest_updated ON session_ingest(updated_at);
        CREATE INDEX memories_source_type ON memories(source_type, source_id);
        """,
    )


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
