"""The review page: pairs of memories for a person to decide, both side by side.

- **Contradictions**: two statements of one thing that disagree, which the consolidation engine
  could not settle (nothing says which is current);
- **Near-duplicates**: pairs the near-duplicate sweep flagged;
- **Recently settled by consolidation**: what the engine settled on its own (a fact said again,
  or an older value the newer statement says changed), with an undo for the superseded side.

Open pairs are dismissed (both stay) or settled by keeping one side (the other is superseded
by it). Like every action of the dashboard, the buttons are forms the script layer
(`review.js`, through `dashboard.js`'s `api`) sends to the JSON API — `POST
/api/repair/duplicates/{id}/dismiss`, `/resolve`, `POST /api/memory/{id}/restore` — behind the
same boundary (same-origin writes only, JSON bodies only, the token's cookie when one is
set); this page only reads, through the service, as the owner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from mnemonist.api.deps import svc
from mnemonist.dashboard.html import OWNER, attr, esc, page, plural, short_time, url_path
from mnemonist.model.answers_curation import DuplicatePair
from mnemonist.service import MemoryService

router = APIRouter()

#: pairs shown per section (newest first)
LIMIT = 50
KIND_LABELS = {"contradiction": "contradiction", "duplicate": "near-duplicate",
               "restated": "restated", "replaced": "replaced"}


def _listing(service: MemoryService, status: str, kind: str
             ) -> tuple[list[DuplicatePair], int]:
    out = service.curation.list_duplicates(status, LIMIT, 0, OWNER, kind)
    return out["duplicates"], out["total"]


def side(label: str, m: Mapping[str, Any], role: str | None = None) -> str:
    """One memory of a pair: its text (escaped), type, when it was stored, a link to it."""
    tag = f' <span class="flag superseded">{esc(role)}</span>' if role == "superseded" else (
        f' <span class="source">{esc(role)}</span>' if role else "")
    return (
        f'<div class="side side-{attr(label.lower())}" data-id="{attr(m["id"])}">'
        f"<h3>{esc(label)}{tag}</h3>"
        f'<pre class="content">{esc(m.get("content"))}</pre>'
        f'<div class="meta"><span>{esc(m.get("type"))}</span>'
        f'<span class="when">stored {esc(short_time(m.get("created_at")))}</span>'
        f'<a href="/ui/memory/{url_path(m["id"])}">open</a>'
        f'<span class="id">{esc(str(m["id"])[:8])}</span></div></div>')


def _similarity(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "—"


def pair_card(p: Mapping[str, Any], sides: str, actions: str) -> str:
    kind = p.get("kind") or "duplicate"
    return (
        f'<article class="checkpoint pair" data-id="{attr(p["id"])}" data-kind="{attr(kind)}">'
        f'<div class="meta"><span class="source kind">{esc(KIND_LABELS.get(kind, kind))}</span>'
        f'<span class="similarity">similarity {esc(_similarity(p.get("similarity")))}</span>'
        f'<span class="reason">{esc(p.get("reason"))}</span>'
        f'<span class="when">{esc(short_time(p.get("updated_at") or p.get("created_at")))}'
        f'</span><span class="id">{esc(str(p["id"])[:8])}</span></div>'
        f'<div class="columns">{sides}</div>{actions}</article>')


def decide_form(p: Mapping[str, Any]) -> str:
    """Dismiss (both stay), or keep one side (the other is superseded by it)."""
    return (
        f'<form class="action review-decide" data-id="{attr(p["id"])}">'
        '<label>Reason<input name=reason placeholder="why (required to keep one side)">'
        '</label><div class="buttons">'
        '<button type="button" data-action="keep_a">Keep A</button> '
        '<button type="button" data-action="keep_b">Keep B</button> '
        '<button type="button" data-action="dismiss">Dismiss</button></div>'
        '<p class="status" role="status"></p></form>')


def open_section(service: MemoryService, kind: str, title: str, anchor: str, what: str) -> str:
    pairs, total = _listing(service, "open", kind)
    head = f'<h2>{esc(title)}</h2><p class="count">{plural(total, "open pair")}: {esc(what)}</p>'
    if not pairs:
        return f'<section id="{anchor}">{head}<p class="empty">Nothing to review.</p></section>'
    cards = "".join(
        pair_card(p, side("A", p["a"]) + side("B", p["b"]), decide_form(p)) for p in pairs)
    return f'<section id="{anchor}">{head}{cards}</section>'


def undo_form(superseded: str) -> str:
    """Make the superseded side current again (the engine never settles the pair again)."""
    return (
        f'<form class="action review-undo" data-id="{attr(superseded)}">'
        '<label>Reason<input name=reason required placeholder="why it should be current again">'
        '</label><button type="submit">Undo</button><p class="status" role="status"></p>'
        "</form>")


def settled_section(service: MemoryService) -> str:
    found: list[DuplicatePair] = []
    total = 0
    for kind in ("restated", "replaced"):
        pairs, count = _listing(service, "resolved", kind)
        found += pairs
        total += count
    found.sort(key=lambda p: (p.get("updated_at") or "", p["id"]), reverse=True)
    head = ("<h2>Recently settled by consolidation</h2>"
            f'<p class="count">{plural(total, "pair")} settled on its own, newest first: the'
            " older memory is superseded by the newer one (a fact said again, or a value the"
            " newer statement says changed). Undo makes it current again, and the engine"
            " never settles that pair again.</p>")
    if not found:
        return (f'<section id="settled">{head}<p class="empty">Consolidation has settled'
                " nothing yet.</p></section>")
    cards = []
    for p in found[:LIMIT]:
        kept = p.get("kept")
        superseded = p["a"]["id"] if kept == p["b"]["id"] else p["b"]["id"]
        sides = "".join(side(label, m, "kept" if m["id"] == kept else "superseded")
                        for label, m in (("A", p["a"]), ("B", p["b"])))
        cards.append(pair_card(p, sides, undo_form(superseded)))
    return f'<section id="settled">{head}{"".join(cards)}</section>'


@router.get("/ui/review", response_class=HTMLResponse)
def review_page(request: Request) -> HTMLResponse:
    service = svc(request)
    body = (
        "<h1>Review</h1>"
        '<p class="count">Pairs of memories for you to decide. Dismiss a pair that is fine as'
        " it is, or keep one side: the other is superseded by it (it leaves recall; nothing is"
        " deleted, and it can be made current again).</p>"
        + open_section(service, "contradiction", "Contradictions", "contradictions",
                       "two statements of one thing that disagree, with nothing saying which"
                       " is current")
        + open_section(service, "duplicate", "Near-duplicates", "duplicates",
                       "two memories that say almost the same")
        + settled_section(service)
        + '<script src="/ui/static/review.js" defer></script>'
    )
    return page("Review", "review", body)


__all__ = ["router"]
