"""HTML building for the dashboard without a template engine.

Memories are untrusted text: every value that is not markup written here goes through `esc`
(or `attr`). Pages carry no inline script (the Content-Security-Policy forbids it); data for
the script layer travels in `data-*` attributes.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

from fastapi.responses import HTMLResponse

from mnemonist.model.requests import ANY_SCOPE, Caller

#: The dashboard is the owner's console: it reads every scope, explicitly (the same
#: cross-scope read as `agents: ["*"], users: ["*"]` on the API), and says whose each
#: private memory is. Its script layer sends the same explicit scope with every action.
OWNER = Caller(agents=[ANY_SCOPE], users=[ANY_SCOPE])
OWNER_SCOPE = {"agents": [ANY_SCOPE], "users": [ANY_SCOPE]}

#: scripts and styles only from the daemon itself; inline styles for the graph library's canvas
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline';"
       " img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none';"
       " form-action 'self'")

NAV = (("memories", "/", "Memories"), ("sessions", "/ui/sessions", "Sessions"),
       ("graph", "/ui/graph", "Graph"), ("review", "/ui/review", "Review"),
       ("health", "/ui/health", "Health"))


def esc(value: Any) -> str:
    """Text as HTML text (None as empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


def attr(value: Any) -> str:
    """A value inside a double-quoted attribute."""
    return esc(value)


def url_path(part: str) -> str:
    """One path segment (an id, a session key) made safe for a URL."""
    return quote(str(part), safe="")


def query(params: Mapping[str, Any]) -> str:
    """`?a=1&b=2` of the params that have a value ('' when none)."""
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return "?" + urlencode(kept) if kept else ""


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 memory`, `2 memories`."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def short_time(ts: str | None) -> str:
    """`2025-10-01T10:00:00.123Z` as `2025-10-01 10:00`."""
    if not ts:
        return ""
    return ts.replace("T", " ")[:16]


def kv_table(rows: Iterable[tuple[str, Any]], css: str = "kv") -> str:
    """A two-column table of label → value (values escaped; dicts and lists as compact text)."""
    out = [f'<table class="{css}">']
    for label, value in rows:
        out.append(f"<tr><th>{esc(label)}</th><td>{esc(plain(value))}</td></tr>")
    out.append("</table>")
    return "".join(out)


def plain(value: Any) -> str:
    """A value as a short human line."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {plain(v)}" for k, v in value.items()) or "—"
    if isinstance(value, list | tuple):
        return ", ".join(plain(v) for v in value) or "—"
    return str(value)


def layout(title: str, active: str, body: str) -> str:
    nav = "".join(
        f'<a href="{href}"{" class=active" if key == active else ""}>{label}</a>'
        for key, href, label in NAV
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · mnemonist</title>"
        '<link rel="stylesheet" href="/ui/static/dashboard.css">'
        '<script src="/ui/static/dashboard.js" defer></script>'
        "</head><body>"
        f'<header><a class="brand" href="/">mnemonist</a><nav>{nav}</nav>'
        '<a class="docs" href="/docs">API docs</a></header>'
        f"<main>{body}</main></body></html>"
    )


def page(title: str, active: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(layout(title, active, body), status_code=status,
                        headers={"content-security-policy": CSP,
                                 "x-content-type-options": "nosniff",
                                 "cache-control": "no-store"})


def fragment(body: str, status: int = 200) -> HTMLResponse:
    """A piece of a page for the script layer to swap in."""
    return HTMLResponse(body, status_code=status,
                        headers={"content-security-policy": CSP, "cache-control": "no-store"})


def problem_page(title: str, active: str, status: int, message: str) -> HTMLResponse:
    """A refusal in words: what was wrong with the request."""
    body = f'<h1>{esc(title)}</h1><p class="error" role="alert">{esc(message)}</p>'
    return page(title, active, body, status)
