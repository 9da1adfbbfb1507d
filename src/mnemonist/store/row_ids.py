"""Ids for rows that no person reads: time-ordered UUIDs (RFC 9562 version 7).

A random UUID (version 4) as a primary key puts every insert on a random page of the key's
B-tree: at a million memories, an import chunk of 500 memories dirtied thousands of pages
scattered over the entity, relation, attribute, history and job tables, each written to the
WAL and checkpointed. A version-7 UUID starts with the time in milliseconds, so new rows land
together at the right edge of the index: measured at 1M memories, an import of 20,000 more ran
at 833-876 memories/s instead of 692-703 (docs/benchmarks.md). The remaining 74 bits are
random, so ids made in the same millisecond, or by two daemons, still differ.

Memory ids stay random (version 4): people read and type their first eight characters, which
for a time-ordered id would be the same for every memory written in the same minute.
"""

from __future__ import annotations

import os
import time
import uuid


def time_ordered_id() -> str:
    """A new version-7 UUID as text (the same 36-character form as a version 4)."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")  # 80 bits; 74 used
    value = (
        (ms & ((1 << 48) - 1)) << 80
        | 0x7 << 76  # version
        | (rand >> 68) << 64  # rand_a: 12 bits
        | 0b10 << 62  # variant
        | (rand & ((1 << 62) - 1))  # rand_b: 62 bits
    )
    return str(uuid.UUID(int=value))
