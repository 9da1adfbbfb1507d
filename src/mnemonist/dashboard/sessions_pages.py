"""The sessions pages: every agent session the daemon saw, and one session's checkpoints,
what was injected into it, its turns and its transcript."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from mnemonist.api.deps import svc
from mnemonist.dashboard.html import (
    OWNER,
    esc,
    kv_table,
    page,
    plural,
    problem_page,
    short_time,
    url_path,
)
from mnemonist.service import ServiceError

router = APIRouter()

TURNS_SHOWN = 500


def sessions_table(items: list[dict[str, Any]]) -> str:
    if not items:
        return '<p class="empty">No sessions yet: connect an agent (mnemonist connect ...).</p>'
    rows = ['<table class="sessions"><thead><tr><th>session</th><th>harness</th>'
            "<th>project</th><th>started</th><th>ended</th><th>prompts</th><th>turns</th>"
            "<th>checkpoints</th><th>read</th></tr></thead><tbody>"]
    for s in items:
        key = s["session_key"]
        rows.append(
            f'<tr><td><a class="open" href="/ui/sessions/{url_path(key)}">{esc(key)}</a></td>'
            f'<td>{esc(s.get("harness"))}</td><td>{esc(s.get("project"))}</td>'
            f'<td>{esc(short_time(s.get("started_at")))}</td>'
            f'<td>{esc(short_time(s.get("ended_at")))}</td><td>{esc(s.get("prompt_count"))}</td>'
            f'<td>{esc(s.get("turns"))}</td><td>{esc(s.get("checkpoints"))}</td>'
            f'<td>{esc(s.get("ingest_status"))}</td></tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


@router.get("/ui/sessions", response_class=HTMLResponse)
def sessions_page(request: Request,
                  project: str | None = Query(None, max_length=500)) -> HTMLResponse:
    out = svc(request).sessions.list_sessions(project=project or None, limit=200)
    body = (f'<h1>Sessions</h1><p class="count">{plural(out["total"], "session")}, newest first</p>'
            f"{sessions_table(out['sessions'])}")
    return page("Sessions", "sessions", body)


def checkpoints_list(items: Sequence[Mapping[str, Any]]) -> str:
    if not items:
        return '<p class="empty">No checkpoints.</p>'
    return "".join(
        f'<article class="checkpoint"><h3>{esc(c.get("trigger"))} · '
        f'{esc(short_time(c.get("created_at")))}</h3><pre>{esc(c.get("digest"))}</pre></article>'
        for c in items)


def injected_list(items: Sequence[Mapping[str, Any]], contents: dict[str, str]) -> str:
    if not items:
        return '<p class="empty">Nothing was injected into this session.</p>'
    rows = []
    for i in items:
        mid = i["memory_id"]
        how = "injected" if i.get("was_injected") else "candidate"
        rows.append(f'<li><a href="/ui/memory/{url_path(mid)}">'
                    f'{esc(contents.get(mid, mid))}</a> <span class="meta">{how}'
                    f' · rank {esc(i.get("rank"))} · {esc(short_time(i.get("injected_at")))}'
                    "</span></li>")
    return f'<ol class="injected">{"".join(rows)}</ol>'


def turns_list(turns: Sequence[Mapping[str, Any]]) -> str:
    if not turns:
        return '<p class="empty">No turns indexed.</p>'
    return '<ol class="turns">' + "".join(
        f'<li class="turn"><span class="who">{esc(t.get("who"))}</span>'
        f'<span class="when">{esc(short_time(t.get("occurred_at")))}</span>'
        f'<a href="/ui/memory/{url_path(t["id"])}">{esc(t["content"])}</a></li>'
        for t in turns) + "</ol>"


@router.get("/ui/sessions/{session_key}", response_class=HTMLResponse)
def session_page(session_key: str, request: Request) -> HTMLResponse:
    service = svc(request)
    try:
        s = service.sessions.get_session(session_key, turns=TURNS_SHOWN, transcript=True,
                                         caller=OWNER)  # the owner's view: everything
    except ServiceError as exc:
        return problem_page("Session", "sessions", exc.status, exc.message)
    contents: dict[str, str] = {}
    for item in s["injected"]:
        try:
            contents[item["memory_id"]] = service.reads.get(item["memory_id"], caller=OWNER,
                                                            learn=False)["content"]
        except ServiceError:
            contents[item["memory_id"]] = f"{item['memory_id']} (gone)"
    state: Mapping[str, Any] = s.get("state") or {}
    ingest = s.get("ingest") or {}
    summary = kv_table([
        ("harness", state.get("harness")), ("project", state.get("project")),
        ("cwd", state.get("cwd")), ("started", state.get("started_at")),
        ("ended", state.get("ended_at")), ("prompts", state.get("prompt_count")),
        ("compactions", state.get("compactions")), ("read", ingest.get("status")),
        ("turns", s["turns_total"]),
    ])
    transcript = s.get("transcript")
    transcript_html = (f'<details><summary>{len(transcript)} characters</summary>'
                       f'<pre class="transcript">{esc(transcript)}</pre></details>'
                       if transcript else '<p class="empty">No transcript kept.</p>')
    body = (
        f'<h1>Session <span class="id">{esc(session_key)}</span></h1>{summary}'
        f'<section id="checkpoints"><h2>Checkpoints</h2>{checkpoints_list(s["checkpoints"])}'
        f'</section><section id="injected"><h2>What was injected</h2>'
        f'{injected_list(s["injected"], contents)}</section>'
        f'<section id="turns"><h2>Turns</h2>{turns_list(s["turns"])}</section>'
        f'<section id="transcript"><h2>Transcript</h2>{transcript_html}</section>'
    )
    return page(f"Session {session_key}", "sessions", body)
