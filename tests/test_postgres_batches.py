"""How statements travel to PostgreSQL (store/postgres/connection.py, dialect.py): an
executemany INSERT as one statement of arrays, a long IN list as one array, an INSERT's
savepoint in one round trip, and the planner settings of every session. Each checked for the
answer it gives, against a real server, not only for its form."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemonist.store.migrations import MIGRATIONS, PG_BASELINE
from mnemonist.store.postgres import connection
from mnemonist.store.postgres.database import PostgresDatabase
from mnemonist.store.postgres.dialect import array_form, as_arrays, rows_form, translate
from mnemonist.store.postgres.schema import migrate_postgres


@pytest.fixture
def db(postgres_url: str) -> Iterator[PostgresDatabase]:
    database = PostgresDatabase(postgres_url)
    migrate_postgres(database, MIGRATIONS, PG_BASELINE)
    database.refresh_keys()
    try:
        yield database
    finally:
        database.close()


def _arrays_used(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements sent as arrays from now on."""
    sent: list[str] = []
    real = connection._as_arrays

    def spy(t: Any, batch: list[Any], types: Any) -> Any:
        out = real(t, batch, types)
        if out is not None:
            sent.append(out[0])
        return out

    monkeypatch.setattr(connection, "_as_arrays", spy)
    return sent


