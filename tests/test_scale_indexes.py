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
