"""The in-flight-request gate: background embedding uses the extra cores only while idle.

Every request (an HTTP request through the API middleware; a remember, recall or import
through the service, whichever face called it) holds the gate while it runs. The local model's
helper threads — the cores beyond the embedder's own thread — check it before taking the next
text and wait while any request is in flight, so a request never waits for a CPU behind a
background text that was started after it arrived (at most behind the runs already taken,
one text each). The embedder's own thread keeps going: it is the one core background
embedding always had.

An `embed()` called from inside a request (a query, a synchronous prefetch) is not background
work: its helpers are not held back by the request that called it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


#: how often a waiting helper re-checks whether its work ran out (it is also woken for that)
POLL_S = 0.05


class RequestGate:
    """A count of requests in flight, and a wait for it to reach zero."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._in_flight = 0
        self._local = threading.local()

    @contextmanager
    def request(self) -> Iterator[None]:
        """Hold the gate for one request run by this thread (nesting is fine)."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        self.enter()
        try:
            yield
        finally:
            self._local.depth = depth
            self.leave()

    def enter(self) -> None:
        """Count a request in flight without tying it to a thread (the ASGI middleware:
        requests interleave on the event loop's thread)."""
        with self._cond:
            self._in_flight += 1

    def leave(self) -> None:
        with self._cond:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._cond.notify_all()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def inside_request(self) -> bool:
        """True in a thread that holds the gate (its embedding is the request's own)."""
        return getattr(self._local, "depth", 0) > 0

    def take_when_clear(self, give_up: Callable[[], bool], take: Callable[[], T]) -> T | None:
        """Wait while a request is in flight, then `take()` the next piece of work under the
        gate's lock: once `enter()` has returned, no helper takes anything new. None as soon as
        `give_up()` says the wait is pointless (checked on every wake-up, see `wake`)."""
        with self._cond:
            while self._in_flight > 0:
                if give_up():
                    return None
                self._cond.wait(POLL_S)
            return take()

    def wake(self) -> None:
        """Wake the waiters so they check their `give_up` again (the work ran out)."""
        with self._cond:
            self._cond.notify_all()


#: The process's gate: requests of every face hold it, the local model's helpers read it.
REQUESTS = RequestGate()


def holds_gate(fn: Callable[P, R]) -> Callable[P, R]:
    """Run `fn` as a request: the local model's helper threads take no new background text
    meanwhile (the service's remember, recall and import wear it, whatever the face)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with REQUESTS.request():
            return fn(*args, **kwargs)

    return wrapper
