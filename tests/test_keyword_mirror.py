"""The keyword mirror: an in-memory copy of the context keyword index that must rank exactly
as FTS5 does (same rows, same scores, ties aside), follow every commit, and step aside
whenever it is not caught up."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from mnemonist.daemon import open_memory
from mnemonist.model.requests import (
    ForgetRequest,
    ImportRequest,
    RecallFilters,
    RecallRequest,
    RememberRequest,
)
from mnemonist.search import keyword, keyword_mirror, keyword_mirror_keeper
from mnemonist.search.filters import where_clause
from mnemonist.search.fts_words import FtsWords
from mnemonist.search.keyword_mirror import KeywordMirror
from mnemonist.text.tokens import fts_match_query, fts_phrase_query, query_phrases

TABLE = "memories_ctx_fts"


def fts_scores(conn, match: str, k: int) -> list[float]:
    """FTS5's own ranking of every row (no filter: every row of these stores is live)."""
    ranked = conn.execute(f"SELECT rank FROM {TABLE} WHERE {TABLE} MATCH ? ORDER BY rank"
                          " LIMIT ?", (match, k)).fetchall()
    return [round(r[0], 9) for r in ranked]


def mirror_scores(mirror: KeywordMirror, terms: list[str], k: int) -> list[float]:
    keys = mirror.keys(terms)
    assert keys is not None
    return [round(s, 9) for _, s in mirror.top(keys, k)]


def loaded(conn) -> KeywordMirror:
    mirror = KeywordMirror()
    mirror.load(conn.execute("SELECT seq, text FROM memory_context ORDER BY seq"))
    return mirror


def assert_ranks_as_fts5(conn, mirror: KeywordMirror, queries: list[str]) -> None:
    for q in queries:
        for k in (5, 20, 200):
            assert mirror_scores(mirror, keyword.query_terms(q), k) == \
                fts_scores(conn, fts_match_query(q), k), q
            if fts_phrase_query(q) is not None:
                assert mirror_scores(mirror, query_phrases(q), k) == \
                    fts_scores(conn, fts_phrase_query(q), k), q


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """600 synthetic agent memories, the mirror off (tests build their own)."""
    from mnemonist.bench.synthetic import SyntheticCorpus

    corpus = SyntheticCorpus(5)
    home = tmp_path_factory.mktemp("keyword-mirror")
    overrides = {"embedding": {"provider": "none"}, "search": {"keyword_mirror": "off"}}
    with open_memory(home, overrides) as daemon:
        items = [RememberRequest(**m.request_body()) for m in corpus.generate(600)]
        daemon.service.carry.import_memories(ImportRequest(items=items))
        yield daemon.service, [q.text for q in corpus.queries(40, 600)]


def test_words_become_the_tokens_fts5_makes():
    text = ("Café naïve RÉSUMÉ running runs ran; v3.5.5 snake_case_name e-mail O'Brien's "
            "日本語 テスト ｆｕｌｌｗｉｄｔｈ Ωmega ﬁle x²")
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    db.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (text,))
    expected = [r[0] for r in db.execute("SELECT term FROM v ORDER BY offset")]
    words = FtsWords()
    ids = words.encode(text)
    names = {i: t for t, i in words.token_ids.items()}
    assert [names[i] for i in ids] == expected
    assert words.encode_many([text, "Running café"]) == [ids, words.encode("run cafe")]


def test_the_mirror_ranks_every_query_as_fts5_does(synthetic):
    svc, queries = synthetic
    conn = svc.core.db.reader()
    assert_ranks_as_fts5(conn, loaded(conn), queries)


def test_changes_leave_it_ranking_as_fts5_does(synthetic, monkeypatch, tmp_path):
    """Updates, deletions and new rows applied in many small steps (small segments merged,
    mostly dead ones rebuilt) rank as FTS5 over the same rows does."""
    monkeypatch.setattr(keyword_mirror, "SEGMENT_DOCS", 64)
    svc, queries = synthetic
    rows = svc.core.db.reader().execute(
        "SELECT seq, text FROM memory_context ORDER BY seq").fetchall()
    db = sqlite3.connect(tmp_path / "copy.db")
    db.execute(f"CREATE VIRTUAL TABLE {TABLE} USING fts5(text, tokenize='porter unicode61')")
    db.executemany(f"INSERT INTO {TABLE}(rowid, text) VALUES (?, ?)", rows)
    mirror = KeywordMirror()
    mirror.load(rows)
    assert mirror.stats()["segments"] > 5
    seqs = [seq for seq, _ in rows]
    for step in range(0, 240, 12):
        changes: list[tuple[int, str | None]] = []
        for seq in seqs[step : step + 6]:  # rewritten
            text = f"deploy checklist for the coral orchid service, revision {step}"
            db.execute(f"UPDATE {TABLE} SET text = ? WHERE rowid = ?", (text, seq))
            changes.append((seq, text))
        for seq in seqs[step + 6 : step + 12]:  # removed
            db.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (seq,))
            changes.append((seq, None))
        new = 10_000 + step
        text = f"new memory {step}: the urgent patch for coral orchid shipped"
        db.execute(f"INSERT INTO {TABLE}(rowid, text) VALUES (?, ?)", (new, text))
        changes.append((new, text))
        mirror.apply(changes)
    assert len(mirror) == db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]
    assert mirror.stats()["segments"] < 40  # the small ones merged
    assert_ranks_as_fts5(db, mirror, [*queries[:15], "urgent patch coral orchid revision"])