def test_an_executemany_insert_is_one_statement_of_arrays_with_each_column_typed(
    db: PostgresDatabase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = _arrays_used(monkeypatch)
    rows = [(f"e{i}", f"Name {i}", f"name {i}", "person", "2026-11-27T10:00:00.000Z",
             "2026-11-27T10:00:00.000Z", "", "", "") for i in range(50)]
    with db.write_tx() as conn:
        conn.executemany(
            "INSERT INTO entities (id, name, canonical_name, entity_type, mentions, created_at,"
            " updated_at, project, agent_id, user_id) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
            rows)
        # a bigint column given text and a bool, a float column given an int: as row by row
        conn.executemany(
            "INSERT INTO entity_attributes (id, entity_id, memory_id, kind, content,"
            " importance, source, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 'inline', ?, ?)",
            [("a1", "e1", "m1", "attribute", "likes tea", 1, "t", "t"),
             ("a2", "e2", "m1", "attribute", "likes coffee", 0.25, "t", "t")])
    assert len(sent) == 2 and all("unnest(" in s for s in sent)
    reader = db.reader()
    assert reader.execute("SELECT COUNT(*) FROM entities").fetchone()[0] == 50
    got = reader.execute("SELECT name, mentions, project FROM entities WHERE id = 'e7'").fetchone()
    assert tuple(got) == ("Name 7", 0, "")
    imp = dict(reader.execute("SELECT id, importance FROM entity_attributes").fetchall())
    assert imp == {"a1": 1.0, "a2": 0.25}
    assert reader.execute("SELECT source FROM entity_attributes WHERE id = 'a2'"
                          ).fetchone()[0] == "inline"


def test_an_upsert_batch_that_updates_one_row_twice_goes_row_by_row(
    db: PostgresDatabase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two rows of one statement may not update one row: such a batch keeps SQLite's answer
    (the later row wins), any other is one statement."""
    sent = _arrays_used(monkeypatch)
    upsert = ("INSERT INTO memory_context (seq, text, text_hash) VALUES (?, ?, ?)"
              " ON CONFLICT(seq) DO UPDATE SET text = excluded.text,"
              " text_hash = excluded.text_hash")
    with db.write_tx() as conn:
        for seq in (1, 2):
            conn.execute(
                "INSERT INTO memories (seq, id, content, normalized_content, content_hash, type,"
                " importance, created_at, updated_at, occurred_at) VALUES (?, ?, ?, ?, ?, 'fact',"
                " 0.5, 't', 't', 't')", (seq, f"m{seq}", "x", "x", f"h{seq}"))
        conn.executemany(upsert, [(1, "one", "h1"), (2, "two", "h2")])
        conn.executemany(upsert, [(1, "first", "h1"), (1, "second", "h1b")])
    assert len(sent) == 1
    texts = dict(db.reader().execute("SELECT seq, text FROM memory_context").fetchall())
    assert texts == {1: "second", 2: "two"}


def test_a_failing_row_of_a_batch_undoes_the_batch_and_the_transaction_goes_on(
    db: PostgresDatabase,
) -> None:
    insert = ("INSERT INTO entities (id, name, canonical_name, entity_type, mentions,"
              " created_at, updated_at, agent_id, user_id) VALUES (?, ?, ?, 'person', 0, 't',"
              " 't', '', '')")
    with db.write_tx() as conn:
        conn.execute(insert, ("e1", "Ann", "ann"))
        with pytest.raises(sqlite3.IntegrityError):
            conn.executemany(insert, [("e2", "Bo", "bo"), ("e1", "Ann again", "ann")])
        with pytest.raises(sqlite3.IntegrityError):  # one statement: its own savepoint
            conn.execute(insert, ("e1", "Ann twice", "ann"))
        conn.execute(insert, ("e3", "Cy", "cy"))
    ids = {r[0] for r in db.reader().execute("SELECT id FROM entities").fetchall()}
    assert ids == {"e1", "e3"}


def test_a_long_in_list_is_one_array_and_answers_as_the_list(db: PostgresDatabase) -> None:
    with db.write_tx() as conn:
        conn.executemany(
            "INSERT INTO entities (id, name, canonical_name, entity_type, mentions, created_at,"
            " updated_at, agent_id, user_id) VALUES (?, ?, ?, 'person', ?, 't', 't', '', '')",
            [(f"e{i}", f"N{i}", f"n{i}", i) for i in range(20)])
    reader = db.reader()
    wanted = [f"e{i}" for i in range(0, 20, 3)]
    sql = f"SELECT id FROM entities WHERE id IN ({','.join('?' * len(wanted))}) ORDER BY id"
    assert array_form(translate(sql).sql) is not None
    assert [r[0] for r in reader.execute(sql, wanted)] == sorted(wanted)
    numbers = [1, 5, 9, 13]
    sql = (f"SELECT id FROM entities WHERE mentions NOT IN ({','.join('?' * len(numbers))})"
           " AND mentions < ? ORDER BY mentions")
    assert [r[0] for r in reader.execute(sql, [*numbers, 7])] == ["e0", "e2", "e3", "e4", "e6"]
    # a list holding a NULL is sent as it was (IN and = ANY agree, NOT IN's NULL rule kept)
    assert as_arrays(array_form(translate(sql).sql), [1, None, 9, 13, 7]) is None
    assert [r[0] for r in reader.execute(sql, [1, None, 9, 13, 7])] == []


def test_every_session_runs_with_the_planner_settings(db: PostgresDatabase) -> None:
    wanted = connection.SESSION_SETTINGS
    names = list(wanted)
    sql = "SELECT " + ", ".join(f"current_setting('{n}')" for n in names)
    with db.write_tx() as conn:
        writer = list(conn.execute(sql).fetchone())
    reader = list(db.reader().execute(sql).fetchone())
    for got in (writer, reader):
        assert {n: v for n, v in zip(names, got, strict=True)} == wanted


@pytest.mark.parametrize(("sql", "sent_as_arrays"), [
    ("INSERT INTO t (a, b) VALUES (?, ?)", True),
    ("INSERT OR IGNORE INTO t (a, b) VALUES (?, 'x')", True),
    ("INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT(a) DO UPDATE SET b = excluded.b", True),
    ("INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT(a) DO UPDATE SET b = b + ?", False),
    ("INSERT INTO t (a, b) VALUES (?, MIN(0.7, 0.4 + 0.1 * (?)))", True),
    ("INSERT INTO t (a, b) VALUES (?, 'a%b')", False),
    ("INSERT INTO t VALUES (?, ?)", False),
    ("UPDATE t SET b = ? WHERE a = ?", False),
])
def test_which_inserts_go_as_arrays(sql: str, sent_as_arrays: bool) -> None:
    assert (rows_form(translate(sql).sql) is not None) is sent_as_arrays


def test_an_import_whose_texts_another_daemon_stored_meanwhile_answers_with_them(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An import's memory rows go in one statement at the chunk's end; when another daemon
    stored one of its keys after the import asked which are stored, that statement fails
    on the unique index, and the chunk is written again a row at a time: the stored memory
    answers for its twin and the others are created, once each."""
    from mnemonist.daemon import open_memory
    from mnemonist.model.requests import ImportRequest
    from mnemonist.store import memories

    settings = {"storage": {"url": postgres_url}, "embedding": {"provider": "none"}}
    with open_memory(tmp_path / "a", settings) as a, open_memory(tmp_path / "b", settings) as b:
        first = b.service.carry.import_memories(ImportRequest(items=[
            {"content": "The staging cluster runs in eu-west-1", "idempotency_key": "k1"}]))
        stored_id = first["items"][0]["id"]
        sent: list[str] = []
        real_present = memories.present

        def blind(conn: Any, keys: list[str], hashes: list[str]) -> Any:
            sent.append("asked")
            return set(), set()  # as if asked before the other daemon's commit

        monkeypatch.setattr(memories, "present", blind)
        out = a.service.carry.import_memories(ImportRequest(items=[
            {"content": "Deploys happen on Tuesdays", "idempotency_key": "k0"},
            {"content": "The staging cluster runs in eu-west-1", "idempotency_key": "k1"},
            {"content": "Backups run nightly at two", "idempotency_key": "k2"}]))
        monkeypatch.setattr(memories, "present", real_present)
        assert len(sent) == 2  # the chunk, then its second try
        statuses = [i["status"] for i in out["items"]]
        assert statuses == ["created", "replayed", "created"]
        assert out["items"][1]["id"] == stored_id
        rows = a.service.core.db.reader().execute(
            "SELECT idempotency_key, COUNT(*) FROM memories GROUP BY idempotency_key"
            " ORDER BY idempotency_key").fetchall()
        assert [tuple(r) for r in rows] == [("k0", 1), ("k1", 1), ("k2", 1)]


def test_a_large_import_refreshes_the_planner_statistics(postgres_url: str,
                                                         tmp_path: Path) -> None:
    """Autovacuum would analyze the tables an import filled at its next round (a minute or
    more); the daemon does it when the import ends, so that the planner knows the rows."""
    import psycopg

    from mnemonist.daemon import open_memory
    from mnemonist.model.requests import ImportRequest
    from mnemonist.store.memories import IMPORTED_TABLES

    settings = {"storage": {"url": postgres_url}, "embedding": {"provider": "none"}}
    with open_memory(tmp_path / "a", settings) as a:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            for table in IMPORTED_TABLES:  # only the daemon may analyze them here
                admin.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")

        def known_rows() -> float:
            with psycopg.connect(postgres_url) as c:
                return c.execute("SELECT reltuples FROM pg_class WHERE relname = 'memories'"
                                 ).fetchone()[0]

        small = a.service.carry.import_memories(ImportRequest(items=[
            {"content": f"Service {i} listens on port {9000 + i}"} for i in range(10)]))
        assert small["created"] == 10 and known_rows() < 10  # too few to bother
        out = a.service.carry.import_memories(ImportRequest(items=[
            {"content": f"Host h{i} runs service s{i % 37} on port {8000 + i}"}
            for i in range(1000)]))
        assert out["created"] == 1000
        assert known_rows() == 1010


def test_a_failing_insert_among_many_leaves_no_statement_half_prepared(
    db: PostgresDatabase,
) -> None:
    """An INSERT goes with its savepoint and release in one round trip; when it fails, the
    release after it is skipped and the savepoint rolled back. Failures at every point of a
    transaction's run of INSERTs leave the writer usable and the others written. (Eight
    writers on two daemons once met 'prepared statement ... does not exist' after such a
    failure, while the driver still prepared these statements: nothing in the round trip is
    prepared now; `test_postgres_store` runs those writers.)"""
    insert = ("INSERT INTO entities (id, name, canonical_name, entity_type, mentions,"
              " created_at, updated_at, agent_id, user_id) VALUES (?, ?, ?, 'person', 0, 't',"
              " 't', '', '')")
    written = 0
    for run in range(1, 9):  # the failure falls at every point of the driver's count
        with db.write_tx() as conn:
            for i in range(run):
                conn.execute(insert, (f"e{run}-{i}", "N", f"n{run}-{i}"))
                written += 1
                if i % 3 == 0:
                    with pytest.raises(sqlite3.IntegrityError):
                        conn.execute(insert, (f"e{run}-{i}", "again", "again"))
    assert db.reader().execute("SELECT COUNT(*) FROM entities").fetchone()[0] == written
