"""Numbered schema migrations, applied in order at start, each in its own transaction.

A migration is registered once and never edited after it ships: a change is a new number.
`schema_migrations` records what ran, so applying is idempotent.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from mnemonist.model.memory import utcnow
from mnemonist.store.db import Database


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]


MIGRATIONS: list[Migration] = []


def migration(version: int, name: str):
    def register(fn: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
        if any(m.version == version for m in MIGRATIONS):
            raise RuntimeError(f"migration {version} registered twice")
        MIGRATIONS.append(Migration(version, name, fn))
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


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}


def migrate(db: Database) -> list[int]:
    """Apply every pending migration; returns the versions applied now."""
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
