"""The ranking rows recall keeps between recalls (store/ranking_cache.py): exact as the table.

Real daemons on real SQLite files: every commit's rows leave the cache before the write's
caller gets its answer, a read racing a commit stores nothing, the filters are always the
table's, and recall with the cache answers what it answers without it (the real embedding
model)."""

from __future__ import annotations

import pytest

from mnemonist.daemon import open_memory
from mnemonist.model.requests import (
    DeleteRequest,
    MemoryPatch,
    RecallRequest,
    RememberRequest,
)
from mnemonist.search.filters import where_clause
from mnemonist.store import memories, ranking_cache
from mnemonist.store.ranking_cache import RankingCache

KEYWORD_ONLY = {"embedding": {"provider": "none"}}


def _seq(svc, memory_id: str) -> int:
    return svc.core.db.reader().execute("SELECT seq FROM memories WHERE id = ?",
                                        (memory_id,)).fetchone()[0]


def test_the_writer_reports_the_rows_each_commit_changed(tmp_path) -> None:
    with open_memory(tmp_path, KEYWORD_ONLY) as daemon:
        db = daemon.service.core.db
        with db.write_tx() as conn:
            conn.execute("CREATE TABLE notes (k TEXT PRIMARY KEY, v TEXT)")
        seen: list[list[str]] = []
        db.watch_rows("notes", "notes", "k", seen.append, update_of="v")
        with db.write_tx() as conn:
            conn.execute("INSERT INTO notes VALUES ('a', '1'), ('b', '2')")
        with pytest.raises(RuntimeError), db.write_tx() as conn:
            conn.execute("DELETE FROM notes")
            raise RuntimeError("rolled back: nothing reported")
        with db.write_tx() as conn:
            conn.execute("UPDATE notes SET v = '3' WHERE k = 'a'")
            conn.execute("UPDATE notes SET k = 'c' WHERE k = 'b'")  # not a change of `v`
        with db.write_tx() as conn:
            conn.execute("UPDATE notes SET k = 'd', v = '4' WHERE k = 'c'")  # both keys
            conn.execute("DELETE FROM notes WHERE k = 'a'")
        assert seen == [["a", "b"], ["a"], ["d", "c", "a"]]


def test_a_commit_drops_the_rows_it_changed_before_its_caller_is_answered(tmp_path) -> None:
    with open_memory(tmp_path, KEYWORD_ONLY) as daemon:
        svc = daemon.service
        cache = svc.core.searcher.ranking_cache
        assert isinstance(cache, RankingCache)  # a started SQLite service keeps one
        kept = svc.memories.remember(RememberRequest(content="the kiln fires at 1200 degrees"))
        other = svc.memories.remember(RememberRequest(content="glaze recipes live in the wiki"))
        seqs = [_seq(svc, kept["id"]), _seq(svc, other["id"])]
        conn = svc.core.db.reader()
        where, args = where_clause(None)
        first = cache.ranking_rows(conn, seqs, where, args)
        assert cache.ranking_rows(conn, seqs, where, args)[seqs[0]] is first[seqs[0]]  # held

        svc.memories.patch(kept["id"], MemoryPatch(importance=0.95, pinned=True,
                                                    reason="it matters"))
        now = cache.ranking_rows(conn, seqs, where, args)
        assert now[seqs[0]].importance == 0.95 and now[seqs[0]].pinned
        assert now[seqs[1]] is first[seqs[1]]  # a row no commit touched stays

        svc.memories.delete(other["id"], DeleteRequest(reason="gone"))
        assert set(cache.ranking_rows(conn, seqs, where, args)) == {seqs[0]}
        # a filter that lets deleted memories through reads the deleted row, not the old one
        rows = cache.ranking_rows(conn, seqs)
        assert rows[seqs[1]].is_deleted
        assert rows == {s: m for s, m in memories.ranking_rows(conn, seqs).items()}


