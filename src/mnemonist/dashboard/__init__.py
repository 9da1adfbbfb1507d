"""The web dashboard the daemon serves at `/`: server-rendered pages over the service (the
one door) with a small script layer that acts through the JSON API, plus `/docs` offline.
Every page passes the same trust boundary as the API (see `api/boundary.py`)."""

from __future__ import annotations

from pathlib import Path

from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles

from mnemonist.dashboard import (
    api_docs,
    graph_page,
    health_page,
    login,
    memory_list,
    memory_page,
    review_page,
    sessions_pages,
)

STATIC = Path(__file__).parent / "static"


def install_dashboard(app: FastAPI) -> None:
    """Mount the pages, their static files and the offline `/docs` on `app` (created with
    `docs_url=None` so that this `/docs` is the only one)."""
    app.include_router(login.router, include_in_schema=False)
    # the pages read every scope: with named tokens, an owner's alone (login.owner_console)
    for module in (memory_list, memory_page, sessions_pages, graph_page, review_page,
                   health_page):
        app.include_router(module.router, include_in_schema=False,
                           dependencies=[Depends(login.owner_console)])
    app.include_router(api_docs.router)
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="dashboard-static")


__all__ = ["install_dashboard"]