def test_a_word_of_three_tokens_is_left_to_fts5(synthetic):
    svc, _ = synthetic
    mirror = loaded(svc.core.db.reader())
    assert mirror.keys(["deploy", "coral orchid"]) is not None
    assert mirror.keys(["a.b.c"]) is None  # three tokens: a phrase the mirror cannot rank


def test_the_writer_reports_committed_context_rows_only(tmp_path):
    with open_memory(tmp_path, {"embedding": {"provider": "none"},
                                "search": {"keyword_mirror": "off"}}) as daemon:
        db = daemon.service.core.db
        seen: list[list[int]] = []
        db.watch_context(seen.append)
        daemon.service.memories.remember(RememberRequest(content="first memory about the heron"))
        assert len(seen) == 1 and len(seen[0]) == 1
        with pytest.raises(RuntimeError), db.write_tx() as conn:
            conn.execute("UPDATE memory_context SET text = 'changed' WHERE seq = ?", seen[0])
            raise RuntimeError("rolled back")
        with db.write_tx() as conn:
            conn.execute("UPDATE memories SET importance = 0.9")  # no context row
        assert len(seen) == 1
        with db.write_tx() as conn:
            conn.execute("DELETE FROM memory_context WHERE seq = ?", seen[0])
        assert seen[1] == seen[0]


def _started(tmp_path, mode: str = "on"):
    return open_memory(tmp_path, {"embedding": {"provider": "none"},
                                  "search": {"keyword_mirror": mode}})


def _fts_context(conn, query: str, k: int = 20) -> list[tuple[int, float]]:
    return keyword.keyword_search(conn, query, None, k, index="context")


def test_a_started_daemon_follows_every_write(tmp_path):
    with _started(tmp_path) as daemon:
        svc = daemon.service
        keeper = svc.core.searcher.keyword_mirror
        assert keeper is not None and svc.flush(60)
        assert keeper.usable() is not None and len(keeper.mirror) == 0
        first = svc.memories.remember(RememberRequest(content="The heron nests by the quarry lake"))
        svc.memories.remember(RememberRequest(content="Herons fish at dawn near the quarry"))
        mirror = keeper.usable()  # the two rows are applied inside the recall's call
        assert mirror is not None and len(mirror) == 2
        conn = svc.core.db.reader()
        found = keyword.keyword_search(conn, "heron quarry", None, 10, index="context",
                                       mirror=mirror)
        assert [s for _, s in found] == [s for _, s in _fts_context(conn, "heron quarry", 10)]
        assert len(found) == 2
        with svc.core.db.write_tx() as wconn:  # as a purge does: the row leaves the mirror
            wconn.execute("DELETE FROM memory_context WHERE seq = "
                          "(SELECT seq FROM memories WHERE id = ?)", (first["id"],))
        mirror = keeper.usable()
        assert mirror is not None and len(mirror) == 1
        out = svc.reads.recall(RecallRequest(query="heron quarry"))
        assert out["results"]


