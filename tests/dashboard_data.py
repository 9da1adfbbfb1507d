"""Real data for the dashboard tests, written through the daemon's own HTTP API and hooks:
memories that name entities, one edited (so it has history), a superseded pair under one key,
a memory whose text is markup, and an agent session (start, prompt, checkpoint, end with its
transcript)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from conftest import LiveDaemon

PROJECT = "shop-api"
SESSION = "sess-dash-1"
HOSTILE = ('<script>document.title="pwned"</script><img src=x onerror="document.title='
           "'pwned'\"> Mallory pasted markup into a memory")

FACTS = [
    "The shop API stores orders in PostgreSQL 16, run by Alice Jones in Frankfurt",
    "Alice Jones tunes PostgreSQL autovacuum every quarter with Grafana dashboards",
    "Bob Smith owns the Redis cache in front of the shop API checkout",
    "Bob Smith and Carol White moved the Redis cluster to Kubernetes last spring",
    "Carol White deploys the shop API with Kubernetes and Helm on Tuesdays",
    "Dave Brown writes the Terraform modules for the Stripe webhooks",
    "Dave Brown rotates the Stripe keys with Vault every month",
]


@dataclass
class Seeded:
    ids: dict[str, str] = field(default_factory=dict)


def transcript_lines(cwd: str) -> str:
    said = [
        ("user", "Which database does the shop API use for orders?"),
        ("assistant", "The shop API stores orders in PostgreSQL 16; Alice Jones runs it."),
        ("user", "Add an index on orders.created_at then."),
        ("assistant", "Done: a migration adds the index on orders.created_at."),
    ]
    lines = []
    for n, (role, text) in enumerate(said):
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        lines.append({"type": role, "uuid": f"{SESSION}-{n}", "sessionId": SESSION, "cwd": cwd,
                      "timestamp": f"2025-10-01T10:{n:02d}:00.000Z",
                      "message": {"role": role, "content": content}})
    return "".join(json.dumps(x) + "\n" for x in lines)


def post(live: LiveDaemon, path: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = live.http.post(path, json=body)
    assert resp.status_code < 300, resp.text
    return resp.json()


def seed(live: LiveDaemon, cwd: str) -> Seeded:
    out = Seeded()
    for n, text in enumerate(FACTS):
        out.ids[f"fact{n}"] = live.remember(text, project=PROJECT)["id"]
    edited = live.remember("Checkout retries failed card payments twice", project=PROJECT)
    post(live, "/api/memory/modify", {
        "patches": [{"id": edited["id"],
                     "content": "Checkout retries failed card payments three times"}],
        "reason": "the retry policy changed"})
    out.ids["edited"] = edited["id"]
    old = live.remember("The staging database runs PostgreSQL 15", project=PROJECT,
                        key="staging database")
    new = live.remember("The staging database runs PostgreSQL 16", project=PROJECT,
                        key="staging database")
    out.ids["old"], out.ids["new"] = old["id"], new["id"]
    out.ids["hostile"] = live.remember(HOSTILE, project="web")["id"]
    out.ids["global"] = live.remember("The user prefers tabs over spaces")["id"]  # no project
    out.ids["flow"] = live.remember(
        "The nightly invoice export writes CSV files to the acme-ledger bucket",
        project=PROJECT)["id"]
    live.flush()
    hook = {"session_id": SESSION, "cwd": cwd, "harness": "claude-code", "project": PROJECT}
    post(live, "/api/hooks/session-start", {**hook, "source": "startup"})
    post(live, "/api/hooks/user-prompt-submit",
         {**hook, "prompt": "Which database does the shop API use for orders, PostgreSQL?"})
    post(live, "/api/checkpoints", {"session_key": SESSION, "project": PROJECT,
                                    "note": "Working on the orders index in PostgreSQL"})
    post(live, "/api/hooks/session-end", {**hook, "reason": "prompt_input_exit",
                                          "transcript": transcript_lines(cwd)})
    assert live.service.sessions.wait_sessions(120), "the session was not read"
    live.flush()
    return out
