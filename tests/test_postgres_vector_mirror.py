"""The vector leg on PostgreSQL from memory (search/pg_vector_mirror.py): each daemon's own
copy of the vectors follows every daemon's commits through LISTEN/NOTIFY, is built again after
the listener lost its connection, and ranks as pgvector's exact scan does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mnemonist.daemon import open_memory
from mnemonist.model.requests import (
    DeleteRequest,
    MemoryPatch,
    RecallRequest,
    RememberRequest,
)
from mnemonist.search.pg_vector_mirror import MirroredVectorIndex
from mnemonist.store.postgres.vectors import PgVectorIndex
from pipeline_helpers import wait_for

TEXTS = ["Invoices are paid within thirty days",
         "The build server runs Debian 12",
         "Lunch is served at noon in the atrium",
         "Passwords rotate every ninety days"]


def _open(home: Path, url: str, vectors: str = "memory") -> Any:
    return open_memory(home, {"storage": {"url": url},
                              "search": {"postgres_vectors": vectors}})


def _wait(check: Callable[[], Any]) -> Any:
    """`check`'s first true answer (`pipeline_helpers.wait_for`), or its last."""
    return wait_for(check, 60.0)


def _mirror(svc: Any) -> MirroredVectorIndex:
    index = svc.core.index
    assert isinstance(index, MirroredVectorIndex), type(index)
    return index


def _seq(svc: Any, memory_id: str) -> int:
    return svc.core.db.reader().execute("SELECT seq FROM memories WHERE id = ?",
                                   (memory_id,)).fetchone()[0]


def _held(svc: Any) -> set[int]:
    memory = _mirror(svc).memory
    return set() if memory is None else {int(s) for s in memory._seqs[: len(memory)]}


def test_two_daemons_keep_their_vector_copies_in_step(postgres_url: str,
                                                      tmp_path: Path) -> None:
    with _open(tmp_path / "a", postgres_url) as a, _open(tmp_path / "b", postgres_url) as b:
        mine, theirs = a.service, b.service
        made = [mine.memories.remember(RememberRequest(content=t, project=f"p{i % 2}"))
                for i, t in enumerate(TEXTS)]
        assert mine.flush(120)
        seqs = {_seq(mine, m["id"]) for m in made}
        assert _held(mine) == seqs  # its own: with their commits
        assert _wait(lambda: _held(theirs) == seqs), _mirror(theirs).status()
        assert _mirror(theirs).state == "ready"

        query = theirs.core.embed_query("which operating system is on the CI machine?")
        mirror = _mirror(theirs)
        from_memory = mirror.search(query, 3)
        from_database = mirror.database.search(query, 3)
        assert [s for s, _ in from_memory] == [s for s, _ in from_database]
        assert from_memory[0][1] == pytest.approx(from_database[0][1], abs=1e-5)
        only_p1 = mirror.search(query, 4, project="p1", filter_project=True)
        assert {s for s, _ in only_p1} == {_seq(mine, made[1]["id"]), _seq(mine, made[3]["id"])}

        # a deletion, a move to another project: the other daemon's copy follows
        mine.memories.delete(made[0]["id"], DeleteRequest(reason="paid"))
        dropped = _seq(mine, made[0]["id"])
        assert _wait(lambda: dropped not in _held(theirs))
        moved = _seq(mine, made[2]["id"])
        mine.memories.patch(made[2]["id"], MemoryPatch(project="p1", reason="moved"))
        assert _wait(lambda: moved in {s for s, _ in _mirror(theirs).search(
            query, 4, project="p1", filter_project=True)})

        # a change neither daemon made (a third writer, straight in SQL): both follow
        gone = _seq(mine, made[1]["id"])
        with psycopg.connect(postgres_url, autocommit=True) as other:
            other.execute("UPDATE memories SET is_deleted = 1 WHERE seq = %s", (gone,))
        assert _wait(lambda: gone not in _held(mine) and gone not in _held(theirs))
        out = theirs.reads.recall(RecallRequest(query="build server operating system"))
        assert all(r["id"] != made[1]["id"] for r in out["results"])