def test_far_behind_it_steps_aside_until_caught_up(tmp_path, monkeypatch):
    monkeypatch.setattr(keyword_mirror_keeper, "INLINE", 5)
    monkeypatch.setattr(keyword_mirror_keeper, "QUIET_S", 0.05)
    with _started(tmp_path) as daemon:
        svc = daemon.service
        keeper = svc.core.searcher.keyword_mirror
        assert svc.flush(60)
        keeper._apply_lock.acquire()  # hold the keeper's thread back
        try:
            svc.carry.import_memories(ImportRequest(items=[
                      RememberRequest(content=f"kestrel sighting number {i} over the ridge")
                      for i in range(30)]))
            assert keeper.usable() is None  # 30 rows behind: the keyword leg uses FTS5
            out = svc.reads.recall(RecallRequest(query="kestrel ridge", limit=5))
            assert len(out["results"]) == 5
        finally:
            keeper._apply_lock.release()
        assert svc.flush(60)
        mirror = keeper.usable()
        assert mirror is not None and len(mirror) == 30
        assert keeper.builds == 2  # 30 changed rows against 0 held: built again
        keeper._apply_lock.acquire()
        try:  # 10 more: behind, but less than it holds: caught up, not rebuilt
            svc.carry.import_memories(ImportRequest(items=[
                      RememberRequest(content=f"kestrel ridge roost {i} at dusk") for i in range(
                          10)]))
            assert keeper.usable() is None
        finally:
            keeper._apply_lock.release()
        assert svc.flush(60)
        mirror = keeper.usable()
        assert mirror is not None and len(mirror) == 40 and keeper.builds == 2
        conn = svc.core.db.reader()
        found = keyword.keyword_search(conn, "kestrel ridge", None, 10, index="context",
                                       mirror=mirror)
        assert [s for _, s in found] == [s for _, s in _fts_context(conn, "kestrel ridge", 10)]


def test_filters_rejecting_its_best_rows_fall_to_the_next(tmp_path):
    """Forgotten memories keep their context rows until purged: the mirror ranks them, the
    filters drop them, and the mirror is asked for more."""
    with _started(tmp_path) as daemon:
        svc = daemon.service
        svc.carry.import_memories(ImportRequest(items=[
                  RememberRequest(content=f"zebra zebra zebra crossing {i}", project="gone")
                  for i in range(300)] + [
                  RememberRequest(content=f"one zebra and the weather, day {i}", project="kept")
                  for i in range(20)]))
        preview = svc.memories.forget(ForgetRequest(project="gone", limit=300))
        svc.memories.forget(ForgetRequest(project="gone", limit=300, mode="execute", reason="test",
                                          confirm_token=preview["confirmToken"]))
        assert svc.flush(60)
        mirror = svc.core.searcher.keyword_mirror.usable()
        assert mirror is not None
        conn = svc.core.db.reader()
        found = keyword.keyword_search(conn, "zebra", None, 10, index="context", mirror=mirror)
        assert [s for _, s in found] == [s for _, s in _fts_context(conn, "zebra", 10)]
        kept = {r[0] for r in conn.execute("SELECT seq FROM memories WHERE project = 'kept'")}
        assert len(found) == 10 and {s for s, _ in found} <= kept


@pytest.mark.parametrize("among", [20_000, 5])
def test_a_narrow_filter_ranks_among_the_rows_it_allows(tmp_path, monkeypatch, among):
    """A filter beyond "live and current" (a project, a time window): the mirror ranks among
    the rows it allows (or, past `MIRROR_AMONG` of them, pages through its best rows), with
    the scores of FTS5's query joined to the filter."""
    monkeypatch.setattr(keyword, "MIRROR_AMONG", among)
    with _started(tmp_path) as daemon:
        svc = daemon.service
        svc.carry.import_memories(ImportRequest(items=[
                  RememberRequest(content=f"zebra zebra crossing {i}", project=f"p{i % 3}")
                  for i in range(90)]))
        assert svc.flush(60)
        mirror = svc.core.searcher.keyword_mirror.usable()
        conn = svc.core.db.reader()
        for filters in (RecallFilters(project="p1"), RecallFilters(project="nowhere")):
            found = keyword.keyword_search(conn, "zebra crossing 7", filters, 10,
                                           index="context", mirror=mirror)
            fts = keyword.keyword_search(conn, "zebra crossing 7", filters, 10, index="context")
            assert [s for _, s in found] == [s for _, s in fts]
            phrased = keyword.phrase_search(conn, "zebra crossing", filters, 10,
                                            index="context", mirror=mirror)
            assert [s for _, s in phrased] == \
                [s for _, s in keyword.phrase_search(conn, "zebra crossing", filters, 10,
                                                     index="context")]
        assert len(found) == 0 and len(fts) == 0
        p1 = keyword.keyword_search(conn, "zebra", RecallFilters(project="p1"), 50,
                                    index="context", mirror=mirror)
        assert len(p1) == 30


def test_auto_waits_for_a_large_store(tmp_path):
    with _started(tmp_path, "auto") as daemon:
        keeper = daemon.service.core.searcher.keyword_mirror
        daemon.service.memories.remember(RememberRequest(content="a small store"))
        assert daemon.service.flush(60)
        assert keeper.state == "waiting" and keeper.usable() is None
        assert daemon.service.health.status()["keyword_mirror"]["state"] == "waiting"


