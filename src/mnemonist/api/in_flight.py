"""Counts every HTTP request in flight on the request gate (providers/embedding/request_gate):
while one runs, background embedding keeps to its own thread and leaves the other cores free."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from mnemonist.providers.embedding.request_gate import REQUESTS


class InFlight:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        REQUESTS.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            REQUESTS.leave()
