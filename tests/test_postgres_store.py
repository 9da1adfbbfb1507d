"""What only the PostgreSQL store has: several daemons on one database, pgvector's HNSW path,
the baseline schema's agreement with SQLite's, the migration rule and the SQL dialect."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import httpx
import pytest

from conftest import run_daemon
from mnemonist.settings import ConfigError, Paths, load_config
from mnemonist.store.migrations import MIGRATIONS, PG_BASELINE, Migration
from mnemonist.store.postgres import vectors
from mnemonist.store.postgres.database import PostgresDatabase
from mnemonist.store.postgres.ddl import current_sqlite_schema
from mnemonist.store.postgres.dialect import translate
from mnemonist.store.postgres.schema import MissingPostgresForm, migrate_postgres


def ids(answer: dict) -> list[str]:
    return [r["id"] for r in answer["results"]]


def test_a_memory_written_through_one_daemon_is_recalled_through_another(
    postgres_url: str, tmp_path: Path,
) -> None:
    config = {"storage": {"url": postgres_url}}
    with run_daemon(tmp_path / "a", config) as a, run_daemon(tmp_path / "b", config) as b:
        made = a.remember("The release freeze starts on the twelfth of December",
                          project="team")
        # keyword: at once, nothing to wait for
        assert ids(b.recall("release freeze", project="team"))[0] == made["id"]
        got = b.http.get(f"/api/memory/{made['id']}").json()
        assert got["content"].startswith("The release freeze")
        a.flush()  # daemon A embeds it; daemon B reads the vector from pgvector
        meaning = b.recall("when do we stop shipping before the holidays?", project="team")
        assert made["id"] in ids(meaning)
        hit = next(r for r in meaning["results"] if r["id"] == made["id"])
        assert hit["scores"]["vector"] > 0
        # the same text through B is the same memory (one live row per content)
        again = b.remember("The release freeze starts on the twelfth of December",
                           project="team")
        assert again["id"] == made["id"] and again["deduplicated"] is True


def test_concurrent_writers_on_two_daemons_store_each_text_once(
    postgres_url: str, tmp_path: Path,
) -> None:
    """Eight clients on two daemons write the same 15 texts (and 15 keyed retries) at once:
    every write is answered, each text is one memory, each idempotency key one memory."""
    config = {"storage": {"url": postgres_url}}
    texts = [f"Shared runbook step {i}: restart the {w} worker"
             for i, w in enumerate(["queue", "mail", "cron"] * 5)]
    with run_daemon(tmp_path / "a", config) as a, run_daemon(tmp_path / "b", config) as b:
        answers: list[tuple[str, str]] = []
        failures: list[str] = []
        lock = threading.Lock()

        def client(n: int) -> None:
            daemon = (a, b)[n % 2]
            with httpx.Client(base_url=daemon.url, timeout=120) as http:
                for i, text in enumerate(texts):
                    for body in ({"content": text, "project": "race"},
                                 {"content": f"keyed {i} from client {n}", "project": "race",
                                  "idempotency_key": f"k{i}"}):
                        resp = http.post("/api/memory/remember", json=body)
                        with lock:
                            if resp.status_code not in (200, 201):
                                failures.append(resp.text)
                            else:
                                answers.append((body.get("idempotency_key") or text,
                                                resp.json()["id"]))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not failures, failures[:3]
        assert len(answers) == 8 * 2 * len(texts)
        ids_per_key: dict[str, set[str]] = {}
        for key, mid in answers:
            ids_per_key.setdefault(key, set()).add(mid)
        assert all(len(v) == 1 for v in ids_per_key.values()), ids_per_key
        count = a.daemon.db.reader().execute(
            "SELECT COUNT(*) FROM memories WHERE project = 'race'").fetchone()[0]
        assert count == 2 * len(texts)


def test_concurrent_writes_of_one_key_on_two_daemons_leave_one_live_memory(
    postgres_url: str, tmp_path: Path,
) -> None:
    config = {"storage": {"url": postgres_url}}
    with run_daemon(tmp_path / "a", config) as a, run_daemon(tmp_path / "b", config) as b:
        failures: list[str] = []

        def client(n: int) -> None:
            daemon = (a, b)[n % 2]
            with httpx.Client(base_url=daemon.url, timeout=120) as http:
                for i in range(10):
                    resp = http.post("/api/memory/remember", json={
                        "content": f"The on-call phone is held by person {n}-{i}",
                        "project": "keys", "key": "on-call phone"})
                    if resp.status_code not in (200, 201):
                        failures.append(resp.text)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not failures, failures[:3]
        rows = a.daemon.db.reader().execute(
            "SELECT COUNT(*), SUM(CASE WHEN superseded_at IS NULL THEN 1 ELSE 0 END)"
            " FROM memories WHERE project = 'keys'").fetchone()
        assert tuple(rows) == (60, 1)


def test_the_read_routes_answer_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    """Every GET route without a path parameter answers (no 5xx), the bundle export too;
    backup (a copy of the SQLite file) is a 501 naming the store, before anything starts."""
    with run_daemon(tmp_path / "home", {"storage": {"url": postgres_url}}) as live:
        made = live.remember("Alice deploys the billing service on Tuesdays", project="p")
        live.flush()
        routes = ["/health", "/api/status", "/api/diagnostics", "/api/diagnostics/graph",
                  "/api/memories", "/api/embeddings", "/api/entities", "/api/documents",
                  "/api/files", "/api/sessions", "/api/checkpoints", "/api/pipeline/status",
                  "/api/repair/duplicates", "/memory/search?q=billing", "/",
                  f"/api/memory/{made['id']}/chain", f"/api/memory/{made['id']}/neighbours"]
        for route in routes:
            resp = live.http.get(route)
            assert resp.status_code == 200, (route, resp.text[:300])
        assert live.http.get("/api/status").json()["database"] == postgres_url
        export = live.http.get("/api/export")
        assert export.status_code == 200
        assert made["id"] in export.text and "mnemonist-bundle" in export.text
        backup = live.http.post("/api/backup", json={"name": "copy.db"})
        assert backup.status_code == 501
        assert not (live.daemon.paths.home / "backups").exists()


def test_hnsw_answers_like_the_exact_scan(postgres_url: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with run_daemon(tmp_path / "home", {"storage": {"url": postgres_url},
                                        "search": {"postgres_vectors": "database"}}) as live:
        for i, text in enumerate(["Invoices are paid within thirty days",
                                  "The build server runs Debian 12",
                                  "Lunch is served at noon in the atrium",
                                  "Passwords rotate every ninety days"]):
            live.remember(text, project=f"p{i % 2}")
        live.flush()
        index = live.service.core.index
        assert isinstance(index, vectors.PgVectorIndex) and len(index) == 4
        query = live.service.core.embed_query("which operating system is on the CI machine?")
        exact = index.search(query, 3)
        monkeypatch.setattr(vectors, "EXACT_BELOW", 0)
        approximate = index.search(query, 3)
        assert [s for s, _ in approximate] == [s for s, _ in exact]
        assert approximate[0][1] == pytest.approx(exact[0][1], abs=1e-5)
        only_p1 = index.search(query, 3, project="p1", filter_project=True)
        assert only_p1 and all(s % 2 == 0 for s, _ in only_p1)  # seqs 2, 4 are project p1
        with live.daemon.db.pool.connection() as raw, raw.transaction():
            raw.execute("SET LOCAL enable_seqscan = off")
            plan = "\n".join(r[0] for r in raw.execute(
                "EXPLAIN SELECT content_hash FROM embeddings WHERE dimensions = 384"
                " ORDER BY (embedding::vector(384)) <=> %s::vector(384) LIMIT 3",
                (vectors.literal(query),)))
        assert "embeddings_hnsw_384" in plan


def test_the_baseline_has_every_sqlite_table_and_column(postgres_url: str) -> None:
    db = PostgresDatabase(postgres_url)
    try:
        migrate_postgres(db, MIGRATIONS, PG_BASELINE)
        pg: dict[str, set[str]] = {}
        for table, column in db.reader().execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema()"
        ).fetchall():
            pg.setdefault(table, set()).add(column)
    finally:
        db.close()
    con = sqlite3.connect(":memory:")
    for kind, name, sql in current_sqlite_schema():
        if kind == "table" and "VIRTUAL" not in sql and not name.startswith("memories_"):
            con.execute(sql)
    for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        if "_fts" in table:
            continue
        columns = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        assert table in pg, f"{table} is missing on PostgreSQL"
        assert columns <= pg[table], f"{table}: {columns - pg[table]} missing on PostgreSQL"


def test_a_later_migration_without_a_postgresql_form_stops_with_its_name(
    postgres_url: str,
) -> None:
    db = PostgresDatabase(postgres_url)
    try:
        later = Migration(999, "a feature only SQLite knows", lambda conn: None)
        with pytest.raises(MissingPostgresForm, match="999"):
            migrate_postgres(db, [*MIGRATIONS, later], PG_BASELINE)
        with_form = Migration(999, "with its form", lambda conn: None,
                              lambda conn: conn.execute("CREATE TABLE later_feature (x TEXT)"))
        assert migrate_postgres(db, [*MIGRATIONS, with_form], PG_BASELINE) == [999]
        assert migrate_postgres(db, [*MIGRATIONS, with_form], PG_BASELINE) == []
        assert db.reader().execute("SELECT count(*) FROM later_feature").fetchone()[0] == 0
    finally:
        db.close()


def test_a_storage_url_that_is_not_postgresql_is_refused(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text("storage:\n  url: mysql://db/memories\n")
    with pytest.raises(ConfigError, match=r"storage\.url"):
        load_config(Paths(tmp_path))


@pytest.mark.parametrize(("sqlite_sql", "postgres_sql"), [
    ("SELECT * FROM t WHERE a = ? AND b LIKE ?", "SELECT * FROM t WHERE a = %s AND b ILIKE %s"),
    ("INSERT OR IGNORE INTO t (a) VALUES (?)",
     "INSERT INTO t (a) VALUES (%s) ON CONFLICT DO NOTHING"),
    ("SELECT a FROM t WHERE x = '50% off?' AND y = ?",
     "SELECT a FROM t WHERE x = '50%% off?' AND y = %s"),
    ("SELECT a FROM t ORDER BY a LIMIT -1 OFFSET ?",
     "SELECT a FROM t ORDER BY a LIMIT ALL OFFSET %s"),
    ("SELECT IFNULL(a, 0), MAX(a, b), MAX(c) FROM t",
     "SELECT COALESCE(a, 0), GREATEST(a, b), MAX(c) FROM t"),
    ("SELECT seq FROM m WHERE seq IN (SELECT value FROM json_each(?1)) AND x = ?1",
     "SELECT seq FROM m WHERE CAST(seq AS text) IN (SELECT value FROM json_array_elements_text("
     "CAST(%(p1)s AS json)) AS json_each(value)) AND x = %(p1)s"),
    ("SELECT SUM(is_deleted = 0 AND pinned = 1), SUM(mentions),"
     " SUM(CASE WHEN a = 1 THEN 1 ELSE 0 END) FROM t",
     "SELECT SUM(CASE WHEN is_deleted = 0 AND pinned = 1 THEN 1 ELSE 0 END), SUM(mentions),"
     " SUM(CASE WHEN a = 1 THEN 1 ELSE 0 END) FROM t"),
    ("UPDATE t SET a = :a WHERE b IS NOT :b",
     "UPDATE t SET a = %(a)s WHERE b IS DISTINCT FROM %(b)s"),
])
def test_the_dialect_rewrites_the_common_subset(sqlite_sql: str, postgres_sql: str) -> None:
    assert translate(sqlite_sql).sql == postgres_sql


def test_percent_signs_reach_postgresql_as_written(postgres_url: str) -> None:
    db = PostgresDatabase(postgres_url)
    try:
        conn = db.reader()
        assert conn.execute("SELECT '50% off'").fetchone()[0] == "50% off"
        assert conn.execute("SELECT '50% off' || ?", ["!"]).fetchone()[0] == "50% off!"
        assert conn.execute("SELECT 'ABC' LIKE 'a%'").fetchone()[0] is True  # ILIKE
    finally:
        db.close()


def test_insert_or_replace_needs_a_known_key() -> None:
    keys = (("meta", ("key",)),)
    assert translate("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", keys).sql == (
        "INSERT INTO meta (key, value) VALUES (%s, %s)"
        " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value")
    with pytest.raises(ValueError, match="no primary key"):
        translate("INSERT OR REPLACE INTO other (a) VALUES (?)", keys)


def test_readers_cannot_write_and_a_lost_writer_connection_comes_back(postgres_url: str
                                                                      ) -> None:
    db = PostgresDatabase(postgres_url)
    try:
        migrate_postgres(db, MIGRATIONS, PG_BASELINE)
        with pytest.raises(sqlite3.OperationalError, match="read-only"):
            db.reader().execute("INSERT INTO meta (key, value) VALUES ('a', 'b')")
        pid = db._writer_raw.info.backend_pid
        with db.pool.connection() as raw, raw.transaction():
            raw.execute("SET LOCAL transaction_read_only = off")
            raw.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(sqlite3.Error), db.write_tx() as conn:  # the write in flight fails
            conn.execute("INSERT INTO meta (key, value) VALUES ('a', 'b')")
        with db.write_tx() as conn:  # the next one reconnects and commits
            conn.execute("INSERT INTO meta (key, value) VALUES ('a', 'b')")
        assert db.reader().execute("SELECT value FROM meta WHERE key = 'a'").fetchone()[0] == "b"
    finally:
        db.close()