def test_recall_counts_reach_the_next_recall(tmp_path) -> None:
    """The access boost reads `recall_count`: the counts a recall writes (a commit of their
    own, a moment later) reach the next recall's rows."""
    with open_memory(tmp_path, KEYWORD_ONLY) as daemon:
        svc = daemon.service
        made = svc.memories.remember(RememberRequest(content="the heron nests by the weir"))
        seq = _seq(svc, made["id"])
        conn = svc.core.db.reader()
        cache = svc.core.searcher.ranking_cache
        before = cache.ranking_rows(conn, [seq])[seq].recall_count
        assert svc.reads.recall(RecallRequest(query="heron weir"))["count"] == 1
        svc.core.access.flush()
        assert cache.ranking_rows(conn, [seq])[seq].recall_count == before + 1


def test_a_read_racing_a_commit_stores_nothing(tmp_path, monkeypatch) -> None:
    """The rows read before a commit and stored after its drop would be stale for good: the
    epoch the drop moves keeps them out."""
    with open_memory(tmp_path, KEYWORD_ONLY) as daemon:
        svc = daemon.service
        made = svc.memories.remember(RememberRequest(content="the ferry leaves at noon"))
        seq = _seq(svc, made["id"])
        conn = svc.core.db.reader()
        cache = RankingCache(svc.core.db)
        cache.start()
        real = memories.ranking_rows

        def read_then_commit(conn, seqs, where="1", args=None):
            rows = real(conn, seqs, where, args)
            with svc.core.db.write_tx() as w:  # lands between the read and the store
                w.execute("UPDATE memories SET importance = 0.11 WHERE seq = ?", (seq,))
            return rows

        monkeypatch.setattr(ranking_cache.memories, "ranking_rows", read_then_commit)
        stale = cache.ranking_rows(conn, [seq])[seq]
        monkeypatch.setattr(ranking_cache.memories, "ranking_rows", real)
        assert stale.importance != 0.11  # what the racing read saw
        assert cache.stats()["rows"] == 0
        assert cache.ranking_rows(conn, [seq])[seq].importance == 0.11


def test_it_holds_at_most_its_size_least_recently_used_out(tmp_path) -> None:
    with open_memory(tmp_path, KEYWORD_ONLY) as daemon:
        svc = daemon.service
        seqs = [_seq(svc, svc.memories.remember(
            RememberRequest(content=f"harbour log entry number {i} of the week"))["id"])
            for i in range(5)]
        conn = svc.core.db.reader()
        cache = RankingCache(svc.core.db, size=3)
        cache.start()
        cache.ranking_rows(conn, seqs[:3])
        cache.ranking_rows(conn, seqs[:1])  # the first is the most recently used now
        cache.ranking_rows(conn, seqs[3:])
        stats = cache.stats()
        assert stats["rows"] == 3 and stats["hits"] == 1 and stats["misses"] == 5
        cache.ranking_rows(conn, [seqs[0], seqs[1]])
        assert cache.stats()["hits"] == 2  # seqs[0] stayed, seqs[1] went


def test_recall_answers_the_same_with_and_without_it(tmp_path) -> None:
    texts = [f"{who} moved the {what} to {where} on {day}"
             for who in ("Ana", "Bo", "Cy") for what in ("backups", "queue", "cron jobs")
             for where, day in (("eu-north-1", "Monday"), ("us-east-2", "Friday"))]
    with open_memory(tmp_path) as daemon:
        svc = daemon.service
        for text in texts:
            svc.memories.remember(RememberRequest(content=text))
        assert svc.flush(120)
        svc.core.access.stop()  # no recall counts written: both ways rank the same rows
        searcher = svc.core.searcher
        cache = searcher.ranking_cache
        queries = ["where did Ana move the backups?", "what moved on Friday",
                   "cron jobs in us-east-2", "Bo queue"]
        for _ in range(2):  # the second round reads the rows from the cache
            for query in queries:
                request = RecallRequest(query=query, limit=8)
                searcher.ranking_cache = None
                try:
                    plain = svc.reads.recall(request)
                finally:
                    searcher.ranking_cache = cache
                cached = svc.reads.recall(request)
                assert cached["method"] == "hybrid" and cached["count"] > 0
                assert [(r["id"], r["score"]) for r in cached["results"]] == \
                    [(r["id"], r["score"]) for r in plain["results"]], query
        assert cache.stats()["hits"] > 0
