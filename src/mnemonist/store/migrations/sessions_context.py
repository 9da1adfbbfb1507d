"""Migrations 4–8: sessions, the context index, hints, session turns, memory files."""

from __future__ import annotations

import sqlite3

from mnemonist.store.migrations import _script, migration


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
