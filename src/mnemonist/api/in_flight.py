"""Counts every HTTP request in flight on a request gate (the one of
providers/embedding/request_gate, given by `mnemonist/web.py`): while one runs, background
embedding keeps to its own thread and leaves the other cores free."""

from __future__ import annotations

from typing import Protocol

from starlette.types import ASGIApp, Receive, Scope, Send


class Gate(Protocol):
    def enter(self) -> None: ...

    def leave(self) -> None: ...


class InFlight:
    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.gate.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.gate.leave()
