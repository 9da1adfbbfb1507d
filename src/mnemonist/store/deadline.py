"""Statements that stop at a deadline, on either store: the graph channels of recall
(`graph.boost`, `graph.walks`) keep what they found by then.

SQLite: a progress handler, called every 1,000 virtual-machine steps, interrupts the running
statement once the deadline has passed. PostgreSQL: each statement runs under a
`statement_timeout` of the time left (the server cancels it), and a statement begun after the
deadline is refused at once. Either way the caller sees `sqlite3.OperationalError`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def statements_until(conn: Any, deadline: float) -> Iterator[None]:
    """Statements on `conn` inside the block stop at `deadline` (time.monotonic())."""
    set_deadline = getattr(conn, "set_deadline", None)
    if set_deadline is not None:  # PostgreSQL
        set_deadline(deadline)
        try:
            yield
        finally:
            set_deadline(None)
        return
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
    try:
        yield
    finally:
        conn.set_progress_handler(None, 0)
