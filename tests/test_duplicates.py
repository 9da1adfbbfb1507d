"""The near-duplicate sweep (docs/lifecycles.md, "Near-duplicates"): pairs that embed alike
but say different things are never flagged; real paraphrases are, for a person to dismiss or
resolve; nothing merges on its own. Real model, real SQLite, real HTTP."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from mnemonist.cli.main import cli
from mnemonist.model.memory import utcnow
from mnemonist.store import duplicates
from mnemonist.text.near_duplicate import conflict

pytestmark = pytest.mark.both_stores

TABS = ("The user prefers tabs over spaces", "The user prefers spaces over tabs")
VERSIONS = ("The project uses Python 3.11", "The project uses Python 3.12")
NEGATION = ("Always run the linter before committing", "Never run the linter before committing")
PARAPHRASE = ("Maria is the tech lead of the payments team",
              "The payments team's tech lead is Maria")
PARAPHRASE_2 = ("The staging server is staging.example.com",
                "staging.example.com is the staging server")


def cosine(live, a: str, b: str) -> float:
    va, vb = live.service.core.provider.embed([a, b])
    return float(va @ vb)


@pytest.mark.parametrize("pair", [TABS, VERSIONS, NEGATION])
def test_opposite_facts_embed_alike_and_a_guard_keeps_them_apart(live, pair):
    # above the threshold: the embedding alone would call them duplicates
    assert cosine(live, *pair) >= live.service.core.config.memory.pipeline_v2.repair \
        .dedup_semantic_threshold
    assert conflict(*pair) is not None


@pytest.mark.parametrize("a, b, why", [
    ("Alice owns the billing service", "Bob owns the billing service", "different names"),
    ("The deploy script lives in tools/deploy.sh", "The deploy script lives in scripts/deploy.sh",
     "different names"),
    ("Alice reports to Bob", "Bob reports to Alice", "same words"),
    ("We migrated from MySQL to PostgreSQL", "We migrated from PostgreSQL to MySQL",
     "same words"),
    ("The user prefers tabs over spaces for indentation",
     "For indentation the user prefers spaces over tabs", "same words"),
    ("Enable caching in production", "Disable caching in production", "opposite words"),
    ("The user likes dark mode", "The user doesn't like dark mode", "negation"),
    ("Production runs PostgreSQL 16", "Production runs PostgreSQL 15", "different numbers"),
])
def test_each_guard_names_what_differs(a, b, why):
    assert (conflict(a, b) or "").startswith(why)
    assert (conflict(b, a) or "").startswith(why)


@pytest.mark.parametrize("a, b", [
    PARAPHRASE, PARAPHRASE_2,
    ("The deploy script lives in tools/deploy.sh",
     "tools/deploy.sh is where the deployment script is kept"),
    ("Deploys happen on Tuesdays", "We deploy every Tuesday"),
    ("The database backups run nightly at 2am", "Database backups are taken every night at 2am"),
])
def test_paraphrases_pass_every_guard(a, b):
    assert conflict(a, b) is None


def sweep_all(live) -> list[dict]:
    runs = []
    while True:
        resp = live.http.post("/api/repair/dedup-sweep")
        assert resp.status_code == 200, resp.text
        runs.append(resp.json()["result"])
        if runs[-1]["done"]:
            return runs


def open_pairs(live, ids: set[str]) -> dict[frozenset, dict]:
    got = live.http.get("/api/repair/duplicates", params={"limit": 500}).json()
    return {frozenset((d["a"]["id"], d["b"]["id"])): d for d in got["duplicates"]
            if {d["a"]["id"], d["b"]["id"]} <= ids}


def remember_pairs(live, project: str, pairs) -> list[tuple[str, str]]:
    out = []
    for a, b in pairs:
        out.append((live.remember(a, project=project)["id"],
                    live.remember(b, project=project)["id"]))
    live.flush()
    return out


def test_the_sweep_flags_the_paraphrase_and_never_the_opposites(live):
    made = remember_pairs(live, "dup-sweep", [TABS, VERSIONS, NEGATION, PARAPHRASE])
    runs = sweep_all(live)
    ids = {i for pair in made for i in pair}
    flagged = open_pairs(live, ids)
    assert set(flagged) == {frozenset(made[3])}
    state = live.http.get("/api/diagnostics").json()["duplicates"]
    assert state["open"] >= 1 and state["not_swept_yet"] == 0
    pair = flagged[frozenset(made[3])]
    assert pair["similarity"] >= 0.92 and pair["status"] == "open"
    assert pair["a"]["id"] == made[3][0]  # a: the older memory
    guarded = {}
    for run in runs:
        for kind, n in run["guarded"].items():
            guarded[kind] = guarded.get(kind, 0) + n
    assert guarded.get("different numbers", 0) >= 1
    assert guarded.get("negation in one only", 0) >= 1
    assert guarded.get("same words in an order that changes the meaning", 0) >= 1
    # nothing was merged: every memory is still live and current
    for i in ids:
        m = live.http.get(f"/api/memory/{i}").json()
        assert not m["is_deleted"] and m["superseded_by"] is None


def test_a_pair_in_another_project_is_not_a_duplicate(live):
    a = live.remember(PARAPHRASE_2[0], project="dup-p1")["id"]
    b = live.remember(PARAPHRASE_2[1], project="dup-p2")["id"]
    live.flush()
    sweep_all(live)
    assert open_pairs(live, {a, b}) == {}


def test_a_dismissed_pair_is_not_flagged_again(live):
    [(a, b)] = remember_pairs(live, "dup-dismiss", [PARAPHRASE_2])
    sweep_all(live)
    [pair] = open_pairs(live, {a, b}).values()
    resp = live.http.post(f"/api/repair/duplicates/{pair['id'][:8]}/dismiss",
                          json={"reason": "both wanted"})
    assert resp.status_code == 200 and resp.json()["status"] == "dismissed"
    again = live.http.post(f"/api/repair/duplicates/{pair['id']}/dismiss")
    assert again.status_code == 409 and again.json()["error"] == "not_open"
    with live.service.core.db.write_tx() as w:  # sweep everything again from the start
        duplicates.set_cursor(w, 0, utcnow())
    sweep_all(live)
    assert open_pairs(live, {a, b}) == {}
    dismissed = live.http.get("/api/repair/duplicates", params={"status": "dismissed",
                                                                "limit": 500}).json()
    assert pair["id"] in {d["id"] for d in dismissed["duplicates"]}


def test_resolving_supersedes_one_with_the_other_and_history_shows_it(live):
    [(a, b)] = remember_pairs(live, "dup-resolve", [PARAPHRASE])
    sweep_all(live)
    [pair] = open_pairs(live, {a, b}).values()
    url = f"/api/repair/duplicates/{pair['id']}/resolve"
    bad = live.http.post(url, json={"keep": "c", "reason": "tidy"})
    assert bad.status_code == 400 and "keep must be" in bad.json()["message"]
    assert live.http.post(url, json={"keep": "a"}).status_code == 400  # no reason
    resp = live.http.post(url, json={"keep": "a", "reason": "same fact twice"})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"id": pair["id"], "status": "resolved", "kept": a, "superseded": b}
    dropped = live.http.get(f"/api/memory/{b}").json()
    assert dropped["superseded_by"] == a and not dropped["is_deleted"]
    events = live.http.get(f"/api/memory/{b}/history").json()["events"]
    [event] = [e for e in events if e["event"] == "superseded"]
    assert event["reason"] == "same fact twice"
    assert event["metadata"]["lifecycle"] == "duplicate"
    assert event["metadata"]["supersededBy"] == a
    found = live.recall("who leads the payments team?", project="dup-resolve")
    assert [r["id"] for r in found["results"]] == [a]
    assert live.http.post(url, json={"keep": "a", "reason": "again"}).status_code == 409
    resolved = live.http.get("/api/repair/duplicates", params={"status": "resolved",
                                                               "limit": 500}).json()
    assert {d["id"]: d["kept"] for d in resolved["duplicates"]}[pair["id"]] == a
    undo = live.http.post(f"/api/memory/{b}/restore", json={"reason": "merged by mistake"})
    assert undo.status_code == 200, undo.text  # a merge is undone like any supersession
    assert live.http.get(f"/api/memory/{b}").json()["superseded_by"] is None


def test_review_requests_are_checked(live):
    assert live.http.post("/api/repair/duplicates/nope/dismiss").status_code == 404
    assert live.http.get("/api/repair/duplicates",
                         params={"status": "merged"}).status_code in (400, 422)
    resp = live.http.post("/api/repair/duplicates/nope/resolve",
                          json={"keep": "a", "reason": "x", "extra": 1})
    assert resp.status_code in (400, 422)


def test_the_maintenance_cycle_sweeps_within_its_cooldown(live):
    worker = live.daemon.maintenance
    first = worker.tick("execute")["scheduled"]
    assert "result" in first and "examined" in first["result"]
    second = worker.tick("execute")["scheduled"]
    assert second["skipped"].startswith("cooldown")
    assert "scheduled" not in worker.tick("observe")  # observe mode changes nothing


def test_the_cli_lists_and_merges(live):
    [(a, b)] = remember_pairs(live, "dup-cli", [PARAPHRASE_2])
    runner = CliRunner()
    out = runner.invoke(cli, ["duplicates", "sweep", "--url", live.url])
    assert out.exit_code == 0 and "examined" in out.output
    sweep_all(live)
    [pair] = open_pairs(live, {a, b}).values()
    listed = runner.invoke(cli, ["duplicates", "list", "--limit", "500", "--url", live.url])
    assert listed.exit_code == 0 and pair["id"][:8] in listed.output
    merged = runner.invoke(cli, ["duplicates", "merge", pair["id"][:8], "--keep", "b",
                                 "--reason", "one is enough", "--url", live.url])
    assert merged.exit_code == 0, merged.output
    assert f"kept {b}" in merged.output
    again = runner.invoke(cli, ["duplicates", "dismiss", pair["id"][:8], "--url", live.url])
    assert again.exit_code == 1 and "already resolved" in again.output


def test_the_guards_take_linear_time_on_pathological_text():
    # these took cubic / quadratic time in a first version (a sweep could hang on one pair)
    assert conflict("_" * 20000, "_" * 20000 + " x") is None
    assert conflict("to " * 20000, "to " * 20000 + "x") is None
    assert conflict("1." * 20000, "2." * 20000).startswith("different numbers")
