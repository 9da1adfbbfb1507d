"""A time-aware recall test set and its benchmark.

Recurring events (standups, deploys, dinners, ...) are remembered at many dates, so that a
question like "which service did we deploy two months ago?" can only be answered by event time:
every deploy memory matches its words equally. Each query has exactly one relevant memory (no
other memory of its topic falls in the window its time expression names). The set is generated
deterministically from a seed relative to a fixed `now`; recall is measured with time awareness
off, as a soft preference at several weights, and as a hard filter.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mnemonist.model.memory import format_ts
from mnemonist.model.requests import RecallRequest, RememberRequest
from mnemonist.text.timeexpr import TimeWindow, find_time_window

NOW = datetime(2026, 11, 18, 15, 0, tzinfo=UTC)  # a Wednesday

FILL = {
    "person": ["Maria", "Dev", "Aiko", "Tomas", "Priya", "Jonas", "Lena", "Omar"],
    "feature": ["the billing export", "search filters", "the onboarding flow", "SSO login",
                "the CSV importer", "push notifications", "dark mode", "the audit log"],
    "detail": ["a small cavity on a molar", "gums look healthy", "a cleaning is due",
               "a crown needs replacing", "wisdom teeth are fine", "x-rays were clear"],
    "food": ["oat milk", "sourdough", "avocados", "lentils", "coffee beans", "tofu", "apples",
             "pasta", "spinach", "yogurt", "rice", "eggs"],
    "service": ["payments-api", "search-indexer", "auth-gateway", "mail-worker", "web-frontend",
                "reports-service", "image-resizer"],
    "action": ["pair on code reviews", "cut the meeting load", "write more tests first",
               "ship smaller pull requests", "rotate on-call fairly", "document decisions"],
    "book": ["Dune", "Middlemarch", "The Overstory", "Piranesi", "Beloved", "Klara and the Sun",
             "The Remains of the Day", "Station Eleven"],
    "place": ["river path", "harbour loop", "forest trail", "old railway line", "lake shore"],
    "subject": ["career growth", "the reorg", "conference talks", "a promotion case",
                "workload", "mentoring juniors"],
    "utility": ["electricity", "water", "internet", "gas", "phone"],
    "restaurant": ["Osteria Lupo", "Saigon Corner", "The Copper Pot", "Casa Verde",
                   "Nori House", "Bistro Margot"],
}

TOPICS: dict[str, tuple[str, str]] = {
    # topic: (memory template, question template with {when})
    "standup": ("Standup: {person} reported progress on {feature}",
                "what was reported at standup {when}?"),
    "dentist": ("Dentist appointment with Dr. {person}: the dentist said {detail}",
                "what did the dentist say {when}?"),
    "grocery": ("Grocery run: bought {food}, {food} and {food}",
                "what did I buy at the grocery store {when}?"),
    "deploy": ("Deployed {service} version {n}.{m} to production",
               "which service did we deploy {when}?"),
    "retro": ("Sprint retro {n}: the team agreed to {action}",
              "what did the team agree in the retro {when}?"),
    "books": ("Book club discussed chapters {n} to {m} of {book}",
              "which book did the book club discuss {when}?"),
    "run": ("Ran {n} km along the {place}", "how far did I run {when}?"),
    "one_on_one": ("1:1 with {person}: talked about {subject}",
                   "what came up in my 1:1 {when}?"),
    "bill": ("Paid the {utility} bill: {n}{m} dollars", "how much was the bill I paid {when}?"),
    "dinner": ("Dinner with {person} at {restaurant}", "where did I have dinner {when}?"),
}

EXPRESSIONS = [
    "yesterday", "the day before yesterday", "last week", "last Friday", "three weeks ago",
    "last month", "two months ago", "four months ago", "in March", "in June", "last summer",
    "on 8 May 2025", "in January 2025", "in 2024", "a year ago",
]  # fmt: skip


@dataclass
class Query:
    text: str
    topic: str
    expression: str
    target: int  # index into the memories list


def _fill(template: str, rng: random.Random) -> str:
    out = template
    while "{" in out:
        start = out.index("{")
        key = out[start + 1 : out.index("}", start)]
        value = str(rng.randint(1, 19)) if key in ("n", "m") else rng.choice(FILL[key])
        out = out[:start] + value + out[out.index("}", start) + 1 :]
    return out


def _inside(window: TimeWindow, rng: random.Random) -> datetime:
    start = max(window.start, NOW - timedelta(days=1000))
    end = min(window.end, NOW)
    span = max(1.0, (end - start).total_seconds() - 3600)
    if window.expression.endswith("ago"):  # near the moment named, not at the window's edge
        centre = start + (end - start) / 2
        return centre + timedelta(hours=rng.uniform(-36, 36))
    return start + timedelta(seconds=rng.uniform(0, span))


def build(seed: int = 11, per_topic: int = 5, background: int = 25):
    """(memories as (topic, content, occurred_at), queries); every content is distinct."""
    rng = random.Random(seed)
    seen: set[str] = set()

    def fresh(template: str) -> str:
        for _ in range(1000):
            text = _fill(template, rng)
            if text not in seen:
                seen.add(text)
                return text
        raise ValueError(f"template has too few distinct fillings: {template}")

    windows = {e: find_time_window(e, NOW) for e in EXPRESSIONS}
    memories: list[tuple[str, str, datetime]] = []
    queries: list[Query] = []
    for topic, (template, question) in TOPICS.items():
        chosen: list[TimeWindow] = []
        for expr in rng.sample(EXPRESSIONS, len(EXPRESSIONS)):
            w = windows[expr]
            if w is None or any(w.start < c.end and c.start < w.end for c in chosen):
                continue
            chosen.append(w)
            memories.append((topic, fresh(template), _inside(w, rng)))
            queries.append(Query(question.format(when=expr), topic, expr, len(memories) - 1))
            if len(chosen) == per_topic:
                break
        placed = 0
        while placed < background:
            when = NOW - timedelta(days=rng.uniform(1, 900), hours=rng.uniform(0, 23))
            if any(c.start <= when < c.end for c in chosen):
                continue  # each query keeps exactly one relevant memory
            memories.append((topic, fresh(template), when))
            placed += 1
    return memories, queries


def _rank(results: list[dict[str, Any]], target_id: str) -> int | None:
    for i, r in enumerate(results):
        if r["id"] == target_id:
            return i + 1
    return None


def evaluate(service, queries: list[Query], ids: list[str], *, filter_: bool = False):
    ranks = []
    for q in queries:
        out = service.reads.recall(RecallRequest(query=q.text, limit=10, min_score=0.0,
                                                 now=format_ts(NOW), time_filter=filter_))
        ranks.append(_rank(out["results"], ids[q.target]))
    n = len(ranks)
    return {
        "hit@1": round(sum(1 for r in ranks if r == 1) / n, 3),
        "hit@5": round(sum(1 for r in ranks if r and r <= 5) / n, 3),
        "mrr": round(sum(1 / r for r in ranks if r) / n, 3),
    }


def run_temporal(
    seed: int = 11, weights: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0), home: Path | None = None
) -> dict[str, Any]:
    from mnemonist.daemon import open_memory

    memories, queries = build(seed)
    home = home or Path(tempfile.mkdtemp(prefix="mnemonist-temporal-"))
    with open_memory(home) as daemon:
        svc = daemon.service
        ids = [
            svc.memories.remember(RememberRequest(content=c, occurred_at=format_ts(t)))["id"]
            for _topic, c, t in memories
        ]
        svc.flush()
        search = svc.core.config.search
        default_weight = search.time_weight
        rows: dict[str, dict[str, float]] = {}
        search.time_aware = False
        rows["time-aware off"] = evaluate(svc, queries, ids)
        search.time_aware = True
        for w in weights:
            search.time_weight = w
            rows[f"prefer, weight {w}"] = evaluate(svc, queries, ids)
        search.time_weight = default_weight
        rows["filter (time_filter: true)"] = evaluate(svc, queries, ids, filter_=True)
    return {"memories": len(memories), "queries": len(queries), "now": format_ts(NOW),
            "seed": seed, "results": rows}


def markdown(report: dict[str, Any]) -> str:
    lines = [f"{report['queries']} queries over {report['memories']} dated memories "
             f"(now = {report['now']}, seed {report['seed']})", "",
             "| recall mode | Hit@1 | Hit@5 | MRR |", "|---|---|---|---|"]
    for name, m in report["results"].items():
        lines.append(f"| {name} | {m['hit@1']:.3f} | {m['hit@5']:.3f} | {m['mrr']:.3f} |")
    return "\n".join(lines)
