"""The knowledge-graph page: entities (sized by mentions) and their relations, drawn by the
vendored vis-network; nodes coloured by community. Its data is dashboard-internal JSON. Below
the drawing: the bridges between the stored communities, what the entity-health pass did,
sleep replay's counts and the proposed principles with confirm / reject buttons
(`static/principles.js`, calling `/api/principles/{id}/confirm|reject`) (all from
`/api/diagnostics/graph`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from mnemonist.api.deps import svc
from mnemonist.dashboard.html import attr, esc, kv_table, page, plural, query, short_time

router = APIRouter()

#: one colour per community, in order of size (more communities than colours reuse them)
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")


def colour(community: int) -> str:
    return PALETTE[community % len(PALETTE)]


#: `?project=` of the graph page and its JSON: one project's entities (empty: every project's)
PROJECT = Query(None, max_length=500, description="only this project's entities")


@router.get("/ui/graph.json")
def graph_data(request: Request, limit: int = Query(100, ge=1, le=500),
               project: str | None = PROJECT) -> JSONResponse:
    out = svc(request).graph.graph_overview(limit, project or None)
    for node in out["nodes"]:
        node["color"] = colour(node["community"])
    return JSONResponse(out, headers={"cache-control": "no-store"})


@router.get("/ui/graph", response_class=HTMLResponse)
def graph_page(request: Request, limit: int = Query(100, ge=1, le=500),
               project: str | None = PROJECT) -> HTMLResponse:
    project = project or None
    out = svc(request).graph.graph_overview(limit, project)
    scope = "every project" if project is None else f"project {project}"
    params = {"limit": str(limit), "project": project}
    legend = "".join(
        f'<li><span class="swatch" style="background:{colour(c["id"])}"></span>'
        f'{c["size"]} · {esc(", ".join(c["members"]))}</li>'
        for c in out["communities"][:12])
    body = (
        '<h1>Knowledge graph</h1>'
        '<form class="filters" method="get" action="/ui/graph">'
        f'<label>Project<input type="text" name="project" value="{attr(project or "")}"'
        ' placeholder="every project" list="graph-projects"></label>'
        '<datalist id="graph-projects">'
        + "".join(f'<option value="{attr(p)}"></option>' for p in out["projects"] if p)
        + '</datalist><button type="submit">Show</button></form>'
        f'<p class="count">{esc(scope)}: '
        f'{plural(len(out["nodes"]), "entity", "entities")} (the most mentioned),'
        f' {plural(len(out["edges"]), "relation")},'
        f' {plural(len(out["communities"]), "community", "communities")}</p>'
        f'<div id="graph" data-src="/ui/graph.json{attr(query(params))}"'
        f' data-nodes="{len(out["nodes"])}"></div>'
        f'<h2>Communities</h2><ol class="legend">{legend}</ol>'
        '<script src="/ui/static/vendor/vis-network.min.js" defer></script>'
        '<script src="/ui/static/graph.js" defer></script>'
    )
    diagnostics = svc(request).graph.graph_diagnostics(False, project)
    body += bridges_section(diagnostics.get("bridges") or [])
    body += health_section(diagnostics.get("entity_health") or {})
    body += replay_section(diagnostics.get("sleep_replay") or {})
    body += principles_section(diagnostics.get("principles") or {})
    return page("Graph", "graph", body)


def replay_section(replay: dict[str, Any]) -> str:
    """Sleep replay: its settings, totals, the last cycle and the false-positive rate."""
    if not replay:
        return ""
    rate = replay.get("false_positive_rate")
    last = replay.get("last_cycle") or {}
    summary = kv_table([
        ("enabled", "yes" if replay.get("enabled") else "no (on demand only)"),
        ("idle time before a cycle", f"{int(replay.get('idle_timeout_ms') or 0) / 1000:g} s"),
        ("pairs per cycle", replay.get("pairs_per_cycle")),
        ("similarity threshold", replay.get("similarity_threshold")),
        ("cycles", replay.get("cycles", 0)),
        ("pairs compared", replay.get("pairs_compared", 0)),
        ("edges proposed", replay.get("edges_proposed", 0)),
        ("near-duplicates flagged", replay.get("duplicates_flagged", 0)),
        ("edges downgraded by feedback", replay.get("downgraded", 0)),
        ("false-positive rate", None if rate is None else f"{100 * rate:.1f}%"),
        ("last cycle", short_time(last.get("at")) or None),
    ])
    return f'<h2>Sleep replay</h2><div id="sleep-replay">{summary}</div>'


def bridges_section(bridges: list[dict[str, Any]]) -> str:
    """Entities whose relations join two or more communities, most joined first."""
    if not bridges:
        return ('<h2>Bridges</h2><p class="empty" id="bridges">No entity joins two'
                " communities.</p>")
    rows = "".join(
        f"<tr><td>{esc(b['name'])}</td><td>{esc(b.get('project') or '')}</td>"
        f"<td>{b['connects']}</td>"
        f"<td>{esc(', '.join(str(c.get('label') or c['id']) for c in b['communities']))}</td>"
        f"<td>{b['strength']}</td></tr>" for b in bridges)
    return ('<h2>Bridges</h2><table class="queue" id="bridges"><thead><tr><th>entity</th>'
            "<th>project</th><th>communities joined</th><th>which</th><th>strength</th></tr>"
            "</thead>"
            f"{rows}</table>")


def _action(item: dict[str, Any]) -> str:
    if item["action"] == "fold":
        return f"{esc(item['name'])} folded into {esc(item.get('kept'))}"
    return f"{esc(item['name'])} removed ({plural(int(item.get('mentions') or 0), 'link')})"


def health_section(health: dict[str, Any]) -> str:
    """Entity health: folds and junk removals so far, orphans, what is pending, the latest."""
    if not health:
        return ""
    summary = kv_table([
        ("variants folded", health.get("folded", 0)),
        ("junk entities removed", health.get("junk_removed", 0)),
        ("aliases", health.get("aliases", 0)),
        ("orphans (the retention sweep removes them)", health.get("orphans", 0)),
        ("entities not examined yet", health.get("pending", 0)),
        ("last run", short_time(health.get("last_run")) or None),
    ])
    recent = "".join(f"<li>{esc(short_time(i.get('at')))} · {_action(i)}</li>"
                     for i in health.get("recent") or [])
    return (f'<h2>Entity health</h2><div id="entity-health">{summary}'
            + (f'<ul class="explanation">{recent}</ul>' if recent else "") + "</div>")


def principles_section(report: Mapping[str, Any]) -> str:
    """Proposed principles (a pattern shared by unrelated entities) to confirm or reject."""
    if not report:
        return ""
    counts = report.get("counts") or {}
    summary = (f'<p class="count">{plural(int(counts.get("proposed", 0)), "proposed")},'
               f' {counts.get("confirmed", 0)} confirmed, {counts.get("rejected", 0)} rejected'
               + (f' · not run now: {esc(report["unavailable"])}'
                  if report.get("unavailable") else "") + "</p>")
    items = "".join(
        f'<li class="principle" data-id="{attr(p["id"])}"><p>{esc(p["statement"])}</p>'
        f'<p class="explanation">entities: '
        f'{esc(", ".join(str(n or "?") for n in p.get("source_names") or []))}'
        f' · evidence: {esc(", ".join(p.get("evidence") or []))}</p>'
        f'<form class="action principle-review" data-id="{attr(p["id"])}">'
        '<label>Reason<input name=reason placeholder="why (optional)"></label>'
        '<div class="buttons"><button type="button" data-action="confirm">Confirm</button> '
        '<button type="button" data-action="reject">Reject</button></div>'
        '<p class="status" role="status"></p></form></li>'
        for p in report.get("proposed") or [])
    listing = (f'<ul class="principles">{items}</ul>' if items
               else '<p class="empty">No principle waits for review.</p>')
    return (f'<h2>Principles</h2><div id="principles">{summary}{listing}</div>'
            '<script src="/ui/static/principles.js" defer></script>')
