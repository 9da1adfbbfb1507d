"""A constructed check of corroboration as a ranking signal (LoCoMo has one writer, so it
cannot see it). Both ways it can go, in one memory:

- **agreement**: for each service, one statement stored by 2–4 agents and a near-identical
  conflicting one stored by one agent ("deploys from the main branch" / "... release
  branch"); the question matches both equally. Measured: how often the corroborated
  statement ranks above the lone one (50% is a coin toss).
- **specific**: for each service, a generic statement stored by 5 agents and the specific one
  that answers the question, stored by one agent. Measured: how often the specific one still
  ranks first (the boost must not bury the answer under popular memories).

Run over several `search.corroboration_weight` values on the same memories.
"""

from __future__ import annotations

import random
import tempfile
from typing import Any

from mnemonist.model.requests import RecallRequest, RememberRequest

SERVICES = [
    "billing", "checkout", "search", "auth", "inventory", "shipping", "notifications",
    "reporting", "catalog", "pricing", "payments", "ledger", "recommendations", "reviews",
    "analytics", "gateway", "scheduler", "exports", "imports", "media", "profiles", "sessions",
    "audit", "metrics", "webhooks", "invoicing", "refunds", "loyalty", "coupons", "returns",
]
#: (statement, question, the two values that conflict)
ASPECTS = [
    ("The {s} service deploys from the {v} branch", "Which branch does the {s} service deploy "
     "from?", ("main", "release")),
    ("The {s} service stores its data in {v}", "Which database does the {s} service use?",
     ("PostgreSQL", "MySQL")),
    ("The {v} team is on call for the {s} service", "Which team is on call for the {s} "
     "service?", ("platform", "payments")),
    ("The {s} service sends its logs to {v}", "Where does the {s} service send its logs?",
     ("Loki", "Elasticsearch")),
]
GENERIC = "The {s} service is maintained by the {t} team and is considered stable"
SPECIFIC = ("The {s} service rotates its API keys every {n} days",
            "How often does the {s} service rotate its API keys?")
TEAMS = ["core", "growth", "data", "infra", "commerce"]
WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)


def _remember(service: Any, content: str, agents: list[str]) -> str:
    first = None
    for agent in agents:
        out = service.memories.remember(RememberRequest(content=content, who=agent))
        first = first or out["id"]
    assert first is not None
    return first


def build(service: Any, seed: int) -> dict[str, list[dict[str, Any]]]:
    """Store the memories; the questions with the ids they are about."""
    rng = random.Random(seed)
    agreement, specific = [], []
    for i, name in enumerate(SERVICES):
        statement, question, values = ASPECTS[i % len(ASPECTS)]
        truth, lone = rng.sample(values, 2)
        k = rng.choice((2, 3, 4))
        writes = [(statement.format(s=name, v=truth), [f"agent-{j}" for j in range(k)]),
                  (statement.format(s=name, v=lone), [f"agent-{k}"])]
        rng.shuffle(writes)  # which one is newer must not decide
        ids = [_remember(service, text, agents) for text, agents in writes]
        by_text = dict(zip([w[0] for w in writes], ids, strict=True))
        agreement.append({"question": question.format(s=name),
                          "corroborated": by_text[statement.format(s=name, v=truth)],
                          "lone": by_text[statement.format(s=name, v=lone)]})
        generic = _remember(service, GENERIC.format(s=name, t=rng.choice(TEAMS)),
                            [f"agent-{j}" for j in range(5)])
        answer = _remember(service, SPECIFIC[0].format(s=name, n=rng.choice((30, 60, 90))),
                           ["agent-9"])
        specific.append({"question": SPECIFIC[1].format(s=name), "answer": answer,
                         "generic": generic})
    return {"agreement": agreement, "specific": specific}


def _ranks(service: Any, question: str) -> dict[str, int]:
    out = service.reads.recall(RecallRequest(query=question, limit=20, min_score=0.0))
    return {r["id"]: n for n, r in enumerate(out["results"])}


def measure(service: Any, cases: dict[str, list[dict[str, Any]]], weight: float
            ) -> dict[str, float]:
    service.core.config.search.corroboration_weight = weight
    wins = 0
    for case in cases["agreement"]:
        ranks = _ranks(service, case["question"])
        wins += ranks.get(case["corroborated"], 99) < ranks.get(case["lone"], 99)
    first = 0
    for case in cases["specific"]:
        first += _ranks(service, case["question"]).get(case["answer"]) == 0
    return {"weight": weight,
            "agreement_win": round(wins / len(cases["agreement"]), 3),
            "specific_at_1": round(first / len(cases["specific"]), 3)}


def run_corroboration(seed: int = 5, weights: tuple[float, ...] = WEIGHTS) -> dict[str, Any]:
    from mnemonist.daemon import open_memory

    with tempfile.TemporaryDirectory(prefix="mnemonist-corroboration-") as home, \
            open_memory(home) as daemon:
        service = daemon.service
        cases = build(service, seed)
        service.flush()
        rows = [measure(service, cases, w) for w in weights]
    return {"seed": seed, "services": len(SERVICES), "rows": rows}


def markdown(report: dict[str, Any]) -> str:
    lines = [f"corroboration check: {report['services']} services, seed {report['seed']}", "",
             "| corroboration_weight | agreement: corroborated above lone | specific @1 |",
             "|---:|---:|---:|"]
    for r in report["rows"]:
        lines.append(f"| {r['weight']} | {r['agreement_win']:.3f} | {r['specific_at_1']:.3f} |")
    return "\n".join(lines)
