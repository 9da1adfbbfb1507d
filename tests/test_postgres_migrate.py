"""`mnemonist migrate --to postgresql://…`: a SQLite home copied row for row, then served."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from mnemonist.cli.main import cli
from mnemonist.daemon import open_memory
from mnemonist.model.requests import ForgetRequest, RecallRequest, RememberRequest
from mnemonist.settings import Paths
from mnemonist.store.postgres.copy import _tables
from mnemonist.store.postgres.database import PostgresDatabase


def _fill(home: Path) -> dict[str, str]:
    with open_memory(home) as d:
        s = d.service
        ids = {
            "plain": s.memories.remember(RememberRequest(
                content="The staging database runs on port 5433",
                project="ops"))["id"],
            "old": s.memories.remember(RememberRequest(
                content="On-call rotation changes on Mondays",
                project="ops", key="rotation"))["id"],
            "new": s.memories.remember(RememberRequest(
                content="On-call rotation changes on Wednesdays",
                project="ops", key="rotation"))["id"],
            "private": s.memories.remember(RememberRequest(
                content="My laptop's disk key is in 1Password",
                agent_id="agent-a"))["id"],
            "gone": s.memories.remember(RememberRequest(
                content="The old wiki lives at wiki.example",
                project="ops"))["id"],
        }
        s.memories.forget(ForgetRequest(mode="execute", ids=[ids["gone"]], reason="wiki retired"))
        assert s.flush(120)
    return ids


def _rows(conn, table: str, cols: list[str]) -> list[tuple]:
    out = []
    for row in conn.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY rowid"):
        out.append(tuple(bytes(v) if isinstance(v, memoryview) else v for v in row))
    return out


def test_a_sqlite_home_is_copied_losslessly_and_served(postgres_url: str, tmp_path: Path
                                                       ) -> None:
    home = tmp_path / "home"
    ids = _fill(home)
    result = CliRunner().invoke(cli, ["migrate", "--to", postgres_url, "--home", str(home)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["memories"] == 5
    src = sqlite3.connect(Paths(home).database)
    db = PostgresDatabase(postgres_url)
    try:
        for table in _tables(src):
            cols = [r[1] for r in src.execute(f"PRAGMA table_info({table})")]
            assert _rows(db.reader(), table, cols) == _rows(src, table, cols), table
    finally:
        db.close()
        src.close()
    again = CliRunner().invoke(cli, ["migrate", "--to", postgres_url, "--home", str(home)])
    assert again.exit_code == 1 and "already holds memories" in again.output
    with open_memory(tmp_path / "team", {"storage": {"url": postgres_url}}) as d:
        got = d.service.reads.recall(RecallRequest(query="on-call rotation", project="ops"))
        assert [r["id"] for r in got["results"]] == [ids["new"]]
        meaning = d.service.reads.recall(RecallRequest(query="which port does staging's DB use?",
                                                             project="ops"))
        assert meaning["results"][0]["id"] == ids["plain"]
        assert meaning["results"][0]["scores"]["vector"] > 0
        made = d.service.memories.remember(RememberRequest(
            content="A memory written after the move",
                     project="ops"))
        assert made["created"] is True  # the identity sequence continues after the copy


def test_migrate_refuses_while_the_daemon_runs(postgres_url: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_memory(home):
        result = CliRunner().invoke(cli, ["migrate", "--to", postgres_url, "--home", str(home)])
    assert result.exit_code == 1 and "stop it first" in result.output


def test_migrate_refuses_a_url_that_is_not_postgresql(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["migrate", "--to", "sqlite:///x.db",
                                      "--home", str(tmp_path)])
    assert result.exit_code == 1 and "postgresql://" in result.output
