"""Migration 18: a new memory's content hash goes into one index (the duplicate guard), not two;
"does any memory hold this hash" asks the guard and the index of retired rows, each by index."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemonist.model.memory import utcnow
from mnemonist.store import memories
from mnemonist.store.db import Database
from mnemonist.store.memories import LIVE, NewMemory, hash_in_use
from mnemonist.store.migrations import migrate
from mnemonist.store.row_ids import memory_id
from mnemonist.text.normalize import normalize_and_hash


def _db(tmp_path: Path) -> Database:
    db = Database(tmp_path / "m.db")
    migrate(db)
    return db


def _insert(db: Database, text: str, project: str | None = None) -> str:
    norm = normalize_and_hash(text)
    now = utcnow()
    new = NewMemory(id=memory_id(), content=norm.storage, normalized_content=norm.normalized,
                    content_hash=norm.content_hash, type="fact", importance=0.5, tags=[],
                    pinned=False, who=None, why=None, project=project, source_type=None,
                    source_id=None, idempotency_key=None, occurred_at=now, created_at=now)
    with db.write_tx() as conn:
        memories.insert(conn, new)
    return new.id


def _in_use(db: Database, text: str) -> bool:
    h = normalize_and_hash(text).content_hash
    return bool(db.reader().execute(f"SELECT {hash_in_use('?')}", (h, h)).fetchone()[0])


def _plan(db: Database, sql: str, args: tuple = ()) -> str:
    return " | ".join(str(r[3]) for r in db.reader().execute(f"EXPLAIN QUERY PLAN {sql}", args))


def test_the_plain_hash_index_holds_only_retired_rows(tmp_path: Path) -> None:
    db = _db(tmp_path)
    try:
        sql = {r[0]: r[1] for r in db.reader().execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories'")}
        assert "memories_hash" not in sql
        assert "WHERE NOT (is_deleted = 0 AND superseded_at IS NULL)" in sql[
            "memories_hash_retired"]
        assert "memories(content_hash, COALESCE(project, '')" in " ".join(
            sql["memories_live_hash"].split())
        live = _insert(db, "the deploy runs on Fridays")
        retired = _insert(db, "the office moved to Lyon")
        with db.write_tx() as conn:
            conn.execute("UPDATE memories SET is_deleted = 1, deleted_at = ? WHERE id = ?",
                         (utcnow(), retired))
        # what each index holds (read through it: INDEXED BY fails if it cannot be used)
        reader = db.reader()
        in_retired = [r[0] for r in reader.execute(
            "SELECT id FROM memories INDEXED BY memories_hash_retired WHERE content_hash > ''"
            f" AND NOT ({LIVE})")]
        in_guard = [r[0] for r in reader.execute(
            "SELECT id FROM memories INDEXED BY memories_live_hash WHERE content_hash > ''"
            f" AND {LIVE}")]
        assert in_retired == [retired] and in_guard == [live]
    finally:
        db.close()


@pytest.mark.parametrize("state", ["live", "deleted", "superseded"])
def test_a_hash_is_in_use_whatever_its_memory_became(tmp_path: Path, state: str) -> None:
    db = _db(tmp_path)
    try:
        assert not _in_use(db, "we ship on Tuesdays")
        mid = _insert(db, "we ship on Tuesdays", project="shop")
        change = {"deleted": "is_deleted = 1, deleted_at = ?",
                  "superseded": "superseded_at = ?"}.get(state)
        if change:
            with db.write_tx() as conn:
                conn.execute(f"UPDATE memories SET {change} WHERE id = ?", (utcnow(), mid))
        assert _in_use(db, "we ship on Tuesdays")
        assert not _in_use(db, "we ship on Wednesdays")
    finally:
        db.close()


def test_every_hash_look_up_reads_an_index(tmp_path: Path) -> None:
    """The statements that look memories up by content hash (the duplicate check, the
    garbage collection of vectors, the embedder's check) search an index; none scans."""
    db = _db(tmp_path)
    try:
        plans = [
            _plan(db, f"SELECT {hash_in_use('?')}", ("h", "h")),
            _plan(db, "DELETE FROM embeddings WHERE content_hash IN (SELECT e.content_hash"
                      f" FROM embeddings e WHERE NOT {hash_in_use('e.content_hash')} LIMIT 5)"),
            _plan(db, "SELECT id FROM memories WHERE COALESCE(project, '') = ? AND"
                      " COALESCE(source_id, '') = ? AND COALESCE(agent_id, '') = ? AND"
                      " COALESCE(user_id, '') = ? AND content_hash = ? AND is_deleted = 0 AND"
                      " superseded_at IS NULL AND id IS NOT ? LIMIT 1",
                  ("", "", "", "", "h", None)),
            _plan(db, "SELECT 1 FROM memories WHERE content_hash = ? AND"
                      f" NOT ({LIVE}) AND (is_deleted = 0 OR deleted_at >= ?)", ("h", "t")),
        ]
        for plan in plans:
            assert "SCAN memories" not in plan and "SEARCH memories USING INDEX" in plan, plan
        assert "memories_live_hash (content_hash=?" in plans[0]
        assert "memories_hash_retired (content_hash=?)" in plans[0]
    finally:
        db.close()
