"""Export and bundle import on PostgreSQL: a SQLite home's bundle imported into PostgreSQL
and exported again is the same bundle (every field of every record, vectors included); a
home moved with `mnemonist migrate --to` exports the same bundle as its SQLite file; an
export is one snapshot however long it streams; backup points at pg_dump."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from conftest import run_daemon
from mnemonist.cli.main import cli
from mnemonist.store.postgres.database import PostgresDatabase
from test_export_bundle import FILES, export_cli, import_cli, records
from test_export_bundle import source as source  # the populated SQLite home (a fixture)


def same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    assert [{**r, "exported_at": None} for r in a] == [{**r, "exported_at": None} for r in b]


def test_sqlite_bundle_to_postgresql_and_back_is_the_same_bundle(source, postgres_url: str,
                                                                   tmp_path: Path) -> None:
    live, _root = source
    for args in ((), ("--vectors",)):
        text = export_cli(live, *args)
        recs = records(text)
        bundle = tmp_path / f"bundle{len(args)}.jsonl"
        bundle.write_text(text)
        with run_daemon(tmp_path / f"pg{len(args)}",
                        {"files": FILES, "storage": {"url": postgres_url}}) as pg:
            out = import_cli(pg, bundle)
            assert out["format"] == "bundle" and out["created"] > 0
            pg.flush()
            same(records(export_cli(pg, *args)), recs)
            again = import_cli(pg, bundle)  # idempotent
            assert again["created"] == 0 and again["skipped"] == len(recs) - 1
            same(records(export_cli(pg, *args)), recs)
            # the imported memories are found by both legs there
            found = pg.recall("which S3 bucket holds the invoices")["results"]
            assert any("acme-invoices-prod" in r["content"] for r in found[:5])
            if args:  # vectors came in the bundle: pgvector has them, none computed again
                n = pg.service.core.db.reader().execute(
                    "SELECT count(*) FROM embeddings WHERE embedding IS NULL").fetchone()[0]
                assert n == 0
                assert pg.service.core.embedder.stats.processed == 0
        # the next round gets an empty database again
        db = PostgresDatabase(postgres_url)
        try:
            with db.write_tx() as w:
                w.raw.execute("DROP SCHEMA public CASCADE")
                w.raw.execute("CREATE SCHEMA public")
                w.raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
        finally:
            db.close()


def test_a_home_moved_with_migrate_exports_the_same_bundle(postgres_url: str,
                                                           tmp_path: Path) -> None:
    home = tmp_path / "home"
    with run_daemon(home) as d:
        a = d.remember("The payroll run moved to the 25th of each month", project="hr",
                       tags=["payroll"], who="Dana Whitfield")
        d.remember("Laptops are refreshed every three years", project="it")
        d.remember("Only for me: the spare key is under the blue pot", agent_id="agent-7")
        assert d.http.patch(f"/api/memory/{a['id']}", json={
            "content": "The payroll run moved to the 26th of each month",
            "reason": "corrected"}).status_code == 200
        d.flush()
        before = records(export_cli(d, "--vectors"))
        mine = records(export_cli(d, "--agent", "agent-7"))
        assert len([r for r in mine if r["kind"] == "memory"]) == len(
            [r for r in before if r["kind"] == "memory"]) + 1
    out = CliRunner().invoke(cli, ["migrate", "--home", str(home), "--to", postgres_url])
    assert out.exit_code == 0, out.output
    with run_daemon(tmp_path / "pg", {"storage": {"url": postgres_url}}) as pg:
        same(records(export_cli(pg, "--vectors")), before)
        same(records(export_cli(pg, "--agent", "agent-7")), mine)


def test_an_export_on_postgresql_is_one_snapshot(postgres_url: str, tmp_path: Path) -> None:
    with run_daemon(tmp_path / "pg", {"storage": {"url": postgres_url}}) as pg:
        for n in range(3):
            pg.remember(f"Snapshot note number {n} about the tide tables")
        lines = pg.service.carry.export_lines(all_scopes=True)
        header = json.loads(next(lines))
        assert header["kind"] == "mnemonist-bundle"
        pg.remember("Written while the export streams: not in it")
        rest = [json.loads(line) for line in lines]
        contents = [r["content"] for r in rest if r["kind"] == "memory"]
        assert len(contents) == 3 and all("tide tables" in c for c in contents)


def test_backup_on_postgresql_is_a_501_naming_pg_dump(postgres_url: str,
                                                     tmp_path: Path) -> None:
    with run_daemon(tmp_path / "pg", {"storage": {"url": postgres_url}}) as pg:
        for body in ({"name": "b.db"}, {"download": True}):
            r = pg.http.post("/api/backup", json=body)
            assert r.status_code == 501, r.text
            answer = r.json()
            assert answer["error"] == "not_on_postgresql"
            assert "pg_dump" in answer["message"] and "mnemonist export" in answer["message"]
        assert not (tmp_path / "pg" / "backups").exists()
