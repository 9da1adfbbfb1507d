"""The keyword mirror on PostgreSQL: each daemon's in-memory copy of the context keyword index
follows its own commits with the commit itself and other daemons' through LISTEN/NOTIFY, and
ranks the keyword leg as it does on SQLite (FTS5's tokens and BM25)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mnemonist.daemon import open_memory
from mnemonist.model.requests import RecallRequest, RememberRequest
from mnemonist.search import keyword
from pipeline_helpers import wait_for


def _open(home: Path, url: str, mode: str = "on") -> Any:
    return open_memory(home, {"storage": {"url": url}, "embedding": {"provider": "none"},
                              "search": {"keyword_mirror": mode}})


def _wait(check: Callable[[], Any]) -> Any:
    """`check`'s first true answer (`pipeline_helpers.wait_for`), or its last."""
    return wait_for(check, 30.0)


def test_the_writer_reports_its_committed_context_rows_with_the_commit(
    postgres_url: str, tmp_path: Path,
) -> None:
    with _open(tmp_path, postgres_url, "off") as daemon:
        db = daemon.service.core.db
        seen: list[list[int]] = []
        db.watch_context(seen.append)
        daemon.service.memories.remember(RememberRequest(content="first memory about the heron"))
        assert len(seen) == 1 and len(seen[0]) == 1  # before remember returned
        with pytest.raises(RuntimeError), db.write_tx() as conn:
            conn.execute("UPDATE memory_context SET text = 'changed' WHERE seq = ?", seen[0])
            raise RuntimeError("rolled back")
        with db.write_tx() as conn:
            conn.execute("UPDATE memories SET importance = 0.9")  # no context row
        assert len(seen) == 1
        with db.write_tx() as conn:
            conn.execute("DELETE FROM memory_context WHERE seq = ?", seen[0])
        assert seen[1] == seen[0]


def _context(svc: Any, query: str, mirror: Any = None) -> list[int]:
    found = keyword.keyword_search(svc.core.db.reader(), query, None, 10, index="context",
                                   mirror=mirror)
    return [seq for seq, _ in found]


def test_two_daemons_keep_their_mirrors_in_step(postgres_url: str, tmp_path: Path) -> None:
    with _open(tmp_path / "a", postgres_url) as a, _open(tmp_path / "b", postgres_url) as b:
        mine, theirs = a.service, b.service
        for svc in (mine, theirs):
            assert svc.flush(60) and svc.core.searcher.keyword_mirror.usable() is not None
        first = mine.memories.remember(RememberRequest(
            content="The heron nests by the quarry lake"))
        mine.memories.remember(RememberRequest(content="Herons fish at dawn near the quarry"))
        # its own writes: in its mirror as the remember returns
        own = mine.core.searcher.keyword_mirror.usable()
        assert own is not None and len(own) == 2
        ranked = _context(mine, "heron quarry", own)
        assert len(ranked) == 2
        # the other daemon's: within moments, through the listener
        other = _wait(lambda: (m := theirs.core.searcher.keyword_mirror.usable()) is not None
                      and len(m) == 2 and m)
        assert other, theirs.core.searcher.keyword_mirror.status()
        assert _context(theirs, "heron quarry", other) == ranked
        out = theirs.reads.recall(RecallRequest(query="where does the heron nest"))
        assert out["results"][0]["id"] == first["id"]
        # a deletion reaches both
        with mine.core.db.write_tx() as conn:
            conn.execute("DELETE FROM memory_context WHERE seq ="
                         " (SELECT seq FROM memories WHERE id = ?)", (first["id"],))
        assert len(mine.core.searcher.keyword_mirror.usable()) == 1
        assert _wait(lambda: (m := theirs.core.searcher.keyword_mirror.usable()) is not None
                     and len(m) == 1)


def test_a_listener_that_reconnects_builds_the_mirror_again(
    postgres_url: str, tmp_path: Path,
) -> None:
    """Notifications sent while the listener was away are lost: the mirror is rebuilt from
    the table, with what changed meanwhile."""
    with _open(tmp_path / "a", postgres_url) as a, _open(tmp_path / "b", postgres_url) as b:
        keeper = b.service.core.searcher.keyword_mirror
        assert b.service.flush(60) and keeper.usable() is not None
        builds = keeper.builds
        listener = b.service.core.changes
        assert listener.listening.wait(30)
        gaps = listener.gaps
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (listener.pid,))
        a.service.memories.remember(RememberRequest(
            content="Kestrels hover over the ridge at dusk"))
        assert _wait(lambda: listener.gaps > gaps)
        mirror = _wait(lambda: keeper.builds > builds and keeper.usable())
        assert mirror is not None and len(mirror) == 1
        assert len(_context(b.service, "kestrel ridge", mirror)) == 1
