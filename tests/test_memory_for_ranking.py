"""`Memory.for_ranking` builds recall's candidates without `__init__`: it must still give
every field of the dataclass (a field added later and forgotten there would be missing on
candidates only)."""

from __future__ import annotations

import dataclasses

from mnemonist.model.memory import _RANKING_BLANK, Memory


def test_a_ranking_candidate_has_every_field_and_the_row_it_was_read_from() -> None:
    assert list(_RANKING_BLANK) == [f.name for f in dataclasses.fields(Memory)]
    row = (7, "m-7", "The cache lives in eu-west-2", "fact", 0.8, 1, "maria", "acme",
           "chat", "s-1", 0, "2026-01-02T00:00:00.000Z", "2026-01-01T00:00:00.000Z",
           "2026-01-01T00:00:01.000Z", 2, 3)
    m = Memory.for_ranking(row)
    assert {f.name for f in dataclasses.fields(Memory)} <= set(vars(m))
    assert (m.seq, m.id, m.content, m.type, m.importance, m.pinned, m.who, m.project) == (
        7, "m-7", "The cache lives in eu-west-2", "fact", 0.8, True, "maria", "acme")
    assert (m.source_type, m.source_id, m.is_deleted, m.observation_count,
            m.recall_count) == ("chat", "s-1", False, 2, 3)
    assert m.extra == {"partial": True} and m.tags == [] and m.observed_by == []
    other = Memory.for_ranking(row)
    other.tags.append("x")
    assert m.tags == []  # no list shared between candidates
