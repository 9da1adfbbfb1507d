"""What route handlers share."""

from __future__ import annotations

from typing import Any

from fastapi import Request


def svc(request: Request) -> Any:
    """The daemon's MemoryService (the one door)."""
    return request.app.state.service
