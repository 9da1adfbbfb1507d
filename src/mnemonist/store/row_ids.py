"""Row ids that keep inserts together: version-7 UUIDs for rows no person reads, and memory ids
led by the microsecond clock.

A random UUID (version 4) as a primary key puts every insert on a random page of the key's
B-tree: at a million memories, an import chunk of 500 memories dirtied thousands of pages
scattered over the entity, relation, attribute, history and job tables, each written to the
WAL and checkpointed. A version-7 UUID starts with the time in milliseconds, so new rows land
together at the right edge of the index: measured at 1M memories, an import of 20,000 more ran
at 833-876 memories/s instead of 692-703 (docs/benchmarks.md). The remaining 74 bits are
random, so ids made in the same millisecond, or by two daemons, still differ.

Memory ids are read by people, who type their first eight characters (`mnemonist show 3f2a91c0`),
and a version-7 id's first eight characters are the same for every memory of the same minute.
So a memory id (`memory_id`) is a version-8 UUID that starts with the clock's *microseconds*
modulo 2^32 (it wraps every 71.6 minutes): the first eight characters differ between any two
memories written a microsecond apart, while the memories of one import transaction (about a
second) still fall into one narrow band of the id index and of every index keyed by memory id
(history, jobs, mentions, attributes). Measured at 1.1M memories, an import ran at 1,092-1,198
memories/s with these ids against 763-863 with random ones (docs/benchmarks.md). The other 90
bits are random, so two daemons, or two memories in one microsecond, still get different ids,
and an 8-character prefix is as likely to be unique in a store as a random one.
"""

from __future__ import annotations

import os
import threading
import time

_CLOCK_BITS = 32
_MASK_62 = (1 << 62) - 1
#: random bytes read from the OS at a time: an import makes about ten ids per memory, and one
#: `getrandom` call per id showed in its profile
_POOL_BYTES = 4096

_pool = threading.local()


def _random_int(nbytes: int) -> int:
    """`nbytes` fresh bytes from the OS's generator as an int, read in pools per thread."""
    buf: bytes = getattr(_pool, "buf", b"")
    pos: int = getattr(_pool, "pos", 0)
    if pos + nbytes > len(buf):
        buf, pos = os.urandom(_POOL_BYTES), 0
        _pool.buf = buf
    _pool.pos = pos + nbytes
    return int.from_bytes(buf[pos : pos + nbytes], "big")


def _forget_pool() -> None:
    # a forked child must not hand out the bytes its parent holds (the same ids twice)
    _pool.__dict__.clear()


os.register_at_fork(after_in_child=_forget_pool)


def _text(value: int) -> str:
    """A 128-bit value in the UUID text form (what `str(uuid.UUID(int=value))` gives, faster)."""
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def memory_id() -> str:
    """A new memory id: a version-8 UUID led by the microsecond clock (mod 2^32), see above."""
    micros = (time.time_ns() // 1_000) & ((1 << _CLOCK_BITS) - 1)
    rand = _random_int(12)  # 96 bits; 90 used
    value = (
        micros << 96
        | ((rand >> 80) & 0xFFFF) << 80  # 16 random bits
        | 0x8 << 76  # version 8: a custom layout (RFC 9562)
        | ((rand >> 64) & 0xFFF) << 64  # 12 random bits
        | 0b10 << 62  # variant
        | (rand & _MASK_62)  # 62 random bits
    )
    return _text(value)


def time_ordered_id() -> str:
    """A new version-7 UUID as text (the same 36-character form as a version 4)."""
    ms = time.time_ns() // 1_000_000
    rand = _random_int(10)  # 80 bits; 74 used
    value = (
        (ms & ((1 << 48) - 1)) << 80
        | 0x7 << 76  # version
        | (rand >> 68) << 64  # rand_a: 12 bits
        | 0b10 << 62  # variant
        | (rand & ((1 << 62) - 1))  # rand_b: 62 bits
    )
    return _text(value)
