"""docs/upgrading.md's promises: migrations run at start, in order, once; a database that a
newer mnemonist migrated is refused, in one line, and left as it was."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import free_port
from mnemonist.daemon import open_memory
from mnemonist.model.requests import RememberRequest
from mnemonist.store.migrations import MIGRATIONS, SchemaTooNew

NO_MODEL = {"embedding": {"provider": "none"}}
pytestmark = pytest.mark.sqlite_only("reads and edits the SQLite file's schema_migrations")


def _database(home: Path) -> Path:
    return home / "memory" / "memories.db"


def _dump(home: Path) -> str:
    """The database's content (schema and rows), whatever its pages and WAL look like."""
    with sqlite3.connect(_database(home)) as conn:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()


def _versions(home: Path) -> list[int]:
    with sqlite3.connect(_database(home)) as conn:
        return [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]


def test_a_new_home_is_migrated_to_every_known_version(tmp_path: Path) -> None:
    with open_memory(tmp_path, NO_MODEL) as d:
        d.service.memories.remember(RememberRequest(content="kept across the upgrade"))
    assert _versions(tmp_path) == sorted(m.version for m in MIGRATIONS)
    with open_memory(tmp_path, NO_MODEL) as d:  # a second start applies nothing again
        assert d.service.health.status()["memories"]["live"] == 1
    assert _versions(tmp_path) == sorted(m.version for m in MIGRATIONS)


def test_a_schema_newer_than_this_code_is_refused_and_left_alone(tmp_path: Path) -> None:
    with open_memory(tmp_path, NO_MODEL) as d:
        d.service.memories.remember(RememberRequest(content="written by the newer version"))
    newest = max(m.version for m in MIGRATIONS)
    with sqlite3.connect(_database(tmp_path)) as conn:
        conn.execute("INSERT INTO schema_migrations (version, name, applied_at)"
                     " VALUES (?, 'from a newer mnemonist', '2030-01-01T00:00:00Z')",
                     (newest + 1,))
    before = _dump(tmp_path)
    with pytest.raises(SchemaTooNew, match=f"schema {newest + 1}, newer than this mnemonist"):
        open_memory(tmp_path, NO_MODEL)
    # the daemon says so in one line and exits 1; its content is untouched
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(NO_MODEL))
    env = {k: v for k, v in os.environ.items() if k != "MNEMONIST_TOKEN"}
    env["MNEMONIST_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", "from mnemonist.cli.main import cli; cli()", "serve", "--port",
         str(free_port())], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "newer than this mnemonist" in done.stderr and "docs/upgrading.md" in done.stderr
    assert _dump(tmp_path) == before