def test_a_build_steps_aside_while_an_import_runs(tmp_path, monkeypatch):
    """Writes arriving mid-build make it wait for them to pause; what they changed (new rows
    past the read point, a deleted row before it) is in the finished mirror."""
    with _started(tmp_path, "off") as daemon:
        daemon.service.carry.import_memories(ImportRequest(items=[
            RememberRequest(content=f"osprey count {i} on the estuary") for i in range(40)]))
    monkeypatch.setattr(keyword_mirror_keeper, "CHUNK", 10)
    monkeypatch.setattr(keyword_mirror_keeper, "INLINE", 8)
    monkeypatch.setattr(keyword_mirror_keeper, "BUILD_QUIET_S", 0.1)
    monkeypatch.setattr(keyword_mirror_keeper, "QUIET_S", 0.05)
    service_ready, steps = threading.Event(), []
    holder: dict = {}
    original = keyword_mirror_keeper.KeywordMirrorKeeper._step_aside

    def writes_mid_build(self, read_to: int) -> None:
        if not steps:  # after the first chunk: an import, and a purge of a row already read
            assert service_ready.wait(30)
            svc = holder["svc"]
            svc.carry.import_memories(ImportRequest(items=[
                      RememberRequest(content=f"osprey dive {i} at the estuary mouth")
                      for i in range(30)]))
            with svc.core.db.write_tx() as conn:
                conn.execute("DELETE FROM memory_context WHERE seq = ?", (read_to,))
        steps.append(read_to)
        original(self, read_to)

    monkeypatch.setattr(keyword_mirror_keeper.KeywordMirrorKeeper, "_step_aside",
                        writes_mid_build)
    with _started(tmp_path, "on") as daemon:
        svc = daemon.service
        holder["svc"] = svc
        service_ready.set()
        assert svc.flush(60)
        keeper = svc.core.searcher.keyword_mirror
        assert keeper.paused == 1 and keeper.builds == 1
        mirror = keeper.usable()
        assert mirror is not None and len(mirror) == 40 + 30 - 1
        conn = svc.core.db.reader()
        for query in ("osprey estuary", "osprey dive mouth", "count"):
            found = keyword.keyword_search(conn, query, None, 100, index="context",
                                           mirror=mirror)
            assert [s for _, s in found] == [s for _, s in _fts_context(conn, query, 100)]
        status = svc.health.status()["keyword_mirror"]
        assert status["build_pauses"] == 1
        assert status["build_waited_s"] >= 0.1  # at least one quiet spell, counted apart
        assert keeper.built_in_s is not None and keeper.built_in_s >= 0


def test_a_broad_filter_is_answered_from_the_best_rows(tmp_path, monkeypatch):
    """A project or a scope often holds most of a store, and the hooks recall within one on
    every prompt: the mirror's best rows are checked against it first, and the rows it allows
    are read only when few of those pass (a small project) or the filter is of a narrow kind
    (a time). Every way gives the scores of FTS5's query joined to the filter."""
    from mnemonist.store import fts as fts_store

    reads: list[int] = []
    real = fts_store.filtered_seqs

    def counted(conn, where, args, limit):
        reads.append(limit)
        return real(conn, where, args, limit)

    monkeypatch.setattr(fts_store, "filtered_seqs", counted)
    monkeypatch.setattr(keyword, "FILTER_PAGE", 20)  # pages of 20: a few hundred rows suffice
    with _started(tmp_path) as daemon:
        svc = daemon.service
        svc.carry.import_memories(ImportRequest(items=[
            RememberRequest(content=f"zebra crossing number {i} near the school",
                            project="big" if i % 50 else "small")
            for i in range(500)]))
        assert svc.flush(60)
        mirror = svc.core.searcher.keyword_mirror.usable()
        assert mirror is not None
        conn = svc.core.db.reader()
        cases = [(RecallFilters(project="big"), 0), (RecallFilters(scope=["big"]), 0),
                 (RecallFilters(project="small"), 1),
                 (RecallFilters(project="big", since="2000-01-01T00:00:00Z"), 1)]
        for filters, expected_reads in cases:
            reads.clear()
            found = keyword.keyword_search(conn, "zebra school", filters, 10,
                                           index="context", mirror=mirror)
            assert len(reads) == expected_reads, filters
            joined = keyword.keyword_search(conn, "zebra school", filters, 10, index="context")
            assert [s for _, s in found] == [s for _, s in joined], filters
            assert len(found) == 10
            where, args = where_clause(filters)
            assert fts_store.passing_seqs(conn, [s for s, _ in found], where, args) == \
                {s for s, _ in found}
