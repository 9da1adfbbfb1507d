"""Migrations 1–3: the core schema, Pipeline v2, documents."""

from __future__ import annotations

import sqlite3

from mnemonist.store.migrations import _script, migration


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
