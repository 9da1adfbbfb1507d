"""Time-ordered row ids: valid version-7 UUIDs, distinct, and ordered by the millisecond they
were made in (what keeps an import's new rows together at the right edge of each index)."""

from __future__ import annotations

import time
import uuid

from mnemonist.store.row_ids import time_ordered_id


def test_ids_are_version_7_uuids_in_the_usual_text_form() -> None:
    for _ in range(200):
        text = time_ordered_id()
        parsed = uuid.UUID(text)
        assert str(parsed) == text and len(text) == 36
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_ids_carry_the_time_and_sort_by_it() -> None:
    before = time.time_ns() // 1_000_000
    first = time_ordered_id()
    time.sleep(0.003)
    second = time_ordered_id()
    after = time.time_ns() // 1_000_000
    stamp = uuid.UUID(first).int >> 80
    assert before <= stamp <= after
    assert first < second  # the text sorts as the time does: fixed-width lowercase hex


def test_ids_made_in_the_same_millisecond_differ() -> None:
    ids = [time_ordered_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
