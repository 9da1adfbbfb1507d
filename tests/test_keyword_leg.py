"""The keyword leg ranks in FTS5 alone and filters the best matches afterwards: the same
memories, in the same order, as filtering inside the query, whatever the filters reject."""

from __future__ import annotations

import pytest

from mnemonist.daemon import open_memory
from mnemonist.model.requests import ForgetRequest, ImportRequest, RecallFilters, RememberRequest
from mnemonist.search import keyword
from mnemonist.search.filters import where_clause
from mnemonist.text.tokens import fts_match_query, fts_phrase_query

GONE = 300  # more than the first ranked page: the leg must read past it


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    home = tmp_path_factory.mktemp("keyword-leg")
    with open_memory(home, {"embedding": {"provider": "none"}}) as daemon:
        svc = daemon.service
        strong = [RememberRequest(content=f"zebra zebra zebra crossing number {i}",
                                  project="gone") for i in range(GONE)]
        weak = [RememberRequest(content=f"a note about one zebra and the weather, day {i}",
                                project="kept") for i in range(20)]
        svc.carry.import_memories(ImportRequest(items=strong + weak))
        preview = svc.memories.forget(ForgetRequest(project="gone", limit=GONE))
        svc.memories.forget(ForgetRequest(project="gone", limit=GONE, mode="execute",
                                          reason="test", confirm_token=preview["confirmToken"]))
        yield svc


def kept_seqs(svc) -> set[int]:
    conn = svc.core.db.reader()
    return {r[0] for r in conn.execute("SELECT seq FROM memories WHERE project = 'kept'")}


def joined(conn, query, filters, k, table="memories_fts"):
    where, args = where_clause(filters)
    return keyword._joined(conn, table, fts_match_query(query), where, args, k)


def test_forgotten_best_matches_give_way_to_live_ones(service):
    conn = service.core.db.reader()
    found = keyword.keyword_search(conn, "zebra", None, 10)
    assert len(found) == 10
    assert {seq for seq, _ in found} <= kept_seqs(service)
    assert found == joined(conn, "zebra", None, 10)


def test_all_live_matches_when_fewer_than_k(service):
    conn = service.core.db.reader()
    found = keyword.keyword_search(conn, "zebra weather", None, 100)
    assert {seq for seq, _ in found} == kept_seqs(service)
    assert found == joined(conn, "zebra weather", None, 100)


def test_selective_filters_run_inside_the_query(service):
    conn = service.core.db.reader()
    filters = RecallFilters(project="kept")
    assert keyword.selective(filters) and not keyword.selective(None)
    assert not keyword.selective(RecallFilters())
    found = keyword.keyword_search(conn, "zebra", filters, 5)
    assert len(found) == 5 and {seq for seq, _ in found} <= kept_seqs(service)


def test_context_index_agrees_with_the_joined_query(service):
    conn = service.core.db.reader()
    found = keyword.keyword_search(conn, "zebra day", None, 50, index="context")
    assert found and found == joined(conn, "zebra day", None, 50, table="memories_ctx_fts")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """600 synthetic agent memories (a small vocabulary: many words match many rows)."""
    from mnemonist.bench.synthetic import SyntheticCorpus

    corpus = SyntheticCorpus(5)
    home = tmp_path_factory.mktemp("keyword-pruning")
    with open_memory(home, {"embedding": {"provider": "none"}}) as daemon:
        items = [RememberRequest(**m.request_body()) for m in corpus.generate(600)]
        daemon.service.carry.import_memories(ImportRequest(items=items))
        yield daemon.service, [q.text for q in corpus.queries(60, 600)]


@pytest.mark.parametrize("index", ["content", "context"])
def test_pruned_top_k_is_the_exact_top_k(synthetic, monkeypatch, index):
    """With the budgets scaled down to this store, the shortcut answers most queries, and
    every answer has the scores of ranking every match."""
    from mnemonist.search import keyword_pruning

    monkeypatch.setattr(keyword_pruning, "RARE_ROWS", 40)
    monkeypatch.setattr(keyword_pruning, "PROBE", 30)
    monkeypatch.setattr(keyword_pruning, "ESSENTIAL_ROWS", 160)  # phrases
    passes: list[int] = []
    scored = keyword_pruning._scored

    def counted(*args):
        passes.append(len(args[3]))
        return scored(*args)

    monkeypatch.setattr(keyword_pruning, "_scored", counted)
    svc, queries = synthetic
    conn = svc.core.db.reader()
    table = keyword.INDEXES[index]
    answered = 0
    for q in queries:
        for k in (5, 20):
            full = keyword._ranked_then_filtered(conn, table, fts_match_query(q),
                                                 *where_clause(None), k)
            pruned = keyword_pruning.pruned_top(conn, table, keyword.query_terms(q), k)
            if pruned is not None:
                answered += 1
                assert [round(s, 9) for _, s in pruned] == [round(s, 9) for _, s in full], q
            found = keyword.keyword_search(conn, q, None, k, index=index)
            assert [round(s, 9) for _, s in found] == [round(s, 9) for _, s in full], q
            phrases = fts_phrase_query(q)
            if phrases is not None:  # the phrase query takes the same shortcut
                full = keyword._ranked_then_filtered(conn, table, phrases, *where_clause(None),
                                                     k)
                found = keyword.phrase_search(conn, q, None, k, index=index)
                assert [round(s, 9) for _, s in found] == [round(s, 9) for _, s in full], q
    assert answered >= len(queries) // 2  # the shortcut was taken, not only the fallback
    assert len(passes) > answered  # and its second pass (the rows above the floor) ran too


def test_the_shortcut_agrees_with_filtering_inside_the_query(service, monkeypatch):
    """With the budgets scaled down the shortcut answers, and the leg returns what filtering
    inside the FTS5 query returns: only live memories of the store, same scores."""
    from mnemonist.search import keyword_pruning

    monkeypatch.setattr(keyword_pruning, "RARE_ROWS", 10)
    monkeypatch.setattr(keyword_pruning, "PROBE", 40)
    conn = service.core.db.reader()
    for query, k in (("zebra", 10), ("zebra crossing weather", 15), ("zebra number day", 5)):
        top = keyword_pruning.pruned_top(conn, "memories_fts", keyword.query_terms(query), k)
        assert top is not None and len(top) == k
        found = keyword.keyword_search(conn, query, None, k)
        assert found and {seq for seq, _ in found} <= kept_seqs(service)
        assert [s for _, s in found] == [s for _, s in joined(conn, query, None, k)]
