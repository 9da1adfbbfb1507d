"""Row ids: version-7 UUIDs for rows no one reads (valid, distinct, ordered by the millisecond
they were made in: an import's new rows land together at the right edge of each index), and
memory ids led by the microsecond clock (distinct first eight characters, one narrow band per
burst)."""

from __future__ import annotations

import itertools
import os
import time
import uuid

from mnemonist.store.row_ids import memory_id, time_ordered_id


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


def test_memory_ids_are_version_8_uuids_led_by_the_microsecond_clock() -> None:
    before = (time.time_ns() // 1_000) % (1 << 32)
    text = memory_id()
    after = (time.time_ns() // 1_000) % (1 << 32)
    parsed = uuid.UUID(text)
    assert str(parsed) == text and len(text) == 36
    assert parsed.version == 8 and parsed.variant == uuid.RFC_4122
    lead = int(text[:8], 16)
    if before <= after:  # the 32-bit clock did not wrap between the two readings
        assert before <= lead <= after


def test_memory_ids_made_a_moment_apart_differ_in_their_first_eight_characters() -> None:
    first = memory_id()
    time.sleep(0.002)
    second = memory_id()
    assert first[:8] != second[:8]  # what people read and type stays distinct


def test_memory_ids_of_one_burst_share_a_narrow_band_and_never_repeat() -> None:
    ids = [memory_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    leads = sorted(int(i[:8], 16) for i in ids)
    # a burst of ids (well under a minute) spans a tiny part of the 2^32 lead space, unless it
    # straddles the wrap, where it sits at both ends
    spread = leads[-1] - leads[0]
    wrapped = max(b - a for a, b in itertools.pairwise(leads))
    assert spread < 60_000_000 or wrapped > (1 << 32) - 60_000_000


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    memory_id(), time_ordered_id()  # the parent now holds a pool of random bytes
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its ids go back through the pipe
        os.close(read)
        os.write(write, "\n".join(memory_id() for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    parent = {memory_id() for _ in range(50)}
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split("\n"))
    os.waitpid(pid, 0)
    assert len(child) == 50
    # ids made in the same microsecond by both would share only their first eight characters
    assert {i[9:] for i in parent}.isdisjoint({i[9:] for i in child})