def test_a_listener_that_reconnects_builds_the_copy_again(postgres_url: str,
                                                          tmp_path: Path) -> None:
    """Notifications sent while the listener was away are lost: the copy is built again from
    the table, with what changed meanwhile."""
    with _open(tmp_path / "a", postgres_url) as a, _open(tmp_path / "b", postgres_url) as b:
        first = a.service.memories.remember(RememberRequest(content=TEXTS[0]))
        assert a.service.flush(120) and b.service.flush(120)
        mirror = _mirror(b.service)
        assert _wait(lambda: _seq(a.service, first["id"]) in _held(b.service))
        builds = mirror.builds
        listener = b.service.core.changes
        gaps = listener.gaps
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (listener.pid,))
        later = a.service.memories.remember(RememberRequest(content=TEXTS[1]))
        assert a.service.flush(120)
        assert _wait(lambda: listener.gaps > gaps)
        assert _wait(lambda: mirror.builds > builds and mirror.state == "ready")
        assert _wait(lambda: _seq(a.service, later["id"]) in _held(b.service))


def test_recall_ranks_as_with_pgvector(postgres_url: str, tmp_path: Path) -> None:
    """A daemon answering from its copy and one answering from pgvector, on one database,
    return the same memories in the same order."""
    with _open(tmp_path / "a", postgres_url) as a, \
            _open(tmp_path / "b", postgres_url, "database") as b:
        for text in TEXTS:
            a.service.memories.remember(RememberRequest(content=text))
        assert a.service.flush(120) and b.service.flush(120)
        assert isinstance(b.service.core.index, PgVectorIndex)
        assert _mirror(a.service).memory is not None
        for query in ("when are invoices paid", "what runs on the build server",
                      "password rotation policy"):
            mine = a.service.reads.recall(RecallRequest(query=query, limit=4))["results"]
            theirs = b.service.reads.recall(RecallRequest(query=query, limit=4))["results"]
            assert [r["id"] for r in mine] == [r["id"] for r in theirs], query


def test_a_failed_build_is_retried_and_the_database_answers_meanwhile() -> None:
    """The copy's thread survives a failing store: the database answers, the build comes
    round again and the seqs notified meanwhile are not lost."""
    import numpy as np

    from mnemonist.search.vector_index import VectorIndex
    from mnemonist.store.loop_health import LoopHealth

    class Database:
        dimensions = 2
        precision = "pgvector"

        def search(self, query: Any, k: int, **filters: Any) -> list[tuple[int, float]]:
            return [(99, 1.0)]

        def __len__(self) -> int:
            return 1

    attempts: list[int] = []
    stored = {1: (None, np.array([1.0, 0.0], dtype=np.float32)),
              2: (None, np.array([0.0, 1.0], dtype=np.float32))}

    def build() -> VectorIndex:
        attempts.append(1)
        if len(attempts) == 1:
            raise psycopg.OperationalError("server closed the connection")
        index = VectorIndex(2)
        index.add(1, stored[1][1])
        return index

    health = LoopHealth(max_delay_s=0.1)
    mirror = MirroredVectorIndex(Database(), build,
                                 lambda seqs: {s: stored[s] for s in seqs if s in stored},
                                 name="test", health=health)
    assert mirror.search(np.array([1.0, 0.0]), 1) == [(99, 1.0)]  # the database, meanwhile
    mirror.start()
    try:
        mirror.gap()
        mirror.changed([2])
        assert mirror.wait_ready(30)
        assert len(attempts) == 2 and mirror.builds == 1
        assert sorted(s for s, _ in mirror.search(np.array([0.6, 0.8]), 2)) == [1, 2]
        assert health.retrying() == {}
    finally:
        mirror.stop()
