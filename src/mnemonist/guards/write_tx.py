"""Marks the write transaction so that providers can refuse to run inside it.

The invariant ("raw first": what was said is stored before any model is asked): no LLM call,
embedding call or network I/O while the write lock is held. `write_tx()` sets a thread-local
flag; every provider calls `assert_not_in_write_tx()` before doing I/O, so a violation fails
loudly in tests. The flag lives below both the store (which sets it) and the providers (which
check it), so that neither of them imports the other.
"""

from __future__ import annotations

import threading

_state = threading.local()


class WriteLockViolation(RuntimeError):
    """A provider call was attempted while this thread held the write lock."""


def in_write_tx() -> bool:
    return getattr(_state, "depth", 0) > 0


def enter() -> None:
    _state.depth = getattr(_state, "depth", 0) + 1


def leave() -> None:
    _state.depth = max(0, getattr(_state, "depth", 0) - 1)


def assert_not_in_write_tx(what: str) -> None:
    if in_write_tx():
        raise WriteLockViolation(f"{what} called inside a write transaction")
