"""Notes each API request (when it starts and when it ends) for sleep replay's idle clock
(`pipeline/sleep_replay_worker.py`). What counts: `/api/...` and `/mcp`, except the reads that
only watch the daemon (status, diagnostics): a supervisor polling them keeps nothing busy.
The dashboard's pages and `/health` do not count either."""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

#: GET paths (prefixes) that watch the daemon rather than use it
WATCHING = ("/api/status", "/api/diagnostics", "/api/pipeline/status",
            "/api/consolidation/status", "/api/predictor/status")


def counts(scope: Scope) -> bool:
    path = scope.get("path", "")
    if not (path.startswith("/api/") or path == "/mcp"):
        return False
    return not (scope.get("method") == "GET" and path.startswith(WATCHING))


class NoteActivity:
    def __init__(self, app: ASGIApp, note: Callable[[], None] | None = None) -> None:
        self.app = app
        self.note = note

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.note is None or scope["type"] != "http" or not counts(scope):
            await self.app(scope, receive, send)
            return
        self.note()
        try:
            await self.app(scope, receive, send)
        finally:
            self.note()
