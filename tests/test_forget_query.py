"""forget by query selects only memories that clearly match (every word of the query in the
memory's own text, and a minimum score), shows each candidate's score and matched words, and
executes only with the preview's token, over HTTP, the CLI and MCP.

The two reported cases: "old staging notes" also took the live, correct staging note, and MCP
`memory_forget {"query": "Bob vacation"}` also took a memory about Alice. The labelled set
below is the measurement behind the defaults (docs/decisions.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import LiveDaemon, run_daemon
from mcp_flow import call
from mnemonist.cli.main import cli

pytestmark = pytest.mark.both_stores

MEMORIES = {
    "st1": "Old staging notes: staging ran on the db-old-3 box and deploys used fabric",
    "st2": "Old staging notes: the staging password was rotated by hand every quarter",
    "st3": "Staging now runs on the Kubernetes cluster in eu-west, deployed by Argo CD",
    "st4": "The staging database is refreshed from a production snapshot every night",
    "bob1": "Bob is on vacation from 3 to 14 August; Carol covers his code reviews",
    "ali1": "Alice is taking a week of vacation in September",
    "ali2": "Alice prefers dark mode in every editor",
    "ali3": "Alice owns the billing service and its on-call rotation",
    "bob2": "Bob wrote the first version of the search indexer",
    "sn1": "Our snorkel trip is booked for the second week of July",
    "sn2": "The snorkel gear is kept in locker three",
    "trip": "The team offsite trip to Lisbon is planned for October",
    "cof1": "The coffee machine on the third floor is broken again",
    "cof2": "Coffee machine descaling happens on the first Monday of the month",
    "tea": "Zoe prefers green tea in the afternoon",
    "py1": "The deprecated Python 2 scripts in tools/legacy can be deleted after the migration",
    "py2": "We use Python 3.12 for every new service",
    "fr1": "There is a deploy freeze every Friday after 3pm",
    "fr2": "Deploys happen on Tuesdays and Thursdays",
    "vpn1": "The old VPN config used OpenVPN with certificates from the 2021 CA",
    "vpn2": "The VPN now uses WireGuard; keys are in the team vault",
    "mtg1": "Weekly planning meeting moved to Wednesday 10:00",
    "mtg2": "The retro meeting is every second Friday",
    "lap1": "Marco's laptop is a 2019 MacBook Pro that needs replacing",
    "lap2": "New laptops are ordered through the IT portal",
}
#: query -> what a person means by it
INTENDED = {
    "old staging notes": {"st1", "st2"},
    "Bob vacation": {"bob1"},
    "snorkel trip": {"sn1"},
    "snorkel": {"sn1", "sn2"},
    "coffee machine": {"cof1", "cof2"},
    "deprecated python 2 scripts": {"py1"},
    "deploy freeze": {"fr1"},
    "old VPN config": {"vpn1"},
    "Marco laptop": {"lap1"},
    "retro meeting": {"mtg2"},
    "Alice vacation": {"ali1"},
    "broken coffee machine": {"cof1"},
}


@pytest.fixture(scope="module")
def team(daemon_store: str, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[tuple[LiveDaemon, dict[str, str]]]:
    """A daemon holding the labelled memories (project "team"); tests work on copies in their
    own projects when they delete."""
    with run_daemon(tmp_path_factory.mktemp("forget-query")) as live:
        ids = {k: live.remember(v, project="team")["id"] for k, v in MEMORIES.items()}
        live.flush()
        yield live, ids


def seed(live: LiveDaemon, project: str, *keys: str) -> dict[str, str]:
    out = {k: live.remember(MEMORIES[k], project=project)["id"] for k in keys}
    live.flush()
    return out


def forget(live: LiveDaemon, **body: Any) -> Any:
    return live.http.post("/api/memory/forget", json=body)


def is_deleted(live: LiveDaemon, mid: str) -> bool:
    return live.http.get(f"/api/memory/{mid}").json()["is_deleted"]


def test_the_labelled_set_is_selected_exactly(team) -> None:
    """Every intended memory, nothing else (the old selection took 52 extra memories for these
    12 queries; one shared word instead of all words still took 7)."""
    live, ids = team
    names = {v: k for k, v in ids.items()}
    extra, missed = {}, {}
    for query, want in INTENDED.items():
        body = forget(live, query=query, project="team", limit=50).json()
        got = {names[c["id"]] for c in body["candidates"]}
        if got - want:
            extra[query] = got - want
        if want - got:
            missed[query] = want - got
    assert extra == {} and missed == {}


def test_old_staging_notes_spares_the_live_staging_note(team) -> None:
    live, _ = team
    ids = seed(live, "staging", "st1", "st2", "st3", "st4")
    preview = forget(live, query="old staging notes", project="staging").json()
    assert {c["id"] for c in preview["candidates"]} == {ids["st1"], ids["st2"]}
    for cand in preview["candidates"]:
        assert cand["matched_terms"] == ["old", "staging", "notes"]
        assert 0.25 <= cand["score"] <= 1.0
    assert preview["query_terms"] == ["old", "staging", "notes"]
    excluded = {e["id"]: e for e in preview["excluded"]}
    assert excluded[ids["st3"]]["matched_terms"] == ["staging"]
    assert "1 of the query's 3 words" in excluded[ids["st3"]]["why"]
    # two candidates, far below the threshold (25): a query still needs the token
    assert preview["requiresConfirm"] is True
    resp = forget(live, query="old staging notes", project="staging", mode="execute",
                  reason="staging was retired")
    assert resp.status_code == 400 and resp.json()["error"] == "confirm_token_required"
    assert not any(is_deleted(live, m) for m in ids.values())
    resp = forget(live, query="old staging notes", project="staging", mode="execute",
                  reason="staging was retired", confirm_token=preview["confirmToken"])
    assert resp.status_code == 200, resp.text
    assert set(resp.json()["ids"]) == {ids["st1"], ids["st2"]}
    assert not is_deleted(live, ids["st3"]) and not is_deleted(live, ids["st4"])


def test_a_token_is_bound_to_the_selection_and_to_purge(team) -> None:
    live, _ = team
    ids = seed(live, "coffee", "cof1", "cof2", "tea")
    token = forget(live, query="coffee machine", project="coffee").json()["confirmToken"]
    # the soft-delete preview's token does not purge
    resp = forget(live, query="coffee machine", project="coffee", mode="execute", reason="x",
                  force=True, confirm_token=token)
    assert resp.status_code == 409 and resp.json()["error"] == "confirm_token_invalid"
    # a new match since the preview: the selection changed
    extra = live.remember("The coffee machine needs new filters", project="coffee")["id"]
    live.flush()
    resp = forget(live, query="coffee machine", project="coffee", mode="execute", reason="x",
                  confirm_token=token)
    assert resp.status_code == 409
    assert not any(is_deleted(live, m) for m in [*ids.values(), extra])
    preview = forget(live, query="coffee machine", project="coffee", force=True).json()
    assert preview["purge"] is True and preview["count"] == 3
    resp = forget(live, query="coffee machine", project="coffee", mode="execute", reason="x",
                  force=True, confirm_token=preview["confirmToken"])
    assert resp.status_code == 200 and resp.json()["hard"] is True
    assert live.http.get(f"/api/memory/{ids['cof1']}").status_code == 404
    assert not is_deleted(live, ids["tea"])


def test_cli_forget_query_yes_previews_and_executes_with_the_token(team) -> None:
    live, _ = team
    ids = seed(live, "cli-staging", "st1", "st2", "st3")
    out = CliRunner().invoke(cli, [
        "--url", live.url, "forget", "--query", "old staging notes", "--project", "cli-staging",
        "--reason", "staging was retired", "--yes"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "forgot 2 memories" in out.output
    assert "[old, staging, notes]" in out.output  # the preview's matched words
    assert "not selected" in out.output and ids["st3"][:8] in out.output
    assert is_deleted(live, ids["st1"]) and is_deleted(live, ids["st2"])
    assert not is_deleted(live, ids["st3"])


def test_mcp_forget_bob_vacation_leaves_alice_alone(team) -> None:
    live, _ = team
    ids = seed(live, "mcp-people", "bob1", "bob2", "ali1", "ali2", "ali3")

    async def main() -> None:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            streamable_http_client(f"{live.url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            args = {"query": "Bob vacation", "project": "mcp-people"}
            preview = await call(session, "memory_forget", args)
            assert [c["id"] for c in preview["candidates"]] == [ids["bob1"]]
            assert preview["candidates"][0]["matched_terms"] == ["bob", "vacation"]
            assert preview["requiresConfirm"] is True
            refused = await session.call_tool("memory_forget", {
                **args, "mode": "execute", "reason": "back from vacation"})
            assert refused.is_error and "confirm_token" in refused.content[0].text
            done = await call(session, "memory_forget", {
                **args, "mode": "execute", "reason": "back from vacation",
                "confirm_token": preview["confirmToken"]})
            assert done["ids"] == [ids["bob1"]]

    anyio.run(main)
    assert is_deleted(live, ids["bob1"])
    assert not any(is_deleted(live, ids[k]) for k in ("bob2", "ali1", "ali2", "ali3"))


def test_forget_min_score_and_coverage_are_settings(tmp_path: Path) -> None:
    cfg = {"memory": {"forget_min_coverage": 0.5, "forget_min_score": 0.0}}
    with run_daemon(tmp_path, cfg) as live:
        ids = seed(live, "p", "bob1", "ali1", "tea")
        away = live.remember("Carol is away on holiday next week", project="p")["id"]
        live.flush()
        preview = forget(live, query="Bob vacation").json()
        assert preview["selection"] == {"min_score": 0.0, "min_coverage": 0.5}
        got = {c["id"] for c in preview["candidates"]}
        assert got == {ids["bob1"], ids["ali1"]}  # one of two words is enough now
        assert away not in got  # by meaning alone, never: no word of the query in it
        bad = live.http.post("/api/memory/forget", json={"query": "x", "limit": 0})
        assert bad.status_code == 400
