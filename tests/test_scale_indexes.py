"""Migration 14: listing the memories of a time window (the time-candidate pass, since/until)
reads the event-time index instead of every row."""

from __future__ import annotations

from mnemonist.model.requests import RecallFilters
from mnemonist.search.filters import where_clause
from mnemonist.store.db import Database
from mnemonist.store.migrations import migrate


def test_a_time_window_is_read_from_the_event_time_index(tmp_path) -> None:
    db = Database(tmp_path / "m.db")
    assert 14 in migrate(db)
    where, args = where_clause(RecallFilters(since="2024-03-01T00:00:00.000Z",
                                             until="2024-03-31T23:59:59.999Z"))
    plan = " ".join(str(r[3]) for r in db.reader().execute(
        f"EXPLAIN QUERY PLAN SELECT m.seq FROM memories m WHERE {where}", args))
    assert "memories_occurred" in plan, plan
    assert migrate(db) == []


def _plans_of(conn, call) -> list[str]:
    """The query plan of every SELECT `call` runs on `conn`."""
    sql: list[str] = []
    conn.set_trace_callback(sql.append)
    try:
        call()
    finally:
        conn.set_trace_callback(None)
    return [" ".join(str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {s}"))
            for s in sql if s.lstrip().upper().startswith("SELECT")]


def test_candidates_known_by_seq_are_read_by_primary_key(tmp_path) -> None:
    """Recall's lookups of its candidates (ranking rows, full rows of the hits, the keyword
    leg's filter pass) go by seq even though the filters name `is_deleted`, which an index
    (memories_occurred) leads with: read through it, every live row would be visited."""
    from mnemonist.search.keyword import _keep_passing
    from mnemonist.store import embeddings, memories

    db = Database(tmp_path / "m.db")
    migrate(db)
    conn = db.reader()
    where, args = where_clause(None)
    seqs = list(range(1, 251))  # as many as recall ranks (with 3, the planner picks the key)
    calls = [
        lambda: memories.ranking_rows(conn, seqs, where, args),
        lambda: memories.get_many_by_seq(conn, seqs, where, args),
        lambda: _keep_passing(conn, [(s, -1.0) for s in seqs], where, args, 300, []),
        # the int8 vector index's exact vectors of its candidates
        lambda: embeddings.vectors_by_seq(conn, seqs, "model", 384),
    ]
    for call in calls:
        plans = _plans_of(conn, call)
        assert plans, "no SELECT traced"
        for plan in plans:
            assert "INTEGER PRIMARY KEY" in plan and "memories_occurred" not in plan, plan
