"""Pipeline and health: the daemon's state in words (degraded states say what they mean and
what to do), the embedding provider, the vector index, and the job queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from mnemonist.api.deps import svc
from mnemonist.dashboard.html import esc, kv_table, page

router = APIRouter()


def queue_table(jobs: dict[str, dict[str, int]]) -> str:
    if not jobs:
        return '<p class="empty">No background jobs have run yet.</p>'
    states = sorted({state for counts in jobs.values() for state in counts})
    head = "".join(f"<th>{esc(s)}</th>" for s in states)
    rows = "".join(
        f"<tr><th>{esc(kind)}</th>"
        + "".join(f"<td>{counts.get(s, 0)}</td>" for s in states) + "</tr>"
        for kind, counts in sorted(jobs.items()))
    return f'<table class="queue"><thead><tr><th>job</th>{head}</tr></thead>{rows}</table>'


def state_in_words(status: Mapping[str, Any]) -> str:
    problems = status.get("problems") or []
    if not problems:
        return ('<p class="banner ok" id="state" role="status">Healthy: recall, writes and'
                " background work all run normally.</p>")
    items = "".join(f"<li>{esc(p)}</li>" for p in problems)
    return (f'<div class="banner degraded" id="state" role="status"><p>Degraded:</p>'
            f"<ul>{items}</ul></div>")


@router.get("/ui/health", response_class=HTMLResponse)
def health_page(request: Request) -> HTMLResponse:
    status = svc(request).health.status()
    explanation = "".join(f"<li>{esc(line)}</li>" for line in status.get("explanation") or [])
    body = (
        f"<h1>Pipeline and health</h1>{state_in_words(status)}"
        + (f'<ul class="explanation">{explanation}</ul>' if explanation else "")
        + '<div class="columns"><section><h2>Memories</h2>'
        + kv_table(sorted((status.get("memories") or {}).items()))
        + "<h2>Embedding provider</h2>" + kv_table((status.get("embedding_provider") or {}).items())
        + "<h2>Embeddings</h2>" + kv_table((status.get("embeddings") or {}).items())
        + "<h2>Vector index</h2>" + kv_table((status.get("vector_index") or {}).items())
        + '</section><section><h2>Queue</h2>'
        + f'<p class="count">{status.get("queue_depth", 0)} jobs waiting or running</p>'
        + queue_table(status.get("jobs") or {})
        + "<h2>Pipeline</h2>" + kv_table((status.get("pipeline") or {}).items())
        + "<h2>Sessions</h2>" + kv_table((status.get("sessions") or {}).items())
        + "<h2>Daemon</h2>" + kv_table([("version", status.get("version")),
                                        ("database", status.get("database")),
                                        ("uptime (s)", status.get("uptime_s"))])
        + "</section></div>"
    )
    return page("Health", "health", body)
