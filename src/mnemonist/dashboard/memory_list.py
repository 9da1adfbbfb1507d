"""The memories page: recent memories, or recall (the same hybrid search as the API) when a
query is typed, with filters by project, type, scope and time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from mnemonist.api.deps import svc
from mnemonist.dashboard.html import (
    OWNER_SCOPE,
    attr,
    esc,
    fragment,
    page,
    plural,
    query,
    short_time,
    url_path,
)
from mnemonist.model.memory import MEMORY_TYPES
from mnemonist.model.requests import ListRequest, RecallRequest
from mnemonist.service import ServiceError

router = APIRouter()

SNIPPET_CHARS = 300
LIMIT = 50
FIELDS = ("q", "project", "type", "scope", "since", "until", "deleted", "offset")


def form_values(request: Request) -> dict[str, str]:
    return {k: request.query_params.get(k, "").strip() for k in FIELDS}


def filters_of(values: dict[str, str]) -> dict[str, Any]:
    """The form's filters as request fields (empty ones left out)."""
    out: dict[str, Any] = {}
    for name in ("project", "type", "since", "until"):
        if values[name]:
            out[name] = values[name]
    if values["scope"]:
        out["scope"] = [s.strip() for s in values["scope"].split(",") if s.strip()]
    return out


def why_invalid(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{where}: {err.get('msg', 'invalid')}" if where else err.get("msg", ""))
    return "; ".join(parts)


def results_of(request: Request, values: dict[str, str]) -> tuple[str, int]:
    """The results list as HTML, and the HTTP status (400 when the filters are wrong)."""
    service = svc(request)
    try:
        if values["q"]:
            req = RecallRequest.model_validate({"query": values["q"], "limit": LIMIT,
                                                **filters_of(values), **OWNER_SCOPE})
            out = service.reads.recall(req)
            return render_hits(out["results"], recall=True, method=out.get("method")), 200
        listing = ListRequest.model_validate({"limit": LIMIT, **filters_of(values),
                                              "offset": values["offset"] or 0,
                                              "include_deleted": values["deleted"] == "1",
                                              **OWNER_SCOPE})
        page = service.reads.list(listing)
        html = render_hits(page["memories"], recall=False, total=page["total"])
        return html + pager(values, listing.offset, page["total"]), 200
    except ValidationError as exc:
        return f'<p class="error" role="alert">{esc(why_invalid(exc))}</p>', 400
    except ServiceError as exc:
        return f'<p class="error" role="alert">{esc(exc.message)}</p>', exc.status


def provenance(m: Mapping[str, Any]) -> str:
    """Where a memory came from, in a few words."""
    parts = [m.get("source_type") or "api"]
    if m.get("source_id"):
        parts.append(str(m["source_id"]))
    if m.get("who"):
        parts.append(f"by {m['who']}")
    owners = [f"{kind} {m[key]}" for kind, key in (("agent", "agent_id"), ("user", "user_id"))
              if m.get(key)]
    if owners:
        parts.append("private to " + " and ".join(owners))
    return " · ".join(parts)


def when_and_stored(m: Mapping[str, Any]) -> str:
    """When it happened (event time: a 2024 chat message says 2024), and when it was stored
    when that is another minute (an import, a back-dated remember)."""
    when = short_time(m.get("occurred_at") or m.get("created_at"))
    stored = short_time(m.get("created_at"))
    out = f'<span class="when" title="when it happened">{esc(when)}</span>'
    if stored and stored != when:
        out += f'<span class="stored" title="when it was stored">stored {esc(stored)}</span>'
    return out


def render_hits(items: Sequence[Mapping[str, Any]], *, recall: bool, method: str | None = None,
                total: int | None = None) -> str:
    if recall:
        head = f"{len(items)} found by recall ({esc(method or 'hybrid')})"
    else:
        head = (f"{plural(total, 'memory', 'memories')}, most recent first (by when it"
                " happened)" if total is not None else "")
    if not items:
        return f'<p class="count">{head}</p><p class="empty">No memories match.</p>'
    rows = [f'<p class="count">{head}</p><ol class="memories">']
    for m in items:
        text = m["content"]
        snippet = text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + "…"
        flags = "".join(
            f'<span class="flag {cls}">{label}</span>'
            for cls, label, on in (("pinned", "pinned", m.get("pinned")),
                                   ("deleted", "forgotten", m.get("is_deleted")),
                                   ("superseded", "superseded", m.get("superseded_by")))
            if on)
        score = ""
        if recall:
            parts = m.get("scores") or {}
            detail = ", ".join(f"{k} {v:.3f}" for k, v in parts.items() if v is not None)
            score = (f'<span class="score" title="{attr(detail)}">{m["score"]:.3f}</span>'
                     f'<span class="source">{esc(m.get("source"))}</span>')
        rate = ""
        if recall:  # a rating for this search: a training pair for the learned ranker
            rate = ('<span class="rate"><button type="button" class="thumb" data-helpful="true"'
                    ' title="helpful for this search" aria-label="helpful">&#x1F44D;</button>'
                    '<button type="button" class="thumb" data-helpful="false"'
                    ' title="not helpful for this search" aria-label="not helpful">'
                    '&#x1F44E;</button><span class="status" role="status"></span></span>')
        rows.append(
            f'<li class="memory" data-id="{attr(m["id"])}">'
            f'<div class="line">{score}<a class="open" href="/ui/memory/{url_path(m["id"])}">'
            f'{esc(snippet)}</a>{flags}{rate}</div>'
            f'<div class="meta"><span>{esc(m.get("type"))}</span>'
            f'<span>{esc(m.get("project") or "no project")}</span>'
            f'<span>{esc(provenance(m))}</span>'
            f'{when_and_stored(m)}'
            f'<span class="id">{esc(m["id"][:8])}</span></div></li>')
    rows.append("</ol>")
    return "".join(rows)


def pager(values: dict[str, str], offset: int, total: int) -> str:
    """Links to the previous and next page of the list."""
    links = []
    steps = (("← newer", max(offset - LIMIT, 0), offset > 0),
             ("older →", offset + LIMIT, offset + LIMIT < total))
    for label, to, possible in steps:
        if possible:
            params = {**values, "offset": str(to) if to else ""}
            links.append(f'<a class="page" href="/{query(params)}">{label}</a>')
    if not links:
        return ""
    shown = f"{offset + 1}–{min(offset + LIMIT, total)} of {total}"
    return f'<nav class="pager"><span>{shown}</span>{"".join(links)}</nav>'


def search_form(values: dict[str, str]) -> str:
    types = "".join(
        f'<option value="{t}"{" selected" if values["type"] == t else ""}>{t}</option>'
        for t in MEMORY_TYPES)
    deleted = " checked" if values["deleted"] == "1" else ""

    def field(name: str, label: str, kind: str = "text", hint: str = "") -> str:
        return (f'<label>{label}<input type="{kind}" name="{name}" value="{attr(values[name])}"'
                f' placeholder="{attr(hint)}"></label>')

    return (
        '<form id="search" class="search" method="get" action="/" role="search">'
        f'<input type="search" name="q" id="q" value="{attr(values["q"])}"'
        ' placeholder="Search memories (same recall as the API)" autofocus>'
        '<div class="filters">'
        + field("project", "Project", hint="any")
        + f'<label>Type<select name="type"><option value="">any</option>{types}</select></label>'
        + field("scope", "Scope", hint="projects, comma-separated")
        + field("since", "Since", hint="2025-01-01")
        + field("until", "Until", hint="2025-12-31")
        + f'<label class="check"><input type="checkbox" name="deleted" value="1"{deleted}>'
          "forgotten too</label>"
        '<button type="submit">Search</button></div></form>'
    )


@router.get("/", response_class=HTMLResponse)
def memories_page(request: Request) -> HTMLResponse:
    values = form_values(request)
    results, status = results_of(request, values)
    body = (f"<h1>Memories</h1>{search_form(values)}"
            f'<section id="results" aria-live="polite">{results}</section>')
    return page("Memories", "memories", body, status)


@router.get("/ui/memories/results", response_class=HTMLResponse)
def memories_results(request: Request) -> HTMLResponse:
    """The results alone: what search-as-you-type swaps in."""
    results, status = results_of(request, form_values(request))
    return fragment(results, status)


__all__ = ["router"]
