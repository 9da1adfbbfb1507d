"""`bench scale --storage URL --beside-sqlite`: the same sizes on PostgreSQL and on a SQLite
file in one run, and PostgreSQL's figures as ratios of SQLite's.

Timings of two runs compare only on the same machine under the same load, so both run in one
invocation, one after the other, and the report gives the ratios with the goals a team store
is held to: recall p95 at most 1.5× SQLite's, import at least half its rate, `graph_impact`
p95 at most 2×.
"""

from __future__ import annotations

from typing import Any

#: PostgreSQL ÷ SQLite, and which way is better
GOALS = {
    "recall_p95": (1.5, "at most"),
    "import_rate": (0.5, "at least"),
    "graph_impact_p95": (2.0, "at most"),
}


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 2)


def _figures(run: dict[str, Any]) -> dict[str, float | None]:
    recall = run["recall"]["latency_ms"]
    bulk = run.get("import") or {}
    return {
        "recall_p50": recall.get("p50"),
        "recall_p95": recall.get("p95"),
        "remember_p95": run["remember"]["latency_ms"].get("p95"),
        "writes_per_s": run["remember"].get("writes_per_s"),
        "import_rate": bulk.get("per_s"),
        "graph_impact_p95": run.get("graph", {}).get("impact_ms", {}).get("p95"),
    }


def compare(postgres: dict[str, Any], sqlite: dict[str, Any]) -> dict[str, Any]:
    """PostgreSQL's run of one size against SQLite's: both stores' figures, the ratios, and
    whether each goal is met (None when a figure is missing, e.g. no import phase)."""
    pg, lite = _figures(postgres), _figures(sqlite)
    ratios = {key: _ratio(pg[key], lite[key]) for key in pg}
    met: dict[str, bool | None] = {}
    for key, (bound, way) in GOALS.items():
        ratio = ratios[key]
        met[key] = None if ratio is None else (ratio <= bound if way == "at most"
                                               else ratio >= bound)
    return {"memories": postgres["memories"], "postgresql": pg, "sqlite": lite,
            "ratios": ratios, "goals": {k: f"{way} {bound}×" for k, (bound, way)
                                        in GOALS.items()}, "met": met}


def markdown(comparisons: list[dict[str, Any]]) -> str:
    if not comparisons:
        return ""
    lines = ["", "### PostgreSQL beside SQLite (same run)", "",
             "| memories | figure | PostgreSQL | SQLite | ratio | goal |",
             "|---:|---|---:|---:|---:|---|"]
    names = {"recall_p50": "recall p50 (ms)", "recall_p95": "recall p95 (ms)",
             "remember_p95": "remember p95 (ms)", "writes_per_s": "writes/s, one caller",
             "import_rate": "import (memories/s)", "graph_impact_p95": "graph_impact p95 (ms)"}
    for c in comparisons:
        for key, name in names.items():
            goal = c["goals"].get(key, "")
            if goal:
                verdict = c["met"][key]
                goal += " (met)" if verdict else " (not met)" if verdict is False else ""
            lines.append(f"| {c['memories']:,} | {name} | {c['postgresql'][key]} |"
                         f" {c['sqlite'][key]} | {c['ratios'][key]} | {goal} |")
    return "\n".join(lines) + "\n"
