"""Recall's query embedding on a thread of its own, while the caller runs the keyword leg.

The two legs need nothing from each other until fusion: the keyword leg reads the query's
words, the vector leg its vector. Embedding the query (ONNX, or a remote provider's round
trip) and ranking its words (SQLite or PostgreSQL) both release the GIL for most of their
time, so on two cores the query embedding costs recall less than running it first. One
shared worker thread: when a concurrent recall holds it, the work runs in the caller when its
answer is asked for, as it did before (never a wait in a queue behind another recall).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from mnemonist.guards import write_tx as txguard
from mnemonist.providers.embedding.request_gate import REQUESTS

T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_free = threading.Semaphore(1)


def _forget_after_fork() -> None:
    """A forked child has no worker thread: it starts its own when it needs one."""
    global _pool, _pool_lock, _free
    _pool, _pool_lock, _free = None, threading.Lock(), threading.Semaphore(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemonist-query")
        return _pool


def _run(fn: Callable[[], T], free: threading.Semaphore) -> T:
    try:
        with REQUESTS.request():  # the caller's request, on another thread
            return fn()
    finally:
        free.release()


def started(fn: Callable[[], T]) -> Callable[[], T]:
    """Start `fn` on the worker when it is free; returns what waits for its answer (and
    raises what it raised). With the worker busy, or inside a write transaction (where a
    provider must refuse to run, and does so in the caller's thread), `fn` itself: it runs
    when called."""
    free = _free
    if txguard.in_write_tx() or not free.acquire(blocking=False):
        return fn
    try:
        future = _executor().submit(_run, fn, free)
    except RuntimeError:  # the interpreter is shutting down: no new threads
        free.release()
        return fn
    return future.result
