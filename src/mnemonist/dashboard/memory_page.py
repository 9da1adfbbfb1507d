"""One memory: its content and facts, its history, its supersession chain, and the actions
(edit with a reason, pin, forget with a preview, recover). The actions are forms that the
script layer sends to the JSON API; this page only reads, through the service."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from mnemonist.api.deps import svc
from mnemonist.dashboard.html import (
    OWNER,
    attr,
    esc,
    kv_table,
    page,
    problem_page,
    short_time,
    url_path,
)
from mnemonist.service import ServiceError

router = APIRouter()


def facts(m: Mapping[str, Any]) -> str:
    return kv_table([
        ("id", m["id"]), ("type", m["type"]), ("project", m.get("project")),
        ("who", m.get("who")), ("importance", m.get("importance")),
        ("pinned", m.get("pinned")), ("tags", m.get("tags")), ("version", m.get("version")),
        ("source", " · ".join(str(x) for x in (m.get("source_type"), m.get("source_id")) if x)
         or "api"),
        ("occurred", m.get("occurred_at")), ("created", m.get("created_at")),
        ("updated", m.get("updated_at")), ("key", m.get("key")),
        ("valid", f"{m.get('valid_from') or m.get('occurred_at')} → {m.get('valid_to') or 'now'}"),
        ("owner", " · ".join(f"{kind} {m[key]}" for kind, key in
                             (("agent", "agent_id"), ("user", "user_id")) if m.get(key))
         or "global (every reader)"),
        ("observed by", ", ".join(m.get("observed_by") or ()) or None),
        ("observations", m.get("observation_count")),
    ])


def history_table(events: Sequence[Mapping[str, Any]]) -> str:
    if not events:
        return '<p class="empty">No recorded changes.</p>'
    rows = ['<table class="history"><thead><tr><th>when</th><th>event</th><th>by</th>'
            "<th>reason</th><th>content</th></tr></thead><tbody>"]
    for e in events:
        if e.get("old_content") is not None and e.get("new_content") is not None and (
                e["old_content"] != e["new_content"]):
            content = (f'<del class="old">{esc(e["old_content"])}</del>'
                       f'<ins class="new">{esc(e["new_content"])}</ins>')
        else:
            text = e.get("new_content") or e.get("old_content")
            content = f'<span class="new">{esc(text)}</span>'
        rows.append(
            f'<tr class="event event-{attr(e["event"])}"><td>{esc(short_time(e["created_at"]))}'
            f'</td><td>{esc(e["event"])}</td><td>{esc(e.get("changed_by"))}</td>'
            f'<td>{esc(e.get("reason"))}</td><td>{content}</td></tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


def chain_list(chain: Mapping[str, Any] | None, current: str) -> str:
    versions = (chain or {}).get("versions") or []
    if len(versions) < 2:
        return '<p class="empty">Not part of a supersession chain.</p>'
    items = []
    for v in versions:
        here = ' class="current" aria-current="true"' if v["id"] == current else ""
        valid = f"{short_time(v.get('valid_from'))} → {short_time(v.get('valid_to')) or 'now'}"
        items.append(f'<li{here}><a href="/ui/memory/{url_path(v["id"])}">'
                     f'{esc(v.get("content"))}</a> <span class="valid">{esc(valid)}</span></li>')
    return f'<ol class="chain">{"".join(items)}</ol>'


def actions(m: Mapping[str, Any]) -> str:
    mid = attr(m["id"])
    if m.get("is_deleted"):
        return (
            f'<form id="recover" class="action" data-id="{mid}">'
            "<h3>Recover</h3><label>Reason<input name=reason required"
            ' placeholder="why it should come back"></label>'
            '<button type="submit">Recover</button><p class="status" role="status"></p></form>')
    pin_label = "Unpin" if m.get("pinned") else "Pin"
    return (
        f'<form id="edit" class="action" data-id="{mid}" data-version="{attr(m["version"])}">'
        f'<h3>Edit</h3><textarea name=content rows=4 required>{esc(m["content"])}</textarea>'
        '<label>Reason<input name=reason required placeholder="why it changed"></label>'
        '<button type="submit">Save</button><p class="status" role="status"></p></form>'
        f'<form id="pin" class="action" data-id="{mid}" data-pinned="{attr(m.get("pinned"))}">'
        f'<h3>{pin_label}</h3><label>Reason<input name=reason placeholder="optional"></label>'
        f'<button type="submit">{pin_label}</button><p class="status" role="status"></p></form>'
        f'<form id="forget" class="action" data-id="{mid}">'
        '<h3>Forget</h3><label>Reason<input name=reason required placeholder="why it goes">'
        '</label><button type="submit" name=preview>Preview</button>'
        '<div class="preview" hidden></div>'
        '<button type="button" class="danger" name=confirm hidden>Forget it</button>'
        '<p class="status" role="status"></p></form>')


@router.get("/ui/memory/{memory_id}", response_class=HTMLResponse)
def memory_page(memory_id: str, request: Request) -> HTMLResponse:
    service = svc(request)
    try:
        m = service.reads.get(memory_id, caller=OWNER)
        hist = service.reads.history(m["id"], caller=OWNER)
    except ServiceError as exc:
        return problem_page("Memory", "memories", exc.status, exc.message)
    banner = ""
    if m.get("is_deleted"):
        banner = (f'<p class="banner deleted" role="status">Forgotten {esc(m.get("deleted_at"))}'
                  f': {esc(m.get("delete_reason"))}. It can be recovered within the retention'
                  " window.</p>")
    elif m.get("superseded_by"):
        banner = ('<p class="banner superseded">Superseded by a newer version: '
                  f'<a href="/ui/memory/{url_path(m["superseded_by"] or "")}">open it</a>.</p>')
    body = (
        f'<h1>Memory <span class="id">{esc(m["id"][:8])}</span></h1>{banner}'
        f'<pre class="content" id="content">{esc(m["content"])}</pre>'
        f'<div class="columns"><section><h2>Facts</h2>{facts(m)}</section>'
        f'<section class="actions"><h2>Actions</h2>{actions(m)}</section></div>'
        f'<section id="history"><h2>History</h2>{history_table(hist["events"])}</section>'
        f'<section id="chain"><h2>Supersession chain</h2>'
        f'{chain_list(hist.get("chain"), m["id"])}</section>'
    )
    return page(f"Memory {m['id'][:8]}", "memories", body)
