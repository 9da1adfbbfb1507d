"""The two injection defects, over a real daemon: session start never injects a superseded
memory, and the prompt hook finds the current project's memory however many better matches
other projects hold (the scope is a filter of the search itself, not applied afterwards)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_daemon

pytestmark = pytest.mark.both_stores

SERVICES = ("billing", "ledger", "search", "gateway", "notifier", "reports", "auth", "media")


def hook(live, event: str, body: dict) -> dict:
    resp = live.http.post(f"/api/hooks/{event}", json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_session_start_never_injects_superseded_memories(tmp_path: Path) -> None:
    with run_daemon(tmp_path / "home") as live:
        p = "acme-shop"
        old = live.remember("We decided to host acme-shop images on S3", project=p,
                            type="decision", key="image hosting")
        new = live.remember("We decided to host acme-shop images on Cloudflare R2", project=p,
                            type="decision", key="image hosting")
        assert new["superseded"] == old["id"]
        was = live.remember("The acme-shop checkout runs on Node 18", project=p, key="runtime")
        now = live.remember("The acme-shop checkout runs on Node 22", project=p, key="runtime")
        assert now["superseded"] == was["id"]
        # a superseded memory pinned afterwards (metadata may change) is still history
        pin = live.http.patch(f"/api/memory/{was['id']}", json={"pinned": True, "reason": "x"})
        assert pin.status_code == 200
        live.flush()
        out = hook(live, "session-start", {"session_id": "s-start", "project": p})
        assert new["id"] in out["memories"] and now["id"] in out["memories"]
        assert old["id"] not in out["memories"] and was["id"] not in out["memories"]
        assert "S3" not in out["context"] and "Node 18" not in out["context"]
        assert "Cloudflare R2" in out["context"]


def test_prompt_hook_finds_the_project_memory_behind_many_better_matches(tmp_path) -> None:
    """240 memories of other projects match the prompt better than the one memory of this
    project: more than the 20 the hook once drew, and more than the 200 it drew next. Scoped
    inside the search, each leg ranks within this project (and global memories) only."""
    with run_daemon(tmp_path / "home") as live:
        items = [
            {"content": f"The {svc} service {i} renews its Kubernetes ingress TLS certificate "
                        f"with cert-manager and Let's Encrypt (cluster {i % 7})",
             "project": f"other-{svc}"}
            for i, svc in ((n, SERVICES[n % len(SERVICES)]) for n in range(240))
        ]
        resp = live.http.post("/api/memory/import", json={"items": items})
        assert resp.status_code == 200 and resp.json()["created"] == 240, resp.text
        mine = live.remember("In acme-api the TLS certificate for the ingress is renewed by a "
                             "nightly certbot job", project="acme-api")
        live.flush()
        prompt = "How is the Kubernetes ingress TLS certificate renewed with cert-manager?"
        # what drawing 200 candidates and scoping afterwards saw: not this project's memory
        unscoped = live.recall(prompt, limit=200, min_score=0.0)
        assert unscoped["count"] > 20
        assert mine["id"] not in [r["id"] for r in unscoped["results"]]
        out = hook(live, "user-prompt-submit",
                   {"session_id": "s-prompt", "project": "acme-api", "prompt": prompt})
        assert out["memories"] and out["memories"][0] == mine["id"]
        assert "nightly certbot job" in out["context"]
        injected = live.http.get("/api/memories", params={"limit": 1000}).json()["memories"]
        projects = {m["id"]: m["project"] for m in injected}
        assert all(projects[i] in (None, "acme-api") for i in out["memories"])
