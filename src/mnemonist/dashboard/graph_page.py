"""The knowledge-graph page: entities (sized by mentions) and their relations, drawn by the
vendored vis-network; nodes coloured by community. Its data is dashboard-internal JSON."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from mnemonist.api.deps import svc
from mnemonist.dashboard.html import attr, esc, page, plural, query

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
    out = svc(request).graph_overview(limit, project or None)
    for node in out["nodes"]:
        node["color"] = colour(node["community"])
    return JSONResponse(out, headers={"cache-control": "no-store"})


@router.get("/ui/graph", response_class=HTMLResponse)
def graph_page(request: Request, limit: int = Query(100, ge=1, le=500),
               project: str | None = PROJECT) -> HTMLResponse:
    project = project or None
    out = svc(request).graph_overview(limit, project)
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
        ' placeholder="every project"></label><button type="submit">Show</button></form>'
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
    return page("Graph", "graph", body)
